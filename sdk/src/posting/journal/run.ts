/**
 * A journaled run over checked rows, shared by `market post-tasks`, `market finish-posts`, `market mcp` and the API's
 * custodied `post_tasks`: the rows, the client and wallet, the journal (locked, bound to the chain, escrow, wallet and
 * API) and the outcomes; sorting the rows by what earlier runs did, every claim of the journal checked against the
 * chain and the API first; and listing the rows an earlier run paid for but did not list, without paying again.
 */
import { ApiError, clientError } from "../../errors";
import type { MarketClient } from "../../client";
import { bindingMismatch, FINAL_CODES, type Attempt, type RowJournal } from "./entries";
import { openJournal, type JournalWriter } from "./journal";
import { checkJournalOwner, reconcile } from "./reconcile";
import { bindingOf, checkClaims } from "./claims";
import { createOutcomes, RowStatus, type RowOutcome } from "./outcomes";
import { noFundedIndex, type FundedIndex, type JournalPort, type OutcomeSink, type Progress, type Reporter } from "./ports";
import type { RunRow } from "./rows";
import type { Run } from "./types";

/** How long a rerun waits for a funding transaction a killed run left pending before it gives up for now. */
export const PENDING_FUNDING_WAIT_MS = 5 * 60_000;

export interface RunSetup {
  /** Names the rows' source in messages (the task file's path). */
  file: string;
  rows: RunRow[];
  /** Acts as the posting wallet (an API key and a private key). */
  client: MarketClient;
  /** The chain the rows are posted on (`arc`, `0g`...); default the service's first postable one. */
  chain?: string;
  /** The API base URL the rows are listed through, as the journal binds it. */
  api: string;
  journal: JournalPort;
  /** Where the outcomes are shown (the CLI's results file); none: in memory only. */
  results?: OutcomeSink;
  /** The funded-rows index of this wallet on this chain and escrow; none: `noFundedIndex`. */
  funded?: (scope: { chainId: number; escrow: string; wallet: string }) => FundedIndex;
  reporter: Reporter;
  /** A dry run: locks and records nothing. */
  readOnly?: boolean;
}

/**
 * Opens a run: the wallet connected, the journal locked and checked against this chain, escrow and wallet
 * (`JOURNAL_MISMATCH` otherwise: its fundings are not on this chain), the outcomes started from the journal.
 */
export async function openRun(setup: RunSetup): Promise<Run> {
  const { file, rows, client, reporter } = setup;
  const chain = await client.wallet(setup.chain);
  const resultsPath = setup.results?.name ?? "the results";
  let journal: JournalWriter | undefined;
  try {
    const binding = await bindingOf(chain, setup.api.replace(/\/$/, ""));
    journal = await openJournal(setup.journal, { bind: binding, ...(setup.readOnly ? { readOnly: true } : {}) });
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
      reporter.note(`note: the journal was written through ${recorded.api}; every row it claims is checked against ${binding.api}.`);
    }
    // Nothing the journal claims is believed, nor shown as an outcome, before the chain and the API confirm it.
    const notListed = await checkClaims({ file, rows, client, chain, journal, binding });
    const rowsJournal = journal.rows;
    const results = createOutcomes(rows, {
      ...(setup.results ? { sink: setup.results } : {}),
      readOnly: setup.readOnly === true,
      writeNow: rowsJournal.size > 0 || setup.results?.exists() === true,
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
      reporter.note(
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
      funded: setup.funded?.(binding) ?? noFundedIndex,
      notListed,
      reporter,
      async close() {
        results.flush();
        try {
          await opened.close();
        } finally {
          chain.provider.destroy();
        }
      },
    };
  } catch (error) {
    try {
      await journal?.close();
    } finally {
      chain.provider.destroy();
    }
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
  posted: RunRow[];
  /** Paid by an earlier run, not listed yet (or no longer listed by the service). */
  toFinish: Array<{ row: RunRow; attempt: Attempt; txHash: string }>;
  /** Paid by an earlier run, and no longer open on chain (cancelled, refunded, expired...): they can never be listed. */
  closed: RunRow[];
  /** Refused before payment for good (FINAL_CODES: a public brief already listed...): never tried again. */
  final: RunRow[];
  /** Nothing paid for them yet. */
  fresh: RunRow[];
  /** A funding transaction is still pending for them. */
  pending: RunRow[];
  /** Fresh public rows whose hash is listed already (TASK_HASH_IN_USE), set aside before the summary. */
  listed?: RunRow[];
}

/**
 * Sorts the rows by what the journal says, once its claims are checked (chain and API), and, for rows left in flight,
 * by what the chain says.
 */
export async function sortRows(run: Run, options: { waitMs: number }): Promise<Sorted> {
  const sorted: Sorted = { posted: [], toFinish: [], closed: [], final: [], fresh: [], pending: [] };
  const { notListed } = run;
  if (notListed.size > 0) {
    run.reporter.note(
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
        run.reporter.note(`line ${row.line}: waiting for its funding transaction (nonce ${a.nonce}) from an earlier run to be mined...`),
    });
    if ((found.kind === "funded" || found.kind === "closed") && !found.attempt.txHash) {
      await run.journal.append({ t: "funded", txHash: found.txHash, rows: [{ key: row.key, taskHash: found.attempt.taskHash }] });
    }
    if (found.kind === "closed") {
      const { attempt, txHash, error } = found;
      // Listed by the killed run before it could journal so, and closed since: it was posted.
      if (!journaled.posted && (await isListed(run.client, attempt.taskHash))) {
        await run.journal.append({ t: "posted", key: row.key, taskHash: attempt.taskHash, txHash });
        run.results.set(row, { status: RowStatus.posted, taskHash: attempt.taskHash, txHash });
        sorted.posted.push(row);
        continue;
      }
      // Paid and never listable: not listed, not paid for again, and no listing refusal that would stop the run.
      await run.journal.append({ t: "unlisted", key: row.key, taskHash: attempt.taskHash, txHash, error });
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
      await run.journal.append({ t: "posted", key: row.key, taskHash: attempt.taskHash, txHash });
      run.results.set(row, { status: RowStatus.posted, taskHash: attempt.taskHash, txHash });
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      all = false;
      const refusal = { code: error.code, message: error.message };
      await run.journal.append({ t: "unlisted", key: row.key, taskHash: attempt.taskHash, txHash, error: refusal });
      run.results.set(row, { status: RowStatus.unlisted, taskHash: attempt.taskHash, txHash, error: refusal });
    }
    progress.update(++done.count);
  }
  return all;
}

/** The rows a rerun can never post: paid and closed on chain, or refused for good before payment (FINAL_CODES). */
export function finalRows(run: Run): RunRow[] {
  return run.rows.filter((row) => {
    const o = run.results.get(row);
    return o.status !== RowStatus.posted && o.error !== undefined && FINAL_CODES.has(o.error.code);
  });
}
