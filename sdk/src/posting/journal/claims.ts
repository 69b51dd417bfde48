/**
 * What a run's journal is bound to, and its claims checked before anything is believed: every funding it records must
 * be this wallet's task on the escrow (a reset chain is refused), every row it says was posted must be listed by the
 * API (a row the service no longer lists is listed again, paying nothing).
 */
import { clientError } from "../../errors";
import type { ChainWallet } from "../../chain";
import { sameAddress, snapshotFromView } from "@market/core/escrow";
import { TaskEscrow__factory } from "../../../../typechain-types/factories/contracts/TaskEscrow__factory";
import type { JournalBinding } from "./entries";
import type { Run } from "./types";
import type { RunRow } from "./rows";

/** Chain reads in flight at once while a rerun checks what the journal (or the funded-rows index) claims. */
const CHECKS_AT_ONCE = 8;

/** Runs `check` on each item, a few at a time. */
export async function eachLimited<T>(items: readonly T[], check: (item: T) => Promise<void>): Promise<void> {
  const queue = [...items];
  await Promise.all(
    Array.from({ length: Math.min(CHECKS_AT_ONCE, queue.length) }, async () => {
      for (let item = queue.shift(); item !== undefined; item = queue.shift()) await check(item);
    }),
  );
}

/** What the journal's entries are bound to: this chain (id and block 0), escrow, wallet and API. */
export async function bindingOf(chain: ChainWallet, api: string): Promise<JournalBinding> {
  const genesis = await chain.provider.getBlock(0).catch((error: unknown) => {
    throw clientError("CHAIN_UNAVAILABLE", `The RPC did not answer: ${(error as Error).message}`);
  });
  if (!genesis?.hash) throw clientError("CHAIN_UNAVAILABLE", "The RPC has no block 0.");
  return { chain: chain.chain, chainId: chain.chainId, genesis: genesis.hash, escrow: chain.escrow, wallet: chain.wallet.address, api };
}

/**
 * Checks what the journal claims before anything is trusted: every task it says was paid for (a posted row, a funding
 * it saw mined) must be this wallet's on the escrow (`JOURNAL_MISMATCH` otherwise: the chain or the escrow was reset
 * since, and nothing is sent), and the posted rows must be listed by the service. Answers the posted rows the service
 * does not list (its database was reset, or the API is another one): they are listed again, paying nothing.
 */
export async function checkClaims(run: Pick<Run, "file" | "rows" | "client" | "chain" | "journal" | "binding">): Promise<Set<string>> {
  const escrow = TaskEscrow__factory.connect(run.chain.escrow, run.chain.provider);
  const claims: Array<{ row: RunRow; taskHash: string; txHash: string }> = [];
  for (const row of run.rows) {
    const journaled = run.journal.rows.get(row.key);
    if (journaled?.posted) claims.push({ row, ...journaled.posted });
    else for (const a of journaled?.attempts ?? []) if (a.txHash) claims.push({ row, taskHash: a.taskHash, txHash: a.txHash });
  }
  if (claims.length === 0) return new Set();
  await eachLimited(claims, async ({ row, taskHash, txHash }) => {
    let task;
    try {
      task = snapshotFromView(taskHash, await escrow.getTask(taskHash));
    } catch (error) {
      throw clientError("CHAIN_UNAVAILABLE", `The RPC did not answer: ${(error as Error).message}`);
    }
    if (!task || !sameAddress(task.poster, run.chain.wallet.address)) {
      throw clientError(
        "JOURNAL_MISMATCH",
        `The journal ${run.journal.path} says line ${row.line} was paid for (task ${taskHash}, transaction ${txHash}), but the escrow ${run.chain.escrow} has no such task of ${run.chain.wallet.address}: the chain or the escrow was reset since. Nothing was sent; move the journal and the results file away (or give another --results path) to post ${run.file} afresh.`,
      );
    }
  });
  const listed = new Set<string>();
  for (let cursor: string | undefined; ;) {
    const page = await run.client.postedTasks({ limit: 1000, ...(cursor ? { cursor } : {}) });
    for (const t of page.tasks) listed.add(t.meta.taskHash.toLowerCase());
    if (!page.nextCursor) break;
    cursor = page.nextCursor;
  }
  const unlisted = new Set<string>();
  for (const row of run.rows) {
    const posted = run.journal.rows.get(row.key)?.posted;
    if (posted && !listed.has(posted.taskHash.toLowerCase())) unlisted.add(row.key);
  }
  return unlisted;
}
