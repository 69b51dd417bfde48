import type { Projection } from "../indexer/projection";
import { compensationsOf, draftsOf, listedOnIndexing } from "./derive";
import { appendEvents, holdLog } from "./log";

/**
 * The event log as a projection of the escrow's events: the indexer calls it inside the transaction that stores a
 * batch (after the task projection, whose rows give each event its audience) and inside the transaction that rolls a
 * reorg back (before the task projection is undone), so an event exists exactly when the API shows its change, and a
 * reorg appends compensating events rather than deleting what a client may have seen.
 */
export function createEventLogProjection(options: { now?: () => number } = {}): Projection {
  const now = options.now ?? Date.now;
  return {
    name: "event-log",
    async apply(trx, chain, events) {
      // The log first: a listing committing meanwhile is then seen by listedOnIndexing, or sees this batch's tasks.
      if (events.some((e) => e.event === "TaskCreated")) await holdLog(trx, chain);
      const drafts = await draftsOf(trx, chain, events);
      await appendEvents(trx, chain, [...drafts, ...(await listedOnIndexing(trx, chain, events))], now());
    },
    async rollback(trx, chain, removed) {
      await appendEvents(trx, chain, await compensationsOf(trx, chain, removed), now());
    },
  };
}
