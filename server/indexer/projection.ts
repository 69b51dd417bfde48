import type { Kysely, Transaction } from "kysely";
import type { Database } from "../db/schema";
import type { ChainEvent } from "./events";
import type { RegistryLog } from "@market/core/registries";

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
  /** Escrow projections leave it out. */
  source?: "escrow";
  /** Called once before the first range is stored, outside any transaction (to compile statements, say). */
  prepare?(db: Kysely<Database>): void;
  /** New events of `chain`, in chain order (block, then log index), already stored in escrow_events. */
  apply(trx: Transaction<Database>, chain: string, events: readonly ChainEvent[]): Promise<void>;
  /**
   * Events of `chain` a reorg removed, in chain order; they are already deleted from escrow_events, so what remains
   * there is the canonical history up to the common ancestor. Projections are rolled back in reverse list order.
   */
  rollback(trx: Transaction<Database>, chain: string, removed: readonly ChainEvent[]): Promise<void>;
}

/**
 * A read model built from the events of the registries beside the escrow (identity, reputation), with the same
 * contract as `Projection`: `apply` with a range's kept registry logs (already in registry_events), `rollback` with
 * those a reorg removed (already deleted from registry_events), in the transactions that move the cursor.
 */
export interface RegistryProjection {
  name: string;
  source: "registries";
  apply(trx: Transaction<Database>, chain: string, events: readonly RegistryLog[]): Promise<void>;
  rollback(trx: Transaction<Database>, chain: string, removed: readonly RegistryLog[]): Promise<void>;
}

/** Any projection an indexer feeds. */
export type AnyProjection = Projection | RegistryProjection;

export function isRegistryProjection(projection: AnyProjection): projection is RegistryProjection {
  return projection.source === "registries";
}
