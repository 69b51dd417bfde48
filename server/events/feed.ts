import type { Kysely } from "kysely";
import type { Database } from "../db/schema";

/**
 * Tells this process's readers (SSE streams, webhook senders) when a chain's log has grown: one query of the log
 * heads every `pollMs`, whichever process or thread appended, instead of one query per reader. A reader then reads
 * its own page from its own cursor.
 */
export interface EventFeed {
  /** Resolves once the chain's head passes `cursor`, or after `timeoutMs`, or at close; answers the head known. */
  waitPast(chain: string, cursor: number, timeoutMs: number): Promise<number>;
  /** Resolves once any chain's head moves past what this feed last saw, or after `timeoutMs`, or at close. */
  waitForGrowth(timeoutMs: number): Promise<void>;
  /** The last head seen for `chain`. */
  head(chain: string): number;
  close(): void;
}

export function createEventFeed({ db, pollMs = 50 }: { db: Kysely<Database>; pollMs?: number }): EventFeed {
  const heads = new Map<string, number>();
  const waiters = new Set<{ chain: string; cursor: number; done: (head: number) => void }>();
  const growthWaiters = new Set<() => void>();
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  let polling = false;

  async function poll() {
    if (polling || closed) return;
    polling = true;
    try {
      const rows = await db.selectFrom("event_heads").select(["chain", "seq"]).execute();
      let grew = false;
      for (const row of rows) {
        if (Number(row.seq) > (heads.get(row.chain) ?? 0)) grew = true;
        heads.set(row.chain, Number(row.seq));
      }
      if (grew) for (const waiter of growthWaiters) waiter();
      for (const waiter of waiters) if ((heads.get(waiter.chain) ?? 0) > waiter.cursor) waiter.done(heads.get(waiter.chain)!);
    } catch {
      // The next poll tries again; readers time out and read anyway.
    } finally {
      polling = false;
    }
  }

  function schedule() {
    if (!timer && !closed && waiters.size + growthWaiters.size > 0) {
      timer = setInterval(() => {
        if (waiters.size === 0 && growthWaiters.size === 0) {
          clearInterval(timer);
          timer = undefined;
          return;
        }
        void poll();
      }, pollMs);
      timer.unref();
    }
  }

  return {
    waitPast(chain, cursor, timeoutMs) {
      if (closed) return Promise.resolve(heads.get(chain) ?? 0);
      return new Promise((resolve) => {
        const waiter = {
          chain,
          cursor,
          done: (head: number) => {
            clearTimeout(timeout);
            waiters.delete(waiter);
            resolve(head);
          },
        };
        const timeout = setTimeout(() => waiter.done(heads.get(chain) ?? 0), timeoutMs);
        waiters.add(waiter);
        schedule();
      });
    },
    waitForGrowth(timeoutMs) {
      if (closed) return Promise.resolve();
      return new Promise((resolve) => {
        const done = () => {
          clearTimeout(timeout);
          growthWaiters.delete(done);
          resolve();
        };
        const timeout = setTimeout(done, timeoutMs);
        growthWaiters.add(done);
        schedule();
      });
    },
    head: (chain) => heads.get(chain) ?? 0,
    close() {
      closed = true;
      if (timer) clearInterval(timer);
      timer = undefined;
      for (const waiter of [...waiters]) waiter.done(heads.get(waiter.chain) ?? 0);
      for (const waiter of [...growthWaiters]) waiter();
    },
  };
}
