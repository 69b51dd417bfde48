import type { MarketplaceDeps } from "./accept";
import { loadTask, requireLive, type TaskContext } from "./task-context";
import { unsignedCall, type UnsignedTx } from "./calls";
import { MarketError } from "../../core/errors";
import { EscrowStatus } from "../../core/escrow";
import { APPEAL_WINDOW_SECONDS, DISPUTE_RULING_WINDOW_SECONDS, UNJUDGED_ESCALATION_SECONDS } from "../../core/limits";
import { taskStatus } from "../../core/status";

export interface SettlementTx {
  taskHash: string;
  /** What the transaction will do once mined. */
  outcome: "refund" | "escalate" | "dispute" | "payout" | "reopen";
  unsignedTx: UnsignedTx;
}

const iso = (seconds: number) => new Date(seconds * 1000).toISOString();

/**
 * The on-chain calls posters and workers send from their own wallets. Each is checked first against the indexed
 * escrow state, so a call the escrow would refuse is answered with its reason instead of a transaction.
 */
export function createSettlementCalls(deps: MarketplaceDeps) {
  const { db, chains, now } = deps;

  async function load(taskHash: string): Promise<TaskContext & { nowSeconds: number }> {
    const ctx = await loadTask(db, chains, taskHash);
    await requireLive(db, ctx.listing.chain);
    return { ...ctx, nowSeconds: Math.floor(now() / 1000) };
  }

  const wrongState = (ctx: TaskContext & { nowSeconds: number }, what: string) => {
    const status = taskStatus({ status: ctx.onChain.status, deadline: ctx.onChain.deadline, nowSeconds: ctx.nowSeconds });
    return new MarketError("WRONG_STATE", `${what} is not possible while the task is ${status}.`, { reason: status });
  };

  /** The statuses `claimTimeout` acts on, once their time has come. */
  const CLAIMABLE = new Set<number>([EscrowStatus.Funded, EscrowStatus.Assigned, EscrowStatus.Submitted, EscrowStatus.Failed, EscrowStatus.Disputed]);

  function requirePoster(ctx: TaskContext, wallet: string) {
    if (ctx.listing.poster !== wallet) throw new MarketError("NOT_POSTER");
  }

  /** Poster, while Funded: 100% back. */
  async function cancel(wallet: string, taskHash: string): Promise<SettlementTx> {
    const ctx = await load(taskHash);
    requirePoster(ctx, wallet);
    if (ctx.onChain.status !== EscrowStatus.Funded) throw wrongState(ctx, "Cancelling");
    return { taskHash: ctx.listing.task_hash, outcome: "refund", unsignedTx: unsignedCall(ctx.chain, wallet, "cancelTask", [ctx.listing.task_hash]) };
  }

  /** Poster, after the deadline: refunds, or escalates delivered work nobody judged. */
  async function claimTimeout(wallet: string, taskHash: string): Promise<SettlementTx> {
    const ctx = await load(taskHash);
    requirePoster(ctx, wallet);
    const { status, deadline, phase_at: phaseAt } = ctx.onChain;
    // Ended, verified or escalated: no claim ever opens, so waiting for the deadline is not the answer.
    if (!CLAIMABLE.has(status)) throw wrongState(ctx, "Claiming");
    if (ctx.nowSeconds < deadline) throw new MarketError("DEADLINE_NOT_REACHED", `Claims open at the deadline, ${iso(deadline)}.`);
    let outcome: SettlementTx["outcome"] = "refund";
    if (status === EscrowStatus.Failed) {
      const opens = (phaseAt ?? 0) + APPEAL_WINDOW_SECONDS;
      if (ctx.nowSeconds < opens) throw new MarketError("APPEAL_WINDOW_OPEN", `The worker may appeal the failed verdict until ${iso(opens)}.`);
    } else if (status === EscrowStatus.Disputed) {
      const opens = (phaseAt ?? 0) + DISPUTE_RULING_WINDOW_SECONDS;
      if (ctx.nowSeconds < opens) throw new MarketError("DISPUTE_PENDING", `The admin rules; without a ruling, claim from ${iso(opens)}.`);
    } else if (status === EscrowStatus.Submitted) {
      outcome = "escalate";
    }
    return { taskHash: ctx.listing.task_hash, outcome, unsignedTx: unsignedCall(ctx.chain, wallet, "claimTimeout", [ctx.listing.task_hash]) };
  }

  /** Poster before the deadline, or worker before the deadline or within 3 days of a failed verdict. */
  async function dispute(wallet: string, taskHash: string): Promise<SettlementTx> {
    const ctx = await load(taskHash);
    const { status, deadline, worker, phase_at: phaseAt } = ctx.onChain;
    const isPoster = ctx.listing.poster === wallet;
    if (!isPoster && worker !== wallet) throw new MarketError("NOT_TASK_PARTY", "Only the poster or the worker can dispute.");
    if (status !== EscrowStatus.Assigned && status !== EscrowStatus.Submitted && status !== EscrowStatus.Failed) throw wrongState(ctx, "Disputing");
    const beforeDeadline = ctx.nowSeconds < deadline;
    const appealOpen = !isPoster && status === EscrowStatus.Failed && ctx.nowSeconds < (phaseAt ?? 0) + APPEAL_WINDOW_SECONDS;
    if (!beforeDeadline && !appealOpen) {
      throw new MarketError("DEADLINE_PASSED", isPoster ? "The poster disputes before the deadline." : "The deadline and the appeal window have passed.");
    }
    return { taskHash: ctx.listing.task_hash, outcome: "dispute", unsignedTx: unsignedCall(ctx.chain, wallet, "raiseDispute", [ctx.listing.task_hash]) };
  }

  /** Worker, 14 days after escalation without a ruling: payout with the fee. */
  async function releaseUnjudged(wallet: string, taskHash: string): Promise<SettlementTx> {
    const ctx = await load(taskHash);
    if (ctx.onChain.worker !== wallet) throw new MarketError("NOT_EXECUTOR");
    if (ctx.onChain.status !== EscrowStatus.Escalated) throw wrongState(ctx, "Releasing unjudged work");
    const opens = (ctx.onChain.phase_at ?? 0) + UNJUDGED_ESCALATION_SECONDS;
    if (ctx.nowSeconds < opens) throw new MarketError("DEADLINE_NOT_REACHED", `Escalated work is released from ${iso(opens)} unless the admin rules first.`);
    return { taskHash: ctx.listing.task_hash, outcome: "payout", unsignedTx: unsignedCall(ctx.chain, wallet, "releaseUnjudgedWork", [ctx.listing.task_hash]) };
  }

  /** Worker, before delivering anything: hands the task back; it is open again. */
  async function release(wallet: string, taskHash: string): Promise<SettlementTx> {
    const ctx = await load(taskHash);
    if (ctx.onChain.worker !== wallet) throw new MarketError("NOT_EXECUTOR");
    if (ctx.onChain.status !== EscrowStatus.Assigned) throw wrongState(ctx, "Releasing");
    return { taskHash: ctx.listing.task_hash, outcome: "reopen", unsignedTx: unsignedCall(ctx.chain, wallet, "releaseTask", [ctx.listing.task_hash]) };
  }

  return { cancel, claimTimeout, dispute, releaseUnjudged, release };
}
