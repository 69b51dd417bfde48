/**
 * `market finish-posts`: only the finishing part of a rerun. Lists the rows of the file that an earlier run paid for
 * but did not list (found through the journal and checked on chain), without paying again; posts nothing new.
 */
import type { CliConfig } from "./config";
import { finishRows, PENDING_FUNDING_WAIT_MS, RowStatus, sortRows } from "../../sdk/src/posting/journal";
import { chainParts, eachChain, openFileRun, summarize, type ChainPart } from "./run";
import type { Terminal } from "./terminal";

export interface FinishPostsFlags {
  file: string;
  results?: string;
  /** The chain of rows without a `chain` cell, as given to post-tasks. */
  chain?: string;
}

export async function finishPostsCommand(flags: FinishPostsFlags, config: CliConfig, terminal: Terminal, postCommand: string): Promise<number> {
  const parts = await chainParts(flags.file, flags.results, config, flags.chain);
  return eachChain(parts, terminal, (part, partTerminal) => finishPart(flags, part, config, partTerminal, postCommand));
}

async function finishPart(flags: FinishPostsFlags, part: ChainPart, config: CliConfig, terminal: Terminal, postCommand: string): Promise<number> {
  const run = await openFileRun(flags.file, part, config, terminal);
  try {
    const sorted = await sortRows(run, { waitMs: PENDING_FUNDING_WAIT_MS });
    terminal.say(`file: ${flags.file} (${run.rows.length} rows)`);
    terminal.say(`paid by an earlier run, to be listed: ${sorted.toFinish.length}`);
    if (sorted.closed.length > 0) terminal.say(`paid by an earlier run, no longer open on chain (cannot be listed): ${sorted.closed.length}`);
    const progress = terminal.progress(sorted.toFinish.length, "listed");
    const finished = await finishRows(run, sorted.toFinish, progress);
    progress.end();
    let status = 0;
    if (!finished || sorted.pending.length > 0) {
      const left = run.results.count(RowStatus.unlisted) - sorted.closed.length + sorted.pending.length;
      terminal.note(`error NOT_ALL_POSTED: ${left} paid or pending row(s) are not listed yet; run finish-posts again later.`);
      status = 3;
    } else if (sorted.closed.length > 0) {
      // Nothing a rerun can do: those rows are paid and no longer open on chain.
      terminal.note(
        `error ROWS_NOT_POSTABLE: ${sorted.closed.length} paid row(s) are no longer open on chain (cancelled, refunded or expired) and can never be listed (NOT_OPEN in the results file).`,
      );
      status = 1;
    }
    summarize(run, status, terminal);
    const unposted = sorted.fresh.length;
    if (unposted > 0) terminal.say(`${unposted} row(s) were never paid for; post them with: ${postCommand}`);
    return status;
  } finally {
    await run.close();
  }
}
