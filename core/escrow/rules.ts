/**
 * The escrow's preconditions (contracts/TaskEscrow.sol), each a pure function over the task as `getTask` reports it,
 * the escrow's pause, and the block time the call would be mined at. Each refusal is the contract's custom error with
 * its arguments, met in the contract's own order, so a caller learns exactly what the chain would answer; the property
 * test (test/escrow/invariants.test.ts) checks every prediction against the contract.
 */
import { Ending, EscrowStatus } from "./enums";
import type { TaskSnapshot } from "./task";
import { BPS_DENOMINATOR, MAX_SUBMISSIONS, RULING_WINDOW_SECONDS } from "../limits";

const ZERO_ADDRESS = "0x0000000000000000000000000000000000000000";
const ZERO_HASH = /^0x0*$/;

type NoArgs = Record<string, never>;

/** A custom error of the escrow that a task call can meet, with its arguments (times in seconds). */
export type EscrowRefusal =
  | { error: "EscrowPaused"; args: NoArgs }
  | { error: "TaskNotFound"; args: { taskHash: string } }
  | { error: "NotPoster" | "NotWorker" | "NotTaskVerifier" | "NotTaskParty"; args: { taskHash: string; caller: string } }
  | { error: "NotMarketplaceVerifier" | "NotAdmin"; args: { caller: string } }
  | { error: "InvalidStatus"; args: { taskHash: string; status: EscrowStatus } }
  | { error: "InvalidWorker"; args: { taskHash: string; worker: string } }
  | { error: "DeadlinePassed" | "DeadlineNotReached"; args: { taskHash: string; deadline: number } }
  | { error: "NoRoundsLeft"; args: { taskHash: string } }
  | { error: "ZeroResultHash"; args: NoArgs }
  | { error: "InvalidScore"; args: { score: number } }
  | { error: "AppealWindowClosed"; args: { taskHash: string; closedAt: number } }
  | { error: "WindowStillOpen"; args: { taskHash: string; opensAt: number } };

/** A precondition's answer: the call goes through (with what it will do), or the escrow's refusal. */
export type Check<T extends object = object> = ({ ok: true } & T) | { ok: false; refusal: EscrowRefusal };

const refuse = (refusal: EscrowRefusal): { ok: false; refusal: EscrowRefusal } => ({ ok: false, refusal });

/** The task calls, by their names in the contract. */
export type TaskCall =
  | "cancelTask"
  | "assignWorker"
  | "marketplaceAssign"
  | "releaseTask"
  | "submitEvidence"
  | "completeVerification"
  | "raiseDispute"
  | "resolveDispute"
  | "claimTimeout"
  | "releaseUnjudgedWork";

/** The most tasks one `createTasks` funds (the escrow's `maxBatch()`; `InvalidBatchSize` above it). */
export const MAX_BATCH = 20;

/** The largest amount a task holds: the escrow stores it in 96 bits (`AmountTooLarge` above it). */
export const MAX_TASK_AMOUNT = (1n << 96n) - 1n;

/** The statuses each call acts on; in any other it meets `InvalidStatus`. */
export const STATUSES_FOR: Readonly<Record<TaskCall, readonly EscrowStatus[]>> = {
  cancelTask: [EscrowStatus.Funded],
  assignWorker: [EscrowStatus.Funded],
  marketplaceAssign: [EscrowStatus.Funded],
  releaseTask: [EscrowStatus.Assigned],
  submitEvidence: [EscrowStatus.Assigned, EscrowStatus.Failed],
  completeVerification: [EscrowStatus.Submitted],
  raiseDispute: [EscrowStatus.Assigned, EscrowStatus.Submitted, EscrowStatus.Failed],
  resolveDispute: [EscrowStatus.Disputed, EscrowStatus.Escalated],
  claimTimeout: [EscrowStatus.Funded, EscrowStatus.Assigned, EscrowStatus.Submitted, EscrowStatus.Failed, EscrowStatus.Disputed],
  releaseUnjudgedWork: [EscrowStatus.Escalated],
};

export function actsOn(call: TaskCall, status: EscrowStatus): boolean {
  return STATUSES_FOR[call].includes(status);
}

/** Addresses compare as the contract compares them: by value, whatever their case; none is the zero address. */
export function sameAddress(a: string | null | undefined, b: string | null | undefined): boolean {
  return (a ?? ZERO_ADDRESS).toLowerCase() === (b ?? ZERO_ADDRESS).toLowerCase();
}

/** What every live call reads first: the pause, then whether the task exists. */
function live(task: TaskSnapshot | undefined, taskHash: string, paused: boolean): TaskSnapshot | { ok: false; refusal: EscrowRefusal } {
  if (paused) return refuse({ error: "EscrowPaused", args: {} });
  return task ?? refuse({ error: "TaskNotFound", args: { taskHash } });
}

const invalidStatus = (task: TaskSnapshot) => refuse({ error: "InvalidStatus", args: { taskHash: task.taskHash, status: task.status } });

/** Who calls, and (for calls that read time) the block time the call would be mined at, in seconds. */
export interface Caller {
  caller: string;
  /** Whether the escrow is paused: every call but a ruling is refused. */
  paused: boolean;
}
export interface TimedCaller extends Caller {
  now: number;
}

/**
 * A task is open (listed, takeable) while it is Funded and before its deadline: after it only a cancel or a claim
 * ends it. The SQL of browsing states the same rule through `openTaskFilter`.
 */
export function isOpen(task: { status: number; deadline: number }, now: number): boolean {
  return task.status === EscrowStatus.Funded && now < task.deadline;
}

/** `isOpen` as a filter for SQL: `status = status AND deadline > deadlineAfter`. */
export function openTaskFilter(now: number): { status: EscrowStatus; deadlineAfter: number } {
  return { status: EscrowStatus.Funded, deadlineAfter: now };
}

/** `cancelTask`: the poster, while the task is Funded (also past its deadline); 100% back. */
export function canCancel(task: TaskSnapshot | undefined, call: Caller & { taskHash: string }): Check {
  const t = live(task, call.taskHash, call.paused);
  if ("ok" in t) return t;
  if (!sameAddress(call.caller, t.poster)) return refuse({ error: "NotPoster", args: { taskHash: t.taskHash, caller: call.caller } });
  if (!actsOn("cancelTask", t.status)) return invalidStatus(t);
  return { ok: true };
}

/**
 * `assignWorker` (the poster) and `marketplaceAssign` (the marketplace verifier): while Funded and before the
 * deadline, a worker other than zero, the poster, the task's verifier agent and the marketplace verifier.
 */
export function canAssign(
  task: TaskSnapshot | undefined,
  call: TimedCaller & { taskHash: string; worker: string; by: "poster" | "marketplace"; marketplaceVerifier: string },
): Check {
  const { caller, taskHash } = call;
  if (call.by === "marketplace" && !sameAddress(caller, call.marketplaceVerifier)) {
    return refuse({ error: "NotMarketplaceVerifier", args: { caller } });
  }
  if (!task) return refuse({ error: "TaskNotFound", args: { taskHash } });
  if (call.by === "poster" && !sameAddress(caller, task.poster)) return refuse({ error: "NotPoster", args: { taskHash, caller } });
  if (call.paused) return refuse({ error: "EscrowPaused", args: {} });
  if (!actsOn("assignWorker", task.status)) return invalidStatus(task);
  if (call.now >= task.deadline) return refuse({ error: "DeadlinePassed", args: { taskHash, deadline: task.deadline } });
  const w = call.worker;
  if (sameAddress(w, null) || sameAddress(w, task.poster) || sameAddress(w, task.verifier) || sameAddress(w, call.marketplaceVerifier)) {
    return refuse({ error: "InvalidWorker", args: { taskHash, worker: w } });
  }
  return { ok: true };
}

/** `releaseTask`: the worker hands back a task it has not delivered for; the task is open again. */
export function canRelease(task: TaskSnapshot | undefined, call: Caller & { taskHash: string }): Check {
  const t = live(task, call.taskHash, call.paused);
  if ("ok" in t) return t;
  if (!sameAddress(call.caller, t.worker)) return refuse({ error: "NotWorker", args: { taskHash: t.taskHash, caller: call.caller } });
  if (!actsOn("releaseTask", t.status)) return invalidStatus(t);
  return { ok: true };
}

/**
 * `submitEvidence`: the worker, while Assigned or after a failed round, before the deadline, with a round left;
 * `resultHash`, when given, must not be zero. Answers the round the evidence will be.
 */
export function canDeliver(task: TaskSnapshot | undefined, call: TimedCaller & { taskHash: string; resultHash?: string }): Check<{ round: number }> {
  const t = live(task, call.taskHash, call.paused);
  if ("ok" in t) return t;
  const { taskHash } = t;
  if (!sameAddress(call.caller, t.worker)) return refuse({ error: "NotWorker", args: { taskHash, caller: call.caller } });
  if (!actsOn("submitEvidence", t.status)) return invalidStatus(t);
  if (call.now >= t.deadline) return refuse({ error: "DeadlinePassed", args: { taskHash, deadline: t.deadline } });
  if (t.rounds >= MAX_SUBMISSIONS) return refuse({ error: "NoRoundsLeft", args: { taskHash } });
  if (call.resultHash !== undefined && ZERO_HASH.test(call.resultHash)) return refuse({ error: "ZeroResultHash", args: {} });
  return { ok: true, round: t.rounds + 1 };
}

/**
 * Evidence rounds the worker may still submit: 3 minus the rounds used while the task is Assigned, Submitted (a
 * round awaiting its verdict counts as used) or Failed, before its deadline; none otherwise (ended, in dispute,
 * escalated, or past the deadline).
 */
export function roundsLeft(task: { status: number; rounds: number; deadline: number }, now: number): number {
  const working: readonly number[] = [EscrowStatus.Assigned, EscrowStatus.Submitted, EscrowStatus.Failed];
  return working.includes(task.status) ? roundsUnused(task, now) : 0;
}

/**
 * The rounds of `MAX_SUBMISSIONS` a task's worker has not used, while its deadline has not passed (none after it: no
 * evidence is taken then, `DeadlinePassed`); what a round's answer reports (`finalize`), whatever the verdict did to
 * the task's status. `roundsLeft` is this while the worker still works the task.
 */
export function roundsUnused(task: { rounds: number; deadline: number }, now: number): number {
  return now >= task.deadline ? 0 : Math.max(0, MAX_SUBMISSIONS - task.rounds);
}

/** Who judges the task: its verifier agent, else the marketplace verifier. */
export function judgeOf(task: Pick<TaskSnapshot, "verifier">, marketplaceVerifier: string): string {
  return task.verifier ?? marketplaceVerifier;
}

/** `completeVerification`: the task's judge (`judgeOf`), while Submitted, with a score of at most 100. */
export function canVerify(task: TaskSnapshot | undefined, call: Caller & { taskHash: string; marketplaceVerifier: string; score?: number }): Check {
  const t = live(task, call.taskHash, call.paused);
  if ("ok" in t) return t;
  if (!sameAddress(call.caller, judgeOf(t, call.marketplaceVerifier))) {
    return refuse({ error: "NotTaskVerifier", args: { taskHash: t.taskHash, caller: call.caller } });
  }
  if (!actsOn("completeVerification", t.status)) return invalidStatus(t);
  if (call.score !== undefined && call.score > 100) return refuse({ error: "InvalidScore", args: { score: call.score } });
  return { ok: true };
}

/**
 * `raiseDispute`, while Assigned, Submitted or Failed: the poster before the deadline; the worker before the deadline,
 * or after a failed verdict until its appeal window ends (`windowEndsAt`, never before the deadline).
 */
export function canDispute(task: TaskSnapshot | undefined, call: TimedCaller & { taskHash: string }): Check<{ by: "poster" | "worker" }> {
  const t = live(task, call.taskHash, call.paused);
  if ("ok" in t) return t;
  const { taskHash, deadline } = t;
  if (!actsOn("raiseDispute", t.status)) return invalidStatus(t);
  const beforeDeadline = call.now < deadline;
  if (sameAddress(call.caller, t.worker)) {
    if (t.status === EscrowStatus.Failed) {
      if (call.now >= t.windowEndsAt) return refuse({ error: "AppealWindowClosed", args: { taskHash, closedAt: t.windowEndsAt } });
    } else if (!beforeDeadline) {
      return refuse({ error: "DeadlinePassed", args: { taskHash, deadline } });
    }
    return { ok: true, by: "worker" };
  }
  if (sameAddress(call.caller, t.poster)) {
    if (!beforeDeadline) return refuse({ error: "DeadlinePassed", args: { taskHash, deadline } });
    return { ok: true, by: "poster" };
  }
  return refuse({ error: "NotTaskParty", args: { taskHash, caller: call.caller } });
}

/** `resolveDispute`: the admin rules on a disputed or escalated task, also while the escrow is paused. */
export function canResolve(task: TaskSnapshot | undefined, call: { caller: string; admin: string; taskHash: string }): Check {
  if (!sameAddress(call.caller, call.admin)) return refuse({ error: "NotAdmin", args: { caller: call.caller } });
  if (!task) return refuse({ error: "TaskNotFound", args: { taskHash: call.taskHash } });
  if (!actsOn("resolveDispute", task.status)) return invalidStatus(task);
  return { ok: true };
}

/**
 * What `claimTimeout` does to the task and when it opens: a refund (`ending`) or the escalation of delivered work
 * nobody judged. It opens at the deadline; after a failed verdict at the end of the appeal window, under dispute at
 * the end of the ruling window (`windowEndsAt`). `InvalidStatus` for a task no claim will ever end.
 */
export type ClaimOutcome = { outcome: "refund"; ending: Ending; opensAt: number } | { outcome: "escalate"; opensAt: number };

export function claimOutcome(task: TaskSnapshot): Check<ClaimOutcome> {
  switch (task.status) {
    case EscrowStatus.Funded:
    case EscrowStatus.Assigned:
      return { ok: true, outcome: "refund", ending: Ending.NeverDelivered, opensAt: task.deadline };
    case EscrowStatus.Failed:
      return { ok: true, outcome: "refund", ending: Ending.FailedUnfixed, opensAt: task.windowEndsAt };
    case EscrowStatus.Disputed:
      return { ok: true, outcome: "refund", ending: Ending.DisputeUnruled, opensAt: task.windowEndsAt };
    case EscrowStatus.Submitted:
      return { ok: true, outcome: "escalate", opensAt: task.deadline };
    default:
      return invalidStatus(task);
  }
}

/**
 * `claimTimeout`: the poster, from the deadline on, once the claim opens (`claimOutcome`). An escalation answers when
 * the worker may release the work (`releasableAt`) unless the admin rules first.
 */
export function canClaim(
  task: TaskSnapshot | undefined,
  call: TimedCaller & { taskHash: string },
): Check<{ outcome: "refund"; ending: Ending } | { outcome: "escalate"; releasableAt: number }> {
  const t = live(task, call.taskHash, call.paused);
  if ("ok" in t) return t;
  const { taskHash } = t;
  if (!sameAddress(call.caller, t.poster)) return refuse({ error: "NotPoster", args: { taskHash, caller: call.caller } });
  if (call.now < t.deadline) return refuse({ error: "DeadlineNotReached", args: { taskHash, deadline: t.deadline } });
  const claim = claimOutcome(t);
  if (!claim.ok) return claim;
  if (call.now < claim.opensAt) return refuse({ error: "WindowStillOpen", args: { taskHash, opensAt: claim.opensAt } });
  return claim.outcome === "refund"
    ? { ok: true, outcome: "refund", ending: claim.ending }
    : { ok: true, outcome: "escalate", releasableAt: call.now + RULING_WINDOW_SECONDS };
}

/** When the worker may release escalated work (the escalation's ruling window ends), unless the admin rules first. */
export function unjudgedReleasableAt(task: Pick<TaskSnapshot, "windowEndsAt">): number {
  return task.windowEndsAt;
}

/** `releaseUnjudgedWork`: the worker, on an escalated task, once the ruling window ends; paid as a verified task. */
export function canReleaseUnjudged(task: TaskSnapshot | undefined, call: TimedCaller & { taskHash: string }): Check {
  const t = live(task, call.taskHash, call.paused);
  if ("ok" in t) return t;
  const { taskHash } = t;
  if (!sameAddress(call.caller, t.worker)) return refuse({ error: "NotWorker", args: { taskHash, caller: call.caller } });
  if (!actsOn("releaseUnjudgedWork", t.status)) return invalidStatus(t);
  const opensAt = unjudgedReleasableAt(t);
  if (call.now < opensAt) return refuse({ error: "WindowStillOpen", args: { taskHash, opensAt } });
  return { ok: true };
}

/** Every payout: the fee, read at payout and rounded down, to the treasury; the rest to the worker. */
export function payoutSplit(amount: bigint, feeBps: number | bigint): { fee: bigint; payout: bigint } {
  const fee = (amount * BigInt(feeBps)) / BigInt(BPS_DENOMINATOR);
  return { fee, payout: amount - fee };
}
