/** A clock for the worker runtime whose time moves only when a test says; timers fire in time order. */
import type { Clock } from "../../sdk/src/runtime";

export class FakeClock implements Clock {
  time = 0;
  private next = 1;
  private timers: Array<{ id: number; at: number; run: () => void }> = [];
  now() {
    return this.time;
  }
  setTimeout(run: () => void, ms: number) {
    const id = this.next++;
    this.timers.push({ id, at: this.time + ms, run });
    return id;
  }
  clearTimeout(handle: unknown) {
    this.timers = this.timers.filter((t) => t.id !== handle);
  }
  /** Timers set and not yet fired or cleared. */
  get pendingTimers(): number {
    return this.timers.length;
  }
  /** Runs every timer due up to `target`, letting promises settle after each. */
  async advanceTo(target: number) {
    for (;;) {
      await settle();
      const due = this.timers.filter((t) => t.at <= target).sort((a, b) => a.at - b.at || a.id - b.id)[0];
      if (!due) break;
      this.timers = this.timers.filter((t) => t !== due);
      this.time = due.at;
      due.run();
    }
    this.time = target;
    await settle();
  }
}

/** Lets pending promise callbacks run. */
export async function settle() {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
}
