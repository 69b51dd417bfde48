import type { Transaction } from "kysely";
import type { Database } from "../db/schema";
import type { ChainEvent } from "./events";

/**
 * A read model built from the escrow's events. The indexer calls `apply` with each new range's events inside the
 * transaction that stores them and moves the cursor, and `rollback` with the events a reorg removed inside the
 * transaction that deletes them, so a projection is always exactly as far as the cursor.
 *
 * Other domains (reputation, offers, ...) add their own projection to the list given to `createIndexer`.
 */
export interface Projection {
  /** Names the projection in logs and errors. */
  name: string;
  /** New events of `chain`, in chain order (block, then log index), already stored in escrow_events. */
  apply(trx: Transaction<Database>, chain: string, events: readonly ChainEvent[]): Promise<void>;
  /**
   * Events of `chain` a reorg removed, in chain order; they are already deleted from escrow_events, so what remains
   * there is the canonical history up to the common ancestor. Projections are rolled back in reverse list order.
   */
  rollback(trx: Transaction<Database>, chain: string, removed: readonly ChainEvent[]): Promise<void>;
}
