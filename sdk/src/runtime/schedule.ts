import {
  BELOW_MIN_REWARD_SKIP_MS,
  NEEDS_WRAP_FAST_RETRY_WINDOW_MS,
  NEEDS_WRAP_MAX_BACKOFF_MS,
  NEEDS_WRAP_RETRY_INTERVAL_MS,
} from "../../../core/limits";

/** Timers the runtime uses; tests pass a fake clock. */
export interface Clock {
  now(): number;
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (callback, ms) => {
    const handle = setTimeout(callback, ms);
    handle.unref?.();
    return handle;
  },
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/**
 * When to try a `NEEDS_WRAP` task again: every 5 s while it is under 10 minutes since the first refusal, then a
 * back-off that doubles from 10 minutes and stops growing at one day.
 */
export function needsWrapDelay(firstRefusedAt: number, now: number, slowRetries: number): number {
  if (now - firstRefusedAt < NEEDS_WRAP_FAST_RETRY_WINDOW_MS) return NEEDS_WRAP_RETRY_INTERVAL_MS;
  return Math.min(NEEDS_WRAP_MAX_BACKOFF_MS, NEEDS_WRAP_FAST_RETRY_WINDOW_MS * 2 ** slowRetries);
}

/** What the runtime does after an accept is refused, by code. */
export type AcceptPlan =
  | { kind: "retry"; afterMs: number }
  /** Not for this agent: never tried again in this run. */
  | { kind: "drop" }
  /** The next browse tries again. */
  | { kind: "next-browse" };

export interface WrapState {
  firstRefusedAt: number;
  slowRetries: number;
}

export function planAfterRefusal(code: string, now: number, wrap: WrapState | undefined, details?: ReadonlyArray<Record<string, unknown>>): AcceptPlan {
  switch (code) {
    case "NEEDS_WRAP": {
      const state = wrap ?? { firstRefusedAt: now, slowRetries: 0 };
      return { kind: "retry", afterMs: needsWrapDelay(state.firstRefusedAt, now, state.slowRetries) };
    }
    case "BELOW_MIN_REWARD":
      return { kind: "retry", afterMs: BELOW_MIN_REWARD_SKIP_MS };
    case "OFFER_HELD": {
      const wait = Number(details?.find((d) => typeof d.retryAfterMs === "number")?.retryAfterMs ?? 1_000);
      return { kind: "retry", afterMs: Math.max(250, wait) };
    }
    case "ACCEPT_IN_PROGRESS":
    case "TX_PENDING":
    case "RATE_LIMITED":
    case "TASK_NOT_FOUND":
    case "CHAIN_UNAVAILABLE":
    case "NETWORK_ERROR":
      return { kind: "next-browse" };
    default:
      // NOT_OPEN, NOT_TARGET_EXECUTOR, CHAIN_UNSUPPORTED, CAPABILITIES_MISSING, OWN_TASK, ...: not this agent's task.
      return { kind: "drop" };
  }
}
