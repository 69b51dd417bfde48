import type { Clock } from "./schedule";

/** The longest delay one timer takes (setTimeout overflows past 2^31-1 ms, about 24.8 days; a deadline may be 90 days off). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Calls `run` once `ms` have passed on the clock, chaining timers past the longest one; answers a cancel function. */
export function after(clock: Clock, ms: number, run: () => void): () => void {
  const end = clock.now() + ms;
  let handle: unknown;
  const arm = () => {
    handle = clock.setTimeout(
      () => {
        handle = undefined;
        if (end > clock.now()) arm();
        else run();
      },
      Math.max(0, Math.min(end - clock.now(), MAX_TIMER_MS)),
    );
  };
  arm();
  return () => {
    if (handle !== undefined) clock.clearTimeout(handle);
    handle = undefined;
  };
}

/** Resolves once `ms` have passed on the clock, or at once when `signal` aborts. */
export function sleep(clock: Clock, ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      cancel();
      signal.removeEventListener("abort", done);
      resolve();
    };
    const cancel = after(clock, ms, done);
    signal.addEventListener("abort", done);
  });
}

/** `work`'s outcome, or a rejection with `signal.reason` as soon as `signal` aborts (the work runs on, ignored). */
export function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const aborted = () => reject(signal.reason as Error);
    signal.addEventListener("abort", aborted, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener("abort", aborted);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", aborted);
        reject(error);
      },
    );
  });
}
