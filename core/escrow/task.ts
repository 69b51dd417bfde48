import { Ending, EscrowStatus, toEnding, toEscrowStatus } from "./enums";
import type { EscrowLog } from "./events";
import { APPEAL_WINDOW_SECONDS, RULING_WINDOW_SECONDS } from "../limits";

const ZERO_ADDRESS = "0x0000000000000000000000000000000000000000";

/**
 * A task as the escrow reports it (`getTask`), which is everything its preconditions read. Times are block-time
 * seconds and already include every finished pause; `windowEndsAt` is 0 outside Failed, Disputed and Escalated.
 */
export interface TaskSnapshot {
  taskHash: string;
  poster: string;
  /** Null while the task has no worker. */
  worker: string | null;
  /** The task's verifier agent; null when the marketplace verifier judges. */
  verifier: string | null;
  status: EscrowStatus;
  /** Evidence rounds used. */
  rounds: number;
  deadline: number;
  /** Failed: end of the worker's appeal and opening of the claim; Disputed: unruled-claim opening; Escalated: release opening. */
  windowEndsAt: number;
}

/** A task as the escrow's events project it: what the indexer keeps (one escrow_tasks row). */
export interface ProjectedTask {
  chain: string;
  taskHash: string;
  poster: string;
  token: string;
  /** Raw units, fixed at funding. */
  amount: bigint;
  verifier: string | null;
  worker: string | null;
  /**
   * Who assigned the current worker (WorkerAssigned.assignedBy): the poster for `assignWorker`, the marketplace
   * verifier for `marketplaceAssign`; null while the task has no worker.
   */
  assignedBy: string | null;
  /** Seconds, moved by every finished pause. */
  deadline: number;
  status: EscrowStatus;
  rounds: number;
  ending: Ending;
  resultHash: string | null;
  /** Seconds: latest failed verdict, dispute or escalation, moved by every finished pause. */
  phaseAt: number | null;
  lastScore: number | null;
  payout: bigint | null;
  fee: bigint | null;
  createdBlock: number;
  createdTx: string;
  updatedBlock: number;
}

/** The escrow-wide state every task call reads, as its events project it. */
export interface EscrowState {
  /** Block time the current pause began; null when live. */
  pausedAt: number | null;
  /** Seconds of every finished pause. */
  totalPaused: number;
  feeBps: number;
}

/**
 * When the task's current window ends, as the escrow's `getTask` reports it: a failed verdict's appeal and a
 * dispute's ruling window never end before the deadline; an escalation's runs from the escalation.
 */
export function windowEndsAt(task: Pick<ProjectedTask, "status" | "deadline" | "phaseAt">): number {
  const phaseAt = task.phaseAt ?? 0;
  switch (task.status) {
    case EscrowStatus.Failed:
      return Math.max(phaseAt + APPEAL_WINDOW_SECONDS, task.deadline);
    case EscrowStatus.Disputed:
      return Math.max(phaseAt + RULING_WINDOW_SECONDS, task.deadline);
    case EscrowStatus.Escalated:
      return phaseAt + RULING_WINDOW_SECONDS;
    default:
      return 0;
  }
}

/** What the preconditions read of a projected task. */
export function snapshotOf(task: ProjectedTask): TaskSnapshot {
  return {
    taskHash: task.taskHash,
    poster: task.poster,
    worker: task.worker,
    verifier: task.verifier,
    status: task.status,
    rounds: task.rounds,
    deadline: task.deadline,
    windowEndsAt: windowEndsAt(task),
  };
}

/** The escrow's own view of a task (`getTask`, as the bindings return it). */
export interface TaskView {
  poster: string;
  worker: string;
  verifier: string;
  deadline: bigint;
  windowEndsAt: bigint;
  status: bigint;
  rounds: bigint;
}

/** A snapshot from the escrow's `getTask`; undefined when no task was funded under the hash. */
export function snapshotFromView(taskHash: string, view: TaskView): TaskSnapshot | undefined {
  if (view.poster === ZERO_ADDRESS) return undefined;
  return {
    taskHash,
    poster: view.poster,
    worker: view.worker === ZERO_ADDRESS ? null : view.worker,
    verifier: view.verifier === ZERO_ADDRESS ? null : view.verifier,
    status: toEscrowStatus(view.status),
    rounds: Number(view.rounds),
    deadline: Number(view.deadline),
    windowEndsAt: Number(view.windowEndsAt),
  };
}

/**
 * The task a single event leaves behind: the one rule of the projection, used both when events arrive and when a
 * reorg rebuilds a task from its remaining events. Returns the same object when the event changes nothing.
 */
export function applyTaskEvent(task: ProjectedTask | undefined, log: EscrowLog): ProjectedTask | undefined {
  if (log.event === "TaskCreated") {
    const a = log.args;
    return {
      chain: log.chain,
      taskHash: a.taskHash,
      poster: a.poster,
      token: a.token,
      amount: BigInt(a.amount),
      verifier: a.verifier === ZERO_ADDRESS ? null : a.verifier,
      worker: null,
      assignedBy: null,
      deadline: Number(a.deadline),
      status: EscrowStatus.Funded,
      rounds: 0,
      ending: Ending.None,
      resultHash: null,
      phaseAt: null,
      lastScore: null,
      payout: null,
      fee: null,
      createdBlock: log.blockNumber,
      createdTx: log.txHash,
      updatedBlock: log.blockNumber,
    };
  }
  // Without its TaskCreated the task started before the indexer's start block: nothing to update.
  if (!task) return task;
  const update = (changes: Partial<ProjectedTask>): ProjectedTask => ({ ...task, ...changes, updatedBlock: log.blockNumber });
  switch (log.event) {
    case "WorkerAssigned":
      // assignedBy tells a marketplace assignment (the verifier key) from the poster's own `assignWorker`.
      return update({ worker: log.args.worker, assignedBy: log.args.assignedBy, status: EscrowStatus.Assigned });
    case "WorkerReleased":
      // The worker handed the task back before delivering: open (Funded) again, assigned by no one.
      return update({ worker: null, assignedBy: null, status: EscrowStatus.Funded });
    case "EvidenceSubmitted":
      return update({ status: EscrowStatus.Submitted, rounds: Number(log.args.round), resultHash: log.args.resultHash });
    case "VerificationCompleted":
      // A pass is followed by TaskCompleted in the same transaction, which sets the status.
      return log.args.passed
        ? update({ lastScore: Number(log.args.score) })
        : update({ lastScore: Number(log.args.score), status: EscrowStatus.Failed, phaseAt: log.blockTime });
    case "DisputeRaised":
      return update({ status: EscrowStatus.Disputed, phaseAt: log.blockTime });
    case "UnjudgedWorkEscalated":
      return update({ status: EscrowStatus.Escalated, phaseAt: log.blockTime });
    case "TaskCompleted": {
      const ending = toEnding(log.args.ending);
      return update({
        status: ending === Ending.VerificationPassed ? EscrowStatus.Verified : EscrowStatus.Paid,
        ending,
        payout: BigInt(log.args.payout),
        fee: BigInt(log.args.fee),
      });
    }
    case "TaskCancelled":
      return update({ status: EscrowStatus.Cancelled, ending: toEnding(log.args.ending) });
    case "DeadlineExpired":
      return update({ status: EscrowStatus.Refunded, ending: toEnding(log.args.ending) });
    case "TaskRefunded":
      return update({ status: EscrowStatus.Refunded, ending: toEnding(log.args.ending) });
    default:
      // DisputeResolved: the ending event of the same transaction carries the change.
      return task;
  }
}

/**
 * A finished pause moves every live deadline and window by its length, as the escrow's views project them. Ended
 * tasks keep the times they ended with.
 */
export function shiftForPause(task: ProjectedTask | undefined, pausedFor: number): ProjectedTask | undefined {
  if (!task || task.ending !== Ending.None) return task;
  return { ...task, deadline: task.deadline + pausedFor, phaseAt: task.phaseAt === null ? null : task.phaseAt + pausedFor };
}

/** The escrow-wide state an event leaves behind; the same object for an event that does not change it. */
export function applyStateEvent(state: EscrowState | undefined, log: EscrowLog): EscrowState | undefined {
  const current = state ?? { pausedAt: null, totalPaused: 0, feeBps: 0 };
  switch (log.event) {
    case "FeeUpdated":
      return { ...current, feeBps: Number(log.args.feeBps) };
    case "EscrowPausedAt":
      return { ...current, pausedAt: Number(log.args.at) };
    case "EscrowUnpaused":
      return { ...current, pausedAt: null, totalPaused: Number(log.args.totalPaused) };
    default:
      return state;
  }
}
