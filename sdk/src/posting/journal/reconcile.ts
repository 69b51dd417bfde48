/**
 * What the chain says about a row a killed or stopped run left in flight (journaled at funding, not posted):
 *
 *   funded   the escrow holds a task of this wallet under one of the row's attempted task hashes, still open (Funded
 *            and before its deadline, what the service lists); the funding transaction is the journaled one, or else
 *            found from the escrow's TaskCreated log
 *   closed   the same, but the task is no longer open on chain (cancelled, refunded, past its deadline...): paid, and
 *            it can never be listed; never paid for again either
 *   unfunded nothing was paid: no attempt is funded and no attempt's nonce is still pending (never sent, or the nonce
 *            was used by something that did not fund it, e.g. a reverted funding): post the row afresh
 *   pending  an attempt's transaction is still in the mempool after waiting for it
 */
import { zeroPadValue } from "ethers";
import { ApiError, clientError } from "../../errors";
import { escrowInterface, type ChainWallet } from "../../chain";
import { taskStatus } from "@market/core/status";
import { sameAddress, snapshotFromView, type TaskSnapshot } from "@market/core/escrow";
import { TaskEscrow__factory } from "../../../../typechain-types/factories/contracts/TaskEscrow__factory";
import type { Attempt, JournalError, RowJournal } from "./entries";

export type Reconciled =
  | { kind: "funded"; attempt: Attempt; txHash: string }
  | { kind: "closed"; attempt: Attempt; txHash: string; error: JournalError }
  | { kind: "unfunded" }
  | { kind: "pending"; attempt: Attempt };

export interface ReconcileOptions {
  /** How long to wait for a pending funding transaction (ms); 0 checks once. */
  waitMs: number;
  pollMs?: number;
  onWaiting?: (attempt: Attempt) => void;
}

const TASK_CREATED = escrowInterface.getEvent("TaskCreated").topicHash;
const LOG_RANGE_BLOCKS = 10_000;

/** Refuses a journal whose attempts were made by another wallet, on another escrow or chain. */
export function checkJournalOwner(rows: Iterable<RowJournal>, chain: ChainWallet) {
  for (const row of rows) {
    for (const a of row.attempts) {
      if (
        a.wallet.toLowerCase() !== chain.wallet.address.toLowerCase() ||
        a.escrow.toLowerCase() !== chain.escrow.toLowerCase() ||
        a.chain !== chain.chain
      ) {
        throw clientError(
          "JOURNAL_MISMATCH",
          `The journal records fundings by ${a.wallet} on escrow ${a.escrow} (${a.chain}); this run acts as ${chain.wallet.address} on ${chain.escrow} (${chain.chain}). Use the same wallet and escrow, or another --results path.`,
        );
      }
    }
  }
}

export async function reconcile(chain: ChainWallet, journal: RowJournal, options: ReconcileOptions): Promise<Reconciled> {
  const deadline = Date.now() + options.waitMs;
  let told = false;
  for (;;) {
    const funded = await fundedAttempt(chain, journal.attempts);
    if (funded) return funded;
    const [latest, pending] = await onChain(() =>
      Promise.all([
        chain.provider.getTransactionCount(chain.wallet.address, "latest"),
        chain.provider.getTransactionCount(chain.wallet.address, "pending"),
      ]),
    );
    const waiting = journal.attempts.find((a) => a.nonce >= latest && a.nonce < pending);
    if (!waiting) {
      // Mined since the funded check? Then that check must see it now.
      const again = await fundedAttempt(chain, journal.attempts);
      return again ?? { kind: "unfunded" };
    }
    if (Date.now() >= deadline) return { kind: "pending", attempt: waiting };
    if (!told) options.onWaiting?.(waiting);
    told = true;
    await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 1_000));
  }
}

async function fundedAttempt(chain: ChainWallet, attempts: readonly Attempt[]): Promise<Reconciled | undefined> {
  const escrow = TaskEscrow__factory.connect(chain.escrow, chain.provider);
  // Newest first: a row is funded at most once, unless a transaction the killed run signed surfaced later.
  for (const attempt of [...attempts].reverse()) {
    const task = snapshotFromView(attempt.taskHash, await onChain(() => escrow.getTask(attempt.taskHash)));
    if (!task || !sameAddress(task.poster, chain.wallet.address)) continue;
    const txHash = attempt.txHash ?? (await fundingTransaction(chain, attempt));
    if (!txHash)
      throw clientError("CHAIN_UNAVAILABLE", `Task ${attempt.taskHash} is funded but its TaskCreated log was not found from block ${attempt.block}.`);
    const closed = await notListable(chain, attempt.taskHash, task);
    return closed ? { kind: "closed", attempt, txHash, error: closed } : { kind: "funded", attempt, txHash };
  }
  return undefined;
}

/**
 * Why a funded task can never be listed, or undefined while it can: the service lists only a task still Funded and
 * before its deadline (the chain's time, as the escrow keeps it).
 */
async function notListable(chain: ChainWallet, taskHash: string, task: TaskSnapshot): Promise<JournalError | undefined> {
  const latest = await onChain(() => chain.provider.getBlock("latest"));
  if (!latest) throw clientError("CHAIN_UNAVAILABLE", "The RPC has no latest block.");
  const status = taskStatus({ status: task.status, deadline: task.deadline, nowSeconds: latest.timestamp });
  if (status === "open") return undefined;
  const why =
    status === "cancelled"
      ? "was cancelled on chain (its reward went back to this wallet)"
      : status === "refunded"
        ? "was refunded on chain (the reward was refunded to this wallet)"
        : status === "expired"
          ? `expired on chain: its deadline passed before it was listed (\`market cancel ${taskHash}\` gets the reward back)`
          : `is no longer open on chain (${status})`;
  return { code: "NOT_OPEN", message: `The task ${why}; it cannot be listed.` };
}

/** The transaction that funded the attempt, from the escrow's TaskCreated(taskHash, poster) log. */
async function fundingTransaction(chain: ChainWallet, attempt: Attempt): Promise<string | undefined> {
  const head = await onChain(() => chain.provider.getBlockNumber());
  const topics = [TASK_CREATED, attempt.taskHash, zeroPadValue(chain.wallet.address, 32)];
  for (let from = attempt.block; from <= head; from += LOG_RANGE_BLOCKS) {
    const to = Math.min(head, from + LOG_RANGE_BLOCKS - 1);
    const logs = await onChain(() => chain.provider.getLogs({ address: chain.escrow, topics, fromBlock: from, toBlock: to }));
    const log = logs[0];
    if (log) return log.transactionHash;
  }
  return undefined;
}

async function onChain<T>(read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    if (error instanceof ApiError) throw error;
    throw clientError("CHAIN_UNAVAILABLE", `The RPC did not answer: ${(error as Error).message}`);
  }
}
