/**
 * A run over a task file, shared by `post-tasks` and `finish-posts`: the checked rows, the client and wallet, the
 * journal (locked) and the results file; sorting the rows by what earlier runs did; and listing the rows an earlier
 * run paid for but did not list, without paying again.
 */
import { mkdirSync } from "node:fs";
import path from "node:path";
import { MarketClient } from "../../sdk/src/client";
import { ApiError } from "../../sdk/src/errors";
import type { ChainWallet } from "../../sdk/src/chain";
import { clientOptions, type CliConfig } from "./config";
import { journalPathFor, openJournal, type Attempt, type JournalWriter } from "./journal";
import { checkJournalOwner, reconcile } from "./reconcile";
import { createResultsFile, RowStatus, type ResultsFile } from "./results";
import { loadTaskFile, type FileRow } from "./task-file";
import type { Progress, Terminal } from "./terminal";

/** How long a rerun waits for a funding transaction a killed run left pending before it gives up for now. */
export const PENDING_FUNDING_WAIT_MS = 5 * 60_000;

export interface Run {
  file: string;
  rows: FileRow[];
  client: MarketClient;
  chain: ChainWallet;
  journal: JournalWriter;
  results: ResultsFile;
  terminal: Terminal;
  close(): void;
}

export function resultsPathFor(file: string, results?: string): string {
  return results ?? `${file}.results.csv`;
}

export async function openRun(file: string, resultsFlag: string | undefined, config: CliConfig, terminal: Terminal): Promise<Run> {
  const rows = loadTaskFile(file);
  const client = new MarketClient(clientOptions(config, { signs: true }));
  const chain = await client.wallet();
  const resultsPath = resultsPathFor(file, resultsFlag);
  mkdirSync(path.dirname(path.resolve(resultsPath)), { recursive: true });
  const journal = openJournal(journalPathFor(resultsPath));
  try {
    checkJournalOwner(journal.rows.values(), chain);
    const results = createResultsFile(resultsPath, rows);
    for (const row of rows) {
      const journaled = journal.rows.get(row.key);
      if (journaled?.posted) results.set(row, { status: RowStatus.posted, ...journaled.posted });
      else if (journaled?.lastError && !journaled.lastError.paid) {
        const { paid: _paid, ...error } = journaled.lastError;
        results.set(row, { status: RowStatus.failed, error });
      }
    }
    const keys = new Set(rows.map((r) => r.key));
    const strays = [...journal.rows.entries()].filter(([key, j]) => !keys.has(key) && !j.posted && j.attempts.length > 0);
    if (strays.length > 0) {
      terminal.note(
        `note: the journal has ${strays.length} unfinished row(s) that no row of ${file} matches any more (edited or removed rows); ` +
          `if paid, they stay in escrow unlisted: ${strays.map(([, j]) => j.attempts.at(-1)!.taskHash).join(", ")}`,
      );
    }
    return {
      file,
      rows,
      client,
      chain,
      journal,
      results,
      terminal,
      close() {
        journal.close();
        chain.provider.destroy();
      },
    };
  } catch (error) {
    journal.close();
    chain.provider.destroy();
    throw error;
  }
}

export interface Sorted {
  posted: FileRow[];
  /** Paid by an earlier run, not listed yet. */
  toFinish: Array<{ row: FileRow; attempt: Attempt; txHash: string }>;
  /** Paid by an earlier run, and no longer open on chain (cancelled, refunded, expired...): they can never be listed. */
  closed: FileRow[];
  /** Nothing paid for them yet. */
  fresh: FileRow[];
  /** A funding transaction is still pending for them. */
  pending: FileRow[];
}

/** Sorts the rows by what the journal and, for rows left in flight, the chain say. */
export async function sortRows(run: Run, options: { waitMs: number }): Promise<Sorted> {
  const sorted: Sorted = { posted: [], toFinish: [], closed: [], fresh: [], pending: [] };
  for (const row of run.rows) {
    const journaled = run.journal.rows.get(row.key);
    if (journaled?.posted) {
      sorted.posted.push(row);
      continue;
    }
    if (!journaled || journaled.attempts.length === 0) {
      sorted.fresh.push(row);
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
      if (await isListed(run.client, attempt.taskHash)) {
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
    run.results.writeSoon();
    progress.update(++done.count);
  }
  return all;
}

/** The closing lines of a run; the exit status is the caller's. */
export function summarize(run: Run) {
  const { results } = run;
  const parts = [
    `posted ${results.count(RowStatus.posted)}`,
    `paid, not listed ${results.count(RowStatus.unlisted)}`,
    `failed, nothing paid ${results.count(RowStatus.failed)}`,
    `not started ${results.count(RowStatus.notStarted)}`,
  ];
  run.terminal.say(`${run.rows.length} rows: ${parts.join("; ")}`);
  run.terminal.say(`results: ${results.path}`);
}
