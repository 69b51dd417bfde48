import type { Kysely } from "kysely";
import type { Database } from "../db/schema";
import type { Principal } from "../auth/principal";
import type { EventFeed } from "./feed";
import { lastCursor } from "./log";
import { readEvents, walletsOf } from "./replay";

/** One task's events as a caller may see them, to wait on (the SDK's `TaskWatch`, served in-process). */
export interface TaskEventWatch {
  readonly live: true;
  /** Resolves true at the task's next event after the last one waited for, false after `timeoutMs` or once closed. */
  next(timeoutMs: number): Promise<boolean>;
  close(): void;
}

/**
 * Watches of a task's events for the remote MCP endpoint's tools (`poll_task_result`'s `waitSeconds`, `rent_service`):
 * from the log's head when opened, filtered to what the principal may see, woken by the process's feed rather than
 * read again and again.
 */
export function createTaskWatches({ db, feed }: { db: Kysely<Database>; feed: EventFeed }) {
  return async function watchTask(principal: Pick<Principal, "wallet" | "accountId">, taskHash: string, chain: string): Promise<TaskEventWatch> {
    const wallets = await walletsOf(db, principal);
    let cursor = await lastCursor(db, chain);
    let closed = false;
    return {
      live: true,
      async next(timeoutMs) {
        const end = Date.now() + timeoutMs;
        while (!closed) {
          const { events, next } = await readEvents(db, { chain, after: cursor, wallets, taskHash }, 1);
          if (events.length > 0) {
            cursor = Number(events[0]!.cursor);
            return true;
          }
          cursor = next;
          const left = end - Date.now();
          if (left <= 0) return false;
          await feed.waitPast(chain, cursor, left);
        }
        return false;
      },
      close() {
        closed = true;
      },
    };
  };
}
