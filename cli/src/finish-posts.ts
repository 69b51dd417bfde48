/**
 * `market finish-posts`: only the finishing part of a rerun. Lists the rows of the file that an earlier run paid for
 * but did not list (found through the journal and checked on chain), without paying again; posts nothing new.
 */
import type { CliConfig } from "./config";
import { RowStatus } from "./results";
import { finishRows, openRun, PENDING_FUNDING_WAIT_MS, sortRows, summarize } from "./run";
import type { Terminal } from "./terminal";

export interface FinishPostsFlags {
  file: string;
  results?: string;
}

export async function finishPostsCommand(flags: FinishPostsFlags, config: CliConfig, terminal: Terminal, postCommand: string): Promise<number> {
  const run = await openRun(flags.file, flags.results, config, terminal);
  try {
    const sorted = await sortRows(run, { waitMs: PENDING_FUNDING_WAIT_MS });
    terminal.say(`file: ${flags.file} (${run.rows.length} rows)`);
    terminal.say(`paid by an earlier run, to be listed: ${sorted.toFinish.length}`);
    if (sorted.closed.length > 0) terminal.say(`paid by an earlier run, no longer open on chain (cannot be listed): ${sorted.closed.length}`);
    const progress = terminal.progress(sorted.toFinish.length, "listed");
    const finished = await finishRows(run, sorted.toFinish, progress);
    progress.end();
    run.results.write();
    summarize(run);
    if (!finished || sorted.pending.length > 0) {
      const left = run.results.count(RowStatus.unlisted) - sorted.closed.length + sorted.pending.length;
      terminal.note(`error NOT_ALL_POSTED: ${left} paid or pending row(s) are not listed yet; run finish-posts again later.`);
      return 3;
    }
    const unposted = run.rows.length - run.results.count(RowStatus.posted) - sorted.closed.length;
    if (unposted > 0) terminal.say(`${unposted} row(s) were never paid for; post them with: ${postCommand}`);
    if (sorted.closed.length > 0) {
      terminal.note(
        `error NOT_ALL_POSTED: ${sorted.closed.length} paid row(s) are no longer open on chain (cancelled, refunded or expired) and can never be listed (NOT_OPEN in the results file).`,
      );
      return 3;
    }
    return 0;
  } finally {
    run.close();
  }
}
