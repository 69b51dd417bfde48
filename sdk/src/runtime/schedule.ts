import {
  BELOW_MIN_REWARD_SKIP_MS,
  NEEDS_WRAP_FAST_RETRY_WINDOW_MS,
  NEEDS_WRAP_MAX_BACKOFF_MS,
  NEEDS_WRAP_RETRY_INTERVAL_MS,
} from "@market/core/limits";
import { isRetryableCode } from "../errors";

/** Timers the runtime uses; tests pass a fake clock. */
export interface Clock {
  now(): number;
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** Real timers. They keep the process alive while the runtime runs (a worker script is just `start()`); stop() clears them. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms),
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

/** How soon an accept whose answer was lost is asked again. */
export const TRANSIENT_RETRY_MS = 5_000;

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

export function planAfterRefusal(
  code: string,
  now: number,
  wrap: WrapState | undefined,
  details?: ReadonlyArray<Record<string, unknown>>,
): AcceptPlan {
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
    case "NETWORK_ERROR":
    case "TX_PENDING":
      // The assignment may have gone through with its answer lost (or not be confirmed yet): the task no longer shows
      // in a browse, so ask again directly; the service answers a holder the same assignment, anyone else NOT_OPEN.
      return { kind: "retry", afterMs: TRANSIENT_RETRY_MS };
    default:
      // Transient (ACCEPT_IN_PROGRESS, TX_PENDING, RATE_LIMITED, INTERNAL_ERROR, a proxy's 5xx...): the next browse
      // tries again. Anything else (NOT_OPEN, NOT_TARGET_EXECUTOR, CHAIN_UNSUPPORTED, OWN_TASK...): not this agent's task.
      return isRetryableCode(code) ? { kind: "next-browse" } : { kind: "drop" };
  }
}
