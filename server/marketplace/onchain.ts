import type { Db } from "../db";
import type { ChainRegistry } from "../chains";
import { unsignedCall } from "../chains/calls";
import { escrowPaused, loadTask, type TaskContext } from "../tasks";
import { taskSnapshotOf } from "../indexer/task-projection";
import type { Clock } from "../http/types";
import { refusalError, type EscrowAction } from "./refusals";
import { asTaskHash, type SettlementTx } from "@market/core/api";
import { canCancel, canClaim, canDispute, canRelease, canReleaseUnjudged, claimOutcome, type Check, type TaskSnapshot } from "@market/core/escrow";
import { taskStatus } from "@market/core/status";

type Loaded = TaskContext & { task: TaskSnapshot; paused: boolean; nowSeconds: number };

/**
 * The on-chain calls posters and workers send from their own wallets. Each is checked first with the escrow's own
 * precondition (core/escrow) over the indexed state, so a call the escrow would refuse is answered with its reason
 * instead of a transaction.
 */
export type SettlementCalls = ReturnType<typeof createSettlementCalls>;

export function createSettlementCalls(deps: { db: Db; chains: ChainRegistry; now: Clock }) {
  const { db, chains, now } = deps;

  async function load(taskHash: string): Promise<Loaded> {
    const ctx = await loadTask(db, chains, taskHash);
    const paused = await escrowPaused(db, ctx.listing.chain);
    return { ...ctx, task: taskSnapshotOf(ctx.onChain), paused, nowSeconds: Math.floor(now() / 1000) };
  }

  /** The precondition's answer when it lets the call through; else the API's error for the escrow's refusal. */
  function allowed<T extends object>(action: EscrowAction, ctx: Loaded, wallet: string, check: Check<T>): T {
    if (check.ok) return check;
    const status = taskStatus({ status: ctx.task.status, deadline: ctx.task.deadline, nowSeconds: ctx.nowSeconds });
    throw refusalError(action, check.refusal, { task: ctx.task, caller: wallet, status });
  }

  const call = (ctx: Loaded, wallet: string) => ({ taskHash: ctx.listing.task_hash, caller: wallet, paused: ctx.paused, now: ctx.nowSeconds });

  /** Poster, while Funded: 100% back. */
  async function cancel(wallet: string, taskHash: string): Promise<SettlementTx> {
    const ctx = await load(taskHash);
    allowed("cancel", ctx, wallet, canCancel(ctx.task, call(ctx, wallet)));
    return {
      taskHash: asTaskHash(ctx.listing.task_hash),
      outcome: "refund",
      unsignedTx: unsignedCall(ctx.chain, wallet, "cancelTask", [ctx.listing.task_hash]),
    };
  }

  /** Poster, after the deadline: refunds, or escalates delivered work nobody judged. */
  async function claimTimeout(wallet: string, taskHash: string): Promise<SettlementTx> {
    const ctx = await load(taskHash);
    const check = canClaim(ctx.task, call(ctx, wallet));
    if (!check.ok && check.refusal.error === "DeadlineNotReached") {
      // Ended, verified or escalated: no claim ever opens, so waiting for the deadline is not the answer.
      allowed("claim-timeout", ctx, wallet, claimOutcome(ctx.task));
    }
    const { outcome } = allowed("claim-timeout", ctx, wallet, check);
    return {
      taskHash: asTaskHash(ctx.listing.task_hash),
      outcome,
      unsignedTx: unsignedCall(ctx.chain, wallet, "claimTimeout", [ctx.listing.task_hash]),
    };
  }

  /** Poster before the deadline, or worker before the deadline or within 3 days of a failed verdict. */
  async function dispute(wallet: string, taskHash: string): Promise<SettlementTx> {
    const ctx = await load(taskHash);
    allowed("dispute", ctx, wallet, canDispute(ctx.task, call(ctx, wallet)));
    return {
      taskHash: asTaskHash(ctx.listing.task_hash),
      outcome: "dispute",
      unsignedTx: unsignedCall(ctx.chain, wallet, "raiseDispute", [ctx.listing.task_hash]),
    };
  }

  /** Worker, 14 days after escalation without a ruling: payout with the fee. */
  async function releaseUnjudged(wallet: string, taskHash: string): Promise<SettlementTx> {
    const ctx = await load(taskHash);
    allowed("release-unjudged", ctx, wallet, canReleaseUnjudged(ctx.task, call(ctx, wallet)));
    return {
      taskHash: asTaskHash(ctx.listing.task_hash),
      outcome: "payout",
      unsignedTx: unsignedCall(ctx.chain, wallet, "releaseUnjudgedWork", [ctx.listing.task_hash]),
    };
  }

  /** Worker, before delivering anything: hands the task back; it is open again. */
  async function release(wallet: string, taskHash: string): Promise<SettlementTx> {
    const ctx = await load(taskHash);
    allowed("release", ctx, wallet, canRelease(ctx.task, call(ctx, wallet)));
    return {
      taskHash: asTaskHash(ctx.listing.task_hash),
      outcome: "reopen",
      unsignedTx: unsignedCall(ctx.chain, wallet, "releaseTask", [ctx.listing.task_hash]),
    };
  }

  return { cancel, claimTimeout, dispute, releaseUnjudged, release };
}
