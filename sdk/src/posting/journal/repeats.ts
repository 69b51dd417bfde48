/**
 * Rows a run would pay for again: its private rows this wallet already funded from another run (a copy of a task file
 * under another name, or the same file with its journal moved away), found in the funded-rows index and confirmed on
 * chain. `market post-tasks` shows them and pays for them again only when the user says so.
 */
import { clientError } from "../../errors";
import { sameAddress, snapshotFromView } from "@market/core/escrow";
import { TaskEscrow__factory } from "../../../../typechain-types/factories/contracts/TaskEscrow__factory";
import { eachLimited } from "./claims";
import type { FundedRow } from "./ports";
import type { RunRow } from "./rows";
import type { Run } from "./types";

/** A row of this file that this wallet already funded from a task file (found in the funded-rows index, confirmed on chain). */
export interface Repeat {
  row: RunRow;
  earlier: FundedRow;
}

/**
 * The fresh private rows this wallet already paid for with the same content (another file, or this one with its
 * journal gone). A public row cannot be paid twice: its task hash is its brief's, which the service lists only once.
 */
export async function findRepeats(run: Run, fresh: readonly RunRow[]): Promise<Repeat[]> {
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
