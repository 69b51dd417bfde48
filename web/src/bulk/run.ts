/**
 * A bulk run from the web page: the SDK's journaled posting engine (sdk/src/posting/journal, the CLI's and the
 * server's) over the browser's journal (IndexedDB, Web Locks) and the browser wallet (EIP-1193). The run is named after
 * the file's content and the wallet: the same file dropped again after a reload or a closed tab resumes it, and the
 * engine checks every row the journal claims against the chain and the API before paying anything.
 */
import { sha256, toUtf8Bytes } from "ethers";
import { MarketClient } from "../../../sdk/src/client";
import type { Eip1193Provider } from "../../../sdk/src/injected";
import { browserJournal, markBrowserRunFinished, openJournalDb, type IDBDatabase } from "../../../sdk/src/posting/journal/browser";
import { outcomesCsv, RowStatus, type RowOutcome } from "../../../sdk/src/posting/journal/outcomes";
import type { Reporter } from "../../../sdk/src/posting/journal/ports";
import { finishRows, PENDING_FUNDING_WAIT_MS, sortRows, openRun } from "../../../sdk/src/posting/journal/run";
import { postFresh } from "../../../sdk/src/posting/journal/post";
import type { RunRow } from "../../../sdk/src/posting/journal/rows";
import type { Run } from "../../../sdk/src/posting/journal/types";
import { settlementTerms } from "../sdk-client";

export { RowStatus, settlementTerms, type RowOutcome };

/** The name of a run: the file's content and the wallet (the same file by the same wallet resumes it). */
export function runName(text: string, wallet: string): string {
  return `${sha256(toUtf8Bytes(text)).slice(2, 34)}:${wallet.toLowerCase()}`;
}

let opening: Promise<IDBDatabase> | undefined;
/** The journal database of this origin, opened once per page. */
export const journalDb = () => (opening ??= openJournalDb());

export interface BulkRunOptions {
  name: string;
  text: string;
  rows: RunRow[];
  /** The signed-in session (the API acts as its wallet) and the wallet's address. */
  session: { token: string; address: string };
  ethereum: Eip1193Provider;
  chunk?: number;
  onNote(line: string): void;
  onProgress(done: number, total: number): void;
  /** Each time a row's outcome changes: every row's outcome, in file order. */
  onOutcomes(outcomes: ReadonlyArray<{ row: RunRow; outcome: RowOutcome }>): void;
}

export interface BulkRunResult {
  outcomes: Array<{ row: RunRow; outcome: RowOutcome }>;
  /** The CLI's results file (`line,status,escrow,task_id,task_hash,tx_hash,error`). */
  csv: string;
  /** True when every row is posted or can never be (nothing left to finish). */
  complete: boolean;
}

/** Posts the checked rows through the engine, resuming the file's earlier run if this browser holds one. */
export async function runBulk(options: BulkRunOptions): Promise<BulkRunResult> {
  const { settlement, custodyPublicKey } = await settlementTerms();
  const origin = window.location.origin;
  const client = new MarketClient({
    apiKey: "",
    sessionToken: options.session.token,
    baseUrl: origin,
    // The page is the service's own: it trusts the escrow the service names (the CLI pins it from its environment).
    escrows: { [settlement.chain]: settlement.escrowAddress },
    injected: { provider: options.ethereum },
  });
  let total = 0;
  const reporter: Reporter = {
    note: options.onNote,
    progress(count) {
      total = count;
      options.onProgress(0, count);
      return { update: (done) => options.onProgress(done, total), end() {} };
    },
  };
  const name = runName(options.text, options.session.address);
  const db = await journalDb();
  const journal = browserJournal({
    run: name,
    db,
    info: { file: options.name, rows: options.rows.length, wallet: options.session.address, startedAt: new Date().toISOString() },
  });
  // The outcomes are shown from the run once it is open (openRun shows a resumed run's at once: not yet then).
  const opened: { run?: Run } = {};
  const snapshot = (from: Run) => options.rows.map((row) => ({ row, outcome: from.results.get(row) }));
  const run = await openRun({
    file: options.name,
    rows: options.rows,
    client,
    api: origin,
    journal,
    reporter,
    results: {
      name: "the results",
      write: () => opened.run && options.onOutcomes(snapshot(opened.run)),
      exists: () => false,
    },
  });
  opened.run = run;
  options.onOutcomes(snapshot(run));
  try {
    const sorted = await sortRows(run, { waitMs: PENDING_FUNDING_WAIT_MS });
    const progress = reporter.progress(sorted.toFinish.length + sorted.fresh.length, "rows");
    const done = { count: 0 };
    const finished = await finishRows(run, sorted.toFinish, progress, done);
    if (finished && sorted.fresh.length > 0) {
      await postFresh(
        run,
        sorted.fresh,
        { ...(options.chunk ? { chunk: options.chunk } : {}), ...(custodyPublicKey ? { custodyPublicKey } : {}) },
        progress,
        done,
        {},
      );
    }
    progress.end();
    run.results.flush();
    const outcomes = snapshot(run);
    options.onOutcomes(outcomes);
    const left = outcomes.filter(({ outcome }) => outcome.status === RowStatus.notStarted || outcome.status === RowStatus.unlisted);
    if (left.length === 0) await markBrowserRunFinished(db, name);
    return { outcomes, csv: outcomesCsv(options.rows, (row) => run.results.get(row)), complete: left.length === 0 };
  } finally {
    await run.close();
  }
}
