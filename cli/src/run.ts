/**
 * A run over a task file, shared by `post-tasks` and `finish-posts`: the checked rows, the client and wallet, the
 * journal (locked, bound to the chain, escrow, wallet and API) and the results file; sorting the rows by what earlier
 * runs did, every claim of the journal checked against the chain and the API first; and listing the rows an earlier
 * run paid for but did not list, without paying again.
 */
import { existsSync, mkdirSync } from "node:fs";
import path from "node:path";
import { MarketClient } from "../../sdk/src/client";
import { ApiError, clientError } from "../../sdk/src/errors";
import type { ChainWallet } from "../../sdk/src/chain";
import { clientOptions, type CliConfig } from "./config";
import {
  bindingMismatch,
  FINAL_CODES,
  journalPathFor,
  openJournal,
  type Attempt,
  type JournalBinding,
  type JournalWriter,
  type RowJournal,
} from "./journal";
import { checkJournalOwner, reconcile } from "./reconcile";
import { bindingOf, checkClaims } from "./claims";
import { createResultsFile, RowStatus, type ResultsFile, type RowOutcome } from "./results";
import { openFundedIndex, type FundedIndex } from "./funded-index";
import { loadTaskFile, type FileRow } from "./task-file";
import type { Progress, Terminal } from "./terminal";

/** How long a rerun waits for a funding transaction a killed run left pending before it gives up for now. */
export const PENDING_FUNDING_WAIT_MS = 5 * 60_000;

export interface Run {
  file: string;
  rows: FileRow[];
  client: MarketClient;
  chain: ChainWallet;
  binding: JournalBinding;
  journal: JournalWriter;
  results: ResultsFile;
  /** Rows this wallet funded from any task file (a copied file pays nothing twice unknowingly). */
  funded: FundedIndex;
  /** Keys of rows the journal says were posted, paid on chain, that the service does not list (listed again). */
  notListed: ReadonlySet<string>;
  terminal: Terminal;
  close(): void;
}

export function resultsPathFor(file: string, results?: string): string {
  return results ?? `${file}.results.csv`;
}

/**
 * Opens a run: the file checked, the wallet connected, the journal locked and checked against this chain, escrow and
 * wallet (`JOURNAL_MISMATCH` otherwise: its fundings are not on this chain), the results file started from the
 * journal. `readOnly` (a dry run) locks and writes nothing.
 */
export async function openRun(
  file: string,
  resultsFlag: string | undefined,
  config: CliConfig,
  terminal: Terminal,
  options: { readOnly?: boolean } = {},
): Promise<Run> {
  const rows = loadTaskFile(file);
  const client = new MarketClient(clientOptions(config, { signs: true }));
  const chain = await client.wallet();
  const resultsPath = resultsPathFor(file, resultsFlag);
  let journal: JournalWriter | undefined;
  try {
    const binding = await bindingOf(chain, config.apiUrl.replace(/\/$/, ""));
    if (!options.readOnly) mkdirSync(path.dirname(path.resolve(resultsPath)), { recursive: true });
    journal = openJournal(journalPathFor(resultsPath), { bind: binding, ...(options.readOnly ? { readOnly: true } : {}) });
    checkJournalOwner(journal.rows.values(), chain);
    const recorded = journal.binding;
    const differs = recorded && bindingMismatch(recorded, binding);
    if (differs) {
      throw clientError(
        "JOURNAL_MISMATCH",
        `The journal ${journal.path} was written against another ${differs}: the fundings it records are not on this chain. Nothing was sent; move it and ${resultsPath} away (or give another --results path) to post ${file} afresh.`,
      );
    }
    if (recorded && recorded.api !== binding.api) {
      terminal.note(`note: the journal was written through ${recorded.api}; every row it claims is checked against ${binding.api}.`);
    }
    // Nothing the journal claims is believed, nor written to the results file, before the chain and the API confirm it.
    const notListed = await checkClaims({ file, rows, client, chain, journal, binding });
    const rowsJournal = journal.rows;
    const results = createResultsFile(resultsPath, rows, {
      readOnly: options.readOnly === true,
      writeNow: rowsJournal.size > 0 || existsSync(resultsPath),
      initial: (row) => {
        const journaled = rowsJournal.get(row.key);
        // Paid, and no longer listed by the service: paid and not listed until it is listed again.
        if (journaled?.posted && notListed.has(row.key)) return { status: RowStatus.unlisted, ...journaled.posted };
        return outcomeOf(journaled);
      },
    });
    const keys = new Set(rows.map((r) => r.key));
    const strays = [...journal.rows.entries()].filter(([key, j]) => !keys.has(key) && !j.posted && j.attempts.length > 0);
    if (strays.length > 0) {
      terminal.note(
        `note: the journal has ${strays.length} unfinished row(s) that no row of ${file} matches any more (edited or removed rows); ` +
          `if paid, they stay in escrow unlisted: ${strays.map(([, j]) => j.attempts.at(-1)!.taskHash).join(", ")}`,
      );
    }
    const opened = journal;
    return {
      file,
      rows,
      client,
      chain,
      binding,
      journal: opened,
      results,
      funded: openFundedIndex(config.stateDir, binding),
      notListed,
      terminal,
      close() {
        results.flush();
        opened.close();
        chain.provider.destroy();
      },
    };
  } catch (error) {
    journal?.close();
    chain.provider.destroy();
    throw error;
  }
}

/**
 * A row's outcome as its journal entries tell it (what the results file shows until the run checks the chain): posted;
 * paid and not listed (its funding seen mined); a funding that was being sent when a run stopped (the chain tells);
 * refused with nothing paid; or not started.
 */
export function outcomeOf(journaled: RowJournal | undefined): RowOutcome | undefined {
  if (!journaled) return undefined;
  if (journaled.posted) return { status: RowStatus.posted, ...journaled.posted };
  const last = journaled.attempts.at(-1);
  const refusal = journaled.lastError;
  const error = refusal ? { code: refusal.code, message: refusal.message } : undefined;
  if (last?.txHash) return { status: RowStatus.unlisted, taskHash: last.taskHash, txHash: last.txHash, ...(refusal?.paid ? { error } : {}) };
  if (refusal && !refusal.paid) return { status: RowStatus.failed, ...(last ? { taskHash: last.taskHash } : {}), error };
  if (last) return { status: RowStatus.notStarted, error: fundingInFlight(last.nonce) };
  return undefined;
}

/** The results file's word for a row whose funding was journaled and not yet seen mined. */
export const fundingInFlight = (nonce: number) => ({
  code: "TX_PENDING",
  message: `a funding transaction (nonce ${nonce}) was being sent for this row; a rerun checks the chain before paying anything`,
});

export interface Sorted {
  posted: FileRow[];
  /** Paid by an earlier run, not listed yet (or no longer listed by the service). */
  toFinish: Array<{ row: FileRow; attempt: Attempt; txHash: string }>;
  /** Paid by an earlier run, and no longer open on chain (cancelled, refunded, expired...): they can never be listed. */
  closed: FileRow[];
  /** Refused before payment for good (FINAL_CODES: a public brief already listed...): never tried again. */
  final: FileRow[];
  /** Nothing paid for them yet. */
  fresh: FileRow[];
  /** A funding transaction is still pending for them. */
  pending: FileRow[];
  /** Fresh public rows whose hash is listed already (TASK_HASH_IN_USE), set aside before the summary. */
  listed?: FileRow[];
}

/**
 * Sorts the rows by what the journal says, once its claims are checked (chain and API), and, for rows left in flight,
 * by what the chain says.
 */
export async function sortRows(run: Run, options: { waitMs: number }): Promise<Sorted> {
  const sorted: Sorted = { posted: [], toFinish: [], closed: [], final: [], fresh: [], pending: [] };
  const { notListed } = run;
  if (notListed.size > 0) {
    run.terminal.note(
      `note: ${notListed.size} row(s) the journal says were posted are paid on chain but not listed by ${run.binding.api}: they are listed again (nothing to pay).`,
    );
  }
  for (const row of run.rows) {
    const journaled = run.journal.rows.get(row.key);
    if (journaled?.posted && !notListed.has(row.key)) {
      sorted.posted.push(row);
      continue;
    }
    if (!journaled || journaled.attempts.length === 0) {
      const refusal = journaled?.lastError;
      if (refusal && !refusal.paid && FINAL_CODES.has(refusal.code)) sorted.final.push(row);
      else sorted.fresh.push(row);
      continue;
    }
    const found = await reconcile(run.chain, journaled, {
      waitMs: options.waitMs,
      onWaiting: (a) =>
        run.terminal.note(`line ${row.line}: waiting for its funding transaction (nonce ${a.nonce}) from an earlier run to be mined...`),
    });
    if ((found.kind === "funded" || found.kind === "closed") && !found.attempt.txHash) {
      run.journal.append({ t: "funded", txHash: found.txHash, rows: [{ key: row.key, taskHash: found.attempt.taskHash }] });
    }
    if (found.kind === "closed") {
      const { attempt, txHash, error } = found;
      // Listed by the killed run before it could journal so, and closed since: it was posted.
      if (!journaled.posted && (await isListed(run.client, attempt.taskHash))) {
        run.journal.append({ t: "posted", key: row.key, taskHash: attempt.taskHash, txHash });
        run.results.set(row, { status: RowStatus.posted, taskHash: attempt.taskHash, txHash });
        sorted.posted.push(row);
        continue;
      }
      // Paid and never listable: not listed, not paid for again, and no listing refusal that would stop the run.
      run.journal.append({ t: "unlisted", key: row.key, taskHash: attempt.taskHash, txHash, error });
      run.results.set(row, { status: RowStatus.unlisted, taskHash: attempt.taskHash, txHash, error });
      sorted.closed.push(row);
    } else if (found.kind === "funded") {
      const { lastError } = journaled;
      run.results.set(row, {
        status: RowStatus.unlisted,
        taskHash: found.attempt.taskHash,
        txHash: found.txHash,
        ...(lastError?.paid ? { error: { code: lastError.code, message: lastError.message } } : {}),
      });
      sorted.toFinish.push({ row, attempt: found.attempt, txHash: found.txHash });
    } else if (found.kind === "pending") {
      run.results.set(row, {
        status: RowStatus.notStarted,
        error: {
          code: "TX_PENDING",
          message: `the funding transaction with nonce ${found.attempt.nonce} from an earlier run is still pending; rerun once it is mined`,
        },
      });
      sorted.pending.push(row);
    } else {
      sorted.fresh.push(row);
    }
  }
  return sorted;
}

/** Whether the service lists the task (a read: `TASK_NOT_FOUND` means it does not). */
async function isListed(client: MarketClient, taskHash: string): Promise<boolean> {
  try {
    await client.getTask(taskHash);
    return true;
  } catch (error) {
    if (error instanceof ApiError && error.code === "TASK_NOT_FOUND") return false;
    throw error;
  }
}

/** Lists rows already paid for; each listing stands alone (listing pays nothing). True when all are listed. */
export async function finishRows(run: Run, toFinish: Sorted["toFinish"], progress: Progress, done = { count: 0 }): Promise<boolean> {
  let all = true;
  for (const { row, attempt, txHash } of toFinish) {
    try {
      await run.client.indexTask({ ...attempt.indexParams, txHash });
      run.journal.append({ t: "posted", key: row.key, taskHash: attempt.taskHash, txHash });
      run.results.set(row, { status: RowStatus.posted, taskHash: attempt.taskHash, txHash });
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      all = false;
      const refusal = { code: error.code, message: error.message };
      run.journal.append({ t: "unlisted", key: row.key, taskHash: attempt.taskHash, txHash, error: refusal });
      run.results.set(row, { status: RowStatus.unlisted, taskHash: attempt.taskHash, txHash, error: refusal });
    }
    progress.update(++done.count);
  }
  return all;
}

/** The rows a rerun can never post: paid and closed on chain, or refused for good before payment (FINAL_CODES). */
export function finalRows(run: Run): FileRow[] {
  return run.rows.filter((row) => {
    const o = run.results.get(row);
    return o.status !== RowStatus.posted && o.error !== undefined && FINAL_CODES.has(o.error.code);
  });
}

/** The closing lines of a run (and its JSON answer with --json); the exit status is the caller's. */
export function summarize(run: Run, exitStatus: number) {
  const { results } = run;
  results.flush();
  const parts = [
    `posted ${results.count(RowStatus.posted)}`,
    `paid, not listed ${results.count(RowStatus.unlisted)}`,
    `failed, nothing paid ${results.count(RowStatus.failed)}`,
    `not started ${results.count(RowStatus.notStarted)}`,
  ];
  run.terminal.data({
    file: run.file,
    results: results.path,
    journal: run.journal.path,
    exitStatus,
    counts: {
      rows: run.rows.length,
      posted: results.count(RowStatus.posted),
      paidNotListed: results.count(RowStatus.unlisted),
      failedNothingPaid: results.count(RowStatus.failed),
      notStarted: results.count(RowStatus.notStarted),
      final: finalRows(run).length,
    },
    rows: run.rows.map((row) => {
      const o = results.get(row);
      return {
        line: row.line,
        status: o.status,
        amount: row.row.amount.toString(),
        ...(o.taskHash ? { taskHash: o.taskHash } : {}),
        ...(o.txHash ? { txHash: o.txHash } : {}),
        ...(o.error ? { error: o.error } : {}),
      };
    }),
  });
  run.terminal.say(`${run.rows.length} rows: ${parts.join("; ")}`);
  run.terminal.say(`results: ${results.path}`);
}

/**
 * How a run ends when rows are left: 3 (`NOT_ALL_POSTED`, rerun the same command) while a rerun can still post some,
 * 1 (`ROWS_NOT_POSTABLE`) when every row left can never be posted, so rerunning forever changes nothing.
 */
export function endOfRun(run: Run, rerun: string): number {
  const left = run.rows.filter((row) => run.results.get(row).status !== RowStatus.posted);
  if (left.length === 0) return 0;
  const final = finalRows(run);
  const why = (row: FileRow) => `line ${row.line}: ${run.results.get(row).error!.code}`;
  if (final.length === left.length) {
    run.terminal.note(
      `error ROWS_NOT_POSTABLE: ${final.length} of ${run.rows.length} rows can never be posted (${final.map(why).join(", ")}); rerunning changes nothing. ` +
        "NOT_OPEN: paid and no longer open on chain (market cancel gets an expired one back); TASK_HASH_IN_USE: that public brief is listed already (change its text).",
    );
    return 1;
  }
  run.terminal.note(
    `error NOT_ALL_POSTED: ${left.length - final.length} of ${run.rows.length} rows are not posted. Rerun the same command to finish them; rows already paid are listed without paying again:\n  ${rerun}`,
  );
  if (final.length > 0) {
    run.terminal.note(`${final.length} other row(s) can never be posted (${final.map(why).join(", ")}); a rerun leaves them as they are.`);
  }
  return 3;
}
