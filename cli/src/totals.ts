/** The totals shown before a run asks to pay (spec: "Bulk run behaviour", step 2), as the CLI says them. */
export { totalsOf, type Totals } from "../../sdk/src/posting/journal";
import { formatUsdc } from "@market/core/money";
import type { Totals } from "../../sdk/src/posting/journal";
import type { FileRow } from "./task-file";
import type { Terminal } from "./terminal";

const usdc = (raw: bigint) => `${formatUsdc(raw)} USDC`;

/** `approval`: whether an approval transaction is needed, or undefined when the allowance is not known (dry run). */
export function showTotals(terminal: Terminal, totals: Totals, approval: boolean | undefined) {
  terminal.say(`tasks to post: ${totals.tasks} (public ${totals.public.count}, private ${totals.private.count})`);
  terminal.say(
    `total escrow: ${usdc(totals.totalRaw)} (${totals.totalRaw} raw); public ${usdc(totals.public.raw)}, private ${usdc(totals.private.raw)}`,
  );
  if (totals.tasks === 0) return;
  const fundings = `${totals.fundings} funding${totals.fundings === 1 ? "" : "s"}`;
  const count =
    approval === false
      ? `${totals.fundings} (${fundings}; no approval: the allowance already covers the total)`
      : `${totals.fundings + 1} (1 approval + ${fundings}${approval === undefined ? "; no approval if the allowance already covers the total" : ""})`;
  const how = totals.batch ? `batch creation: up to ${totals.perTransaction} tasks per funding` : "no batch creation: one funding per task";
  terminal.say(`transactions: ${count}; ${how}`);
}

/**
 * The local files the rows' briefs were read from (`instructions_file`), named before anything is asked or sent: a task
 * file from someone else must not publish a file without the user seeing which (docs/security.md). Public briefs are
 * published as they are; private ones go encrypted to the agents that may open them.
 */
export function showBriefFiles(terminal: Terminal, rows: readonly FileRow[]): number {
  const read = rows.filter((r) => r.instructionsFile !== undefined);
  if (read.length === 0) return 0;
  const files = new Set(read.map((r) => r.instructionsFile));
  terminal.say(`briefs read from ${files.size} local file${files.size === 1 ? "" : "s"} (public ones are published as they are):`);
  for (const r of read) terminal.say(`  line ${r.line} (${r.row.privacy}): ${r.instructionsFile}`);
  return files.size;
}
