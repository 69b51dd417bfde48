/**
 * Rows a task file would pay for again: its private rows this wallet already funded from a task file (a copy under
 * another name, or the same file with its journal moved away), found in the funded-rows index (funded-index.ts) and
 * confirmed on chain. `post-tasks` shows them and pays for them again only when the user says so.
 */
import { clientError } from "../../sdk/src/errors";
import { sameAddress, snapshotFromView } from "../../core/escrow";
import { TaskEscrow__factory } from "../../typechain-types/factories/contracts/TaskEscrow__factory";
import { eachLimited } from "./claims";
import type { Run } from "./run";
import type { FundedRow } from "./funded-index";
import type { FileRow } from "./task-file";
import type { Terminal } from "./terminal";

/** A row of this file that this wallet already funded from a task file (found in the funded-rows index, confirmed on chain). */
export interface Repeat {
  row: FileRow;
  earlier: FundedRow;
}

/**
 * The fresh private rows this wallet already paid for with the same content (another file, or this one with its
 * journal gone). A public row cannot be paid twice: its task hash is its brief's, which the service lists only once.
 */
export async function findRepeats(run: Run, fresh: readonly FileRow[]): Promise<Repeat[]> {
  const escrow = TaskEscrow__factory.connect(run.chain.escrow, run.chain.provider);
  const repeats: Repeat[] = [];
  await eachLimited(
    fresh.filter((row) => row.row.privacy === "private"),
    async (row) => {
      const own = new Set((run.journal.rows.get(row.key)?.attempts ?? []).map((a) => a.taskHash.toLowerCase()));
      for (const earlier of [...run.funded.lookup(row.key)].reverse()) {
        if (own.has(earlier.taskHash.toLowerCase())) continue; // this row's own attempt, found unfunded
        let task;
        try {
          task = snapshotFromView(earlier.taskHash, await escrow.getTask(earlier.taskHash));
        } catch (error) {
          throw clientError("CHAIN_UNAVAILABLE", `The RPC did not answer: ${(error as Error).message}`);
        }
        if (task && sameAddress(task.poster, run.chain.wallet.address)) {
          repeats.push({ row, earlier });
          return;
        }
      }
    },
  );
  return repeats.sort((a, b) => a.row.line - b.row.line);
}

export function showRepeats(terminal: Terminal, repeats: readonly Repeat[]) {
  if (repeats.length === 0) return;
  terminal.say(`already paid for by this wallet from a task file (a copy of one?): ${repeats.length} private row(s) below would be paid again`);
  for (const { row, earlier } of repeats.slice(0, 5)) {
    terminal.say(`  line ${row.line}: as ${earlier.file} line ${earlier.line} on ${earlier.at.slice(0, 10)}, task ${earlier.taskHash}`);
  }
  if (repeats.length > 5) terminal.say(`  ... and ${repeats.length - 5} more`);
}

/** Paying again for rows already funded takes its own yes (or --allow-repost); --yes alone does not. */
export async function confirmRepost(flags: { allowRepost?: boolean }, terminal: Terminal, count: number) {
  if (flags.allowRepost) {
    terminal.note(`note: paying again for ${count} private row(s) already funded by this wallet (--allow-repost).`);
    return;
  }
  const refusal = `${count} private row(s) of this file were already paid for by this wallet from a task file (lines above); nothing was sent.`;
  if (!terminal.interactive) throw clientError("ALREADY_FUNDED", `${refusal} Pass --allow-repost to pay for them again.`);
  if (!(await terminal.confirm(`Pay again for the ${count} private row(s) already paid for?`))) throw clientError("ALREADY_FUNDED", refusal);
}
