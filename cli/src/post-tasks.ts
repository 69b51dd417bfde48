/**
 * `market post-tasks`: checks the whole file, shows the totals, asks once, then finishes what an earlier run of the
 * same file paid for but did not list and posts the rest in one SDK run, journaling every step (journal.ts) so that
 * rerunning the same command after any failure or kill never pays for a row twice. Rows this wallet already funded
 * from another task file (a copy) are paid again only when the user says so.
 */
import { MarketClient } from "../../sdk/src/client";
import { clientError } from "../../sdk/src/errors";
import { erc20Interface } from "../../sdk/src/chain";
import type { WrapTo } from "../../sdk/src/posting";
import {
  findRepeats,
  finishRows,
  postFresh,
  preflight,
  refuseListed,
  sortRows,
  PENDING_FUNDING_WAIT_MS,
  type PostTasksHooks,
  type Sorted,
} from "../../sdk/src/posting/journal";
import { formatUsdc } from "@market/core/money";
import { publicClientOptions, type CliConfig } from "./config";
import { journalPathFor, readJournal } from "./journal";
import { chainParts, eachChain, endOfRun, openFileRun, resultsPathFor, summarize, type ChainPart } from "./run";
import { confirmRepost, showRepeats } from "./repeats";
import { loadTaskFile } from "./task-file";
import { showBriefFiles, showTotals, totalsOf } from "./totals";
import type { Terminal } from "./terminal";

export type { PostTasksHooks } from "../../sdk/src/posting/journal";

export interface PostTasksFlags {
  file: string;
  dryRun?: boolean;
  results?: string;
  chunk?: number;
  yes?: boolean;
  /** Pay again for rows this wallet already funded from another task file (a copy) without asking. */
  allowRepost?: boolean;
  /** Raw units, from `--max-total <usdc>`. */
  maxTotalRaw?: bigint;
  /** Whom private briefs are wrapped to (`market mcp` passes `any-chain`); default the posting chain's agents. */
  wrapTo?: WrapTo;
  /** The chain of rows without a `chain` cell; default the service's first postable chain. */
  chain?: string;
}

export async function postTasksCommand(
  flags: PostTasksFlags,
  config: CliConfig,
  terminal: Terminal,
  rerun: string,
  hooks: PostTasksHooks = {},
): Promise<number> {
  if (flags.dryRun && (!config.apiKey || !config.privateKey)) return journalOnlyDryRun(flags, config, terminal);
  const parts = await chainParts(flags.file, flags.results, config, flags.chain);
  return eachChain(parts, terminal, (part, partTerminal) =>
    flags.dryRun ? dryRun(flags, part, config, partTerminal) : postPart(flags, part, config, partTerminal, rerun, hooks),
  );
}

/** Posts the task file's rows on one chain: one journaled run, its summary, one question, then the posting. */
async function postPart(flags: PostTasksFlags, part: ChainPart, config: CliConfig, terminal: Terminal, rerun: string, hooks: PostTasksHooks) {
  const run = await openFileRun(flags.file, part, config, terminal);
  try {
    const sorted = await sortRows(run, { waitMs: PENDING_FUNDING_WAIT_MS });
    // What the real run checks before sending (shared with the dry run and the MCP quote): public rows listed already
    // can only fail, so they are not counted and are recorded refused once the run goes ahead; a private row no agent
    // can open refuses the run here, before the question.
    await preflight(run, sorted, flags.wrapTo ? { wrapTo: flags.wrapTo } : {});
    const listed = sorted.listed ?? [];
    const settlement = await run.client.settlement(run.chain.chain);
    const totals = totalsOf(sorted.fresh, settlement, flags.chunk);
    const allowance = BigInt(
      await run.chain.provider.call({
        to: run.chain.token,
        data: erc20Interface.encodeFunctionData("allowance", [run.chain.wallet.address, run.chain.escrow]),
      }),
    );
    terminal.say(`file: ${flags.file} (${run.rows.length} rows)`);
    describeSorted(terminal, sorted);
    const repeats = await findRepeats(run, sorted.fresh);
    showRepeats(terminal, repeats);
    showTotals(terminal, totals, totals.tasks > 0 ? allowance < totals.totalRaw : false);
    const files = showBriefFiles(terminal, sorted.fresh);
    checkSpendLimit(totals.totalRaw, flags.maxTotalRaw);

    if (sorted.pending.length > 0) {
      // Posting now would queue behind the pending nonce; finish it first.
      const status = endOfRun(run, rerun);
      summarize(run, status, terminal);
      return status;
    }
    if (repeats.length > 0) await confirmRepost(flags, terminal, repeats.length);
    if (totals.tasks > 0)
      await confirm(
        flags,
        terminal,
        `Pay ${formatUsdc(totals.totalRaw)} USDC into escrow for ${totals.tasks} task(s) on ${run.chain.chain} from ${run.chain.wallet.address}` +
          `${files > 0 ? `, with the briefs of the ${files} local file(s) listed above` : ""}?`,
      );

    await refuseListed(run, listed);
    const progress = terminal.progress(sorted.toFinish.length + sorted.fresh.length, "rows", totals.perTransaction);
    const done = { count: 0 };
    const finished = await finishRows(run, sorted.toFinish, progress, done);
    // A listing failure stops the run: nothing new is paid while the service refuses listings.
    if (finished && sorted.fresh.length > 0) await postFresh(run, sorted.fresh, flags, progress, done, hooks);
    progress.end();
    const status = endOfRun(run, rerun);
    summarize(run, status, terminal);
    return status;
  } finally {
    await run.close();
  }
}

/** What earlier runs did, as the lines before the totals. */
function describeSorted(terminal: Terminal, sorted: Sorted) {
  if (sorted.posted.length > 0) terminal.say(`already posted by an earlier run: ${sorted.posted.length}`);
  if (sorted.toFinish.length > 0) terminal.say(`paid by an earlier run, to be listed (nothing to pay): ${sorted.toFinish.length}`);
  if (sorted.closed.length > 0)
    terminal.say(`paid by an earlier run, no longer open on chain (cannot be listed, nothing to pay): ${sorted.closed.length}`);
  if (sorted.final.length > 0) terminal.say(`refused for good by an earlier run (not tried again): ${sorted.final.length}`);
  if (sorted.listed && sorted.listed.length > 0)
    terminal.say(`public briefs listed already (TASK_HASH_IN_USE; not posted, nothing to pay): ${sorted.listed.length}`);
  if (sorted.pending.length > 0) terminal.say(`funding still pending from an earlier run: ${sorted.pending.length}`);
}

/**
 * The dry run: what a run would really pay now. With the wallet's keys (MARKET_API_KEY, MARKET_PRIVATE_KEY) it reads
 * the chain and the API as a run would (rows an earlier run paid for cost nothing: they are only listed), writing and
 * locking nothing; without, it counts every row the journal does not show posted, an upper bound.
 */
async function dryRun(flags: PostTasksFlags, part: ChainPart, config: CliConfig, terminal: Terminal): Promise<number> {
  const run = await openFileRun(flags.file, part, config, terminal, { readOnly: true });
  try {
    const sorted = await sortRows(run, { waitMs: 0 });
    // What the real run checks before sending: listed hashes, and that every private row has an agent to open it.
    await preflight(run, sorted, flags.wrapTo ? { wrapTo: flags.wrapTo } : {});
    const repeats = await findRepeats(run, sorted.fresh);
    const totals = totalsOf(sorted.fresh, await run.client.settlement(run.chain.chain), flags.chunk);
    terminal.data({
      dryRun: true,
      file: flags.file,
      chain: run.chain.chain,
      rows: run.rows.length,
      alreadyPosted: sorted.posted.length,
      toList: sorted.toFinish.length,
      closed: sorted.closed.length,
      final: sorted.final.length,
      pending: sorted.pending.length,
      alreadyPaidElsewhere: repeats.length,
      toPay: { tasks: totals.tasks, totalRaw: totals.totalRaw, transactions: totals.fundings },
    });
    terminal.say(`file: ${flags.file} (${run.rows.length} rows, all valid)`);
    describeSorted(terminal, sorted);
    showRepeats(terminal, repeats);
    showTotals(terminal, totals, undefined);
    showBriefFiles(terminal, sorted.fresh);
    checkSpendLimit(totals.totalRaw, flags.maxTotalRaw);
    terminal.say("dry run: nothing was sent");
    return 0;
  } finally {
    await run.close();
  }
}

async function journalOnlyDryRun(flags: PostTasksFlags, config: CliConfig, terminal: Terminal): Promise<number> {
  const rows = loadTaskFile(flags.file);
  const journal = readJournal(journalPathFor(resultsPathFor(flags.file, flags.results)));
  const posted = rows.filter((r) => journal.get(r.key)?.posted);
  const inFlight = rows.filter((r) => !journal.get(r.key)?.posted && (journal.get(r.key)?.attempts.length ?? 0) > 0);
  const remaining = rows.filter((r) => !journal.get(r.key)?.posted);
  const settlement = await new MarketClient(publicClientOptions(config)).settlement();
  const totals = totalsOf(remaining, settlement, flags.chunk);
  terminal.data({
    dryRun: true,
    checkedChain: false,
    file: flags.file,
    rows: rows.length,
    alreadyPosted: posted.length,
    inFlight: inFlight.length,
    toPay: { atMostTasks: totals.tasks, atMostRaw: totals.totalRaw },
  });
  terminal.say(`file: ${flags.file} (${rows.length} rows, all valid)`);
  if (posted.length > 0) terminal.say(`already posted by an earlier run: ${posted.length}`);
  if (inFlight.length > 0)
    terminal.say(
      `left in flight by an earlier run: ${inFlight.length} (counted below; set MARKET_API_KEY and MARKET_PRIVATE_KEY to check the chain: those already paid are only listed)`,
    );
  showTotals(terminal, totals, undefined);
  showBriefFiles(terminal, remaining);
  checkSpendLimit(totals.totalRaw, flags.maxTotalRaw);
  terminal.say("dry run: nothing was sent (the chain was not checked: at most this is paid)");
  return 0;
}

function checkSpendLimit(totalRaw: bigint, maxTotalRaw: bigint | undefined) {
  if (maxTotalRaw !== undefined && totalRaw > maxTotalRaw) {
    throw clientError(
      "SPEND_LIMIT",
      `The total escrow ${formatUsdc(totalRaw)} USDC is above --max-total ${formatUsdc(maxTotalRaw)} USDC; nothing was sent.`,
    );
  }
}

async function confirm(flags: PostTasksFlags, terminal: Terminal, question: string) {
  if (flags.yes) return;
  if (!terminal.interactive) throw clientError("CONFIRMATION_REQUIRED", "No terminal to confirm on: pass --yes to post. Nothing was sent.");
  if (!(await terminal.confirm(question))) throw clientError("CONFIRMATION_REQUIRED", "Not confirmed; nothing was sent.");
}
