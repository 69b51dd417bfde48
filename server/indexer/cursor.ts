import type { Insertable, Kysely, Transaction } from "kysely";
import type { Database, IndexedBlocksTable } from "../db/schema";
import { everyColumn, rowStatement } from "./row-statements";

type Executor = Kysely<Database> | Transaction<Database>;

/** The last block whose logs are fully indexed. */
export interface Cursor {
  number: number;
  hash: string;
}

/** A block header as the indexer keeps it. */
export interface BlockRef {
  number: number;
  hash: string;
  parentHash: string;
  /** Seconds. */
  timestamp: number;
}

/**
 * Blocks kept in indexed_blocks below the cursor to find a common ancestor after a reorg, plus the newest one known
 * below them. A reorg deeper than that block rebuilds the chain's index from its start block.
 */
export const REORG_HISTORY_BLOCKS = 2_048;

export async function readCursor(db: Executor, chain: string): Promise<Cursor | undefined> {
  const row = await db.selectFrom("indexer_cursors").select(["block_number", "block_hash"]).where("chain", "=", chain).executeTakeFirst();
  return row ? { number: Number(row.block_number), hash: row.block_hash } : undefined;
}

/**
 * The first statement of every indexer write transaction: a write, so the transaction holds the write lock before it
 * reads anything. On SQLite (WAL) a transaction that reads first keeps that snapshot, and when another connection (the
 * API) commits before its first write, the write fails at once with SQLITE_BUSY_SNAPSHOT: the busy timeout does not
 * apply. A write first waits for the lock instead. It changes nothing; on PostgreSQL it locks the chain's cursor row.
 */
export async function lockCursor(trx: Transaction<Database>, chain: string): Promise<void> {
  await trx
    .updateTable("indexer_cursors")
    .set((eb) => ({ updated_at: eb.ref("updated_at") }))
    .where("chain", "=", chain)
    .execute();
}

/** Another writer moved the cursor since this indexer read it (two indexers of one chain): nothing was written. */
export class CursorMovedError extends Error {
  override name = "CursorMovedError";
}

/**
 * Moves the cursor from `from` (as this indexer read it) to `to` (none: back before the start block). Call inside
 * the transaction that writes the data it covers. A compare-and-set: when another writer moved it in between, throws
 * CursorMovedError and the transaction rolls back, so two indexers of one chain can never interleave their ranges.
 */
export async function moveCursor(
  trx: Transaction<Database>,
  chain: string,
  from: Cursor | undefined,
  to: Cursor | undefined,
  now: number,
): Promise<void> {
  if (!from) {
    if (!to) return;
    // A concurrent first insert fails on the primary key.
    await trx.insertInto("indexer_cursors").values({ chain, block_number: to.number, block_hash: to.hash, updated_at: now }).execute();
    return;
  }
  const result = to
    ? await trx
        .updateTable("indexer_cursors")
        .set({ block_number: to.number, block_hash: to.hash, updated_at: now })
        .where("chain", "=", chain)
        .where("block_number", "=", from.number)
        .where("block_hash", "=", from.hash)
        .executeTakeFirst()
    : await trx
        .deleteFrom("indexer_cursors")
        .where("chain", "=", chain)
        .where("block_number", "=", from.number)
        .where("block_hash", "=", from.hash)
        .executeTakeFirst();
  const changed = "numUpdatedRows" in result ? result.numUpdatedRows : result.numDeletedRows;
  if (changed !== 1n) throw new CursorMovedError(`${chain}: the cursor moved from block ${from.number} under this indexer`);
}

type BlockRow = Insertable<IndexedBlocksTable>;
const upsertBlocks = rowStatement<BlockRow>(everyColumn<BlockRow>()(["chain", "block_number", "block_hash", "parent_hash"]), (db, rows) =>
  db
    .insertInto("indexed_blocks")
    .values(rows)
    .onConflict((oc) =>
      oc.columns(["chain", "block_number"]).doUpdateSet((eb) => ({
        block_hash: eb.ref("excluded.block_hash"),
        parent_hash: eb.ref("excluded.parent_hash"),
      })),
    ),
);

/** Compiles the cursor's row statements (see RowStatement.prepare). */
export function prepareCursorStatements(db: Kysely<Database>): void {
  upsertBlocks.prepare(db);
}

/** Records headers seen, and forgets those too old to matter for reorgs. */
export async function rememberBlocks(trx: Transaction<Database>, chain: string, blocks: readonly BlockRef[], cursor: number): Promise<void> {
  if (blocks.length > 0) {
    await upsertBlocks(
      trx,
      blocks.map((b) => ({ chain, block_number: b.number, block_hash: b.hash, parent_hash: b.parentHash })),
    );
  }
  // Only the ends of each range and the blocks with logs are known, and a catch-up range can be far longer than the
  // history: keep the newest block below the horizon too, or a shallow reorg right after such a range would find no
  // ancestor and rebuild the whole index.
  const horizon = await trx
    .selectFrom("indexed_blocks")
    .select((eb) => eb.fn.max("block_number").as("block_number"))
    .where("chain", "=", chain)
    .where("block_number", "<=", cursor - REORG_HISTORY_BLOCKS)
    .executeTakeFirst();
  if (horizon?.block_number === null || horizon?.block_number === undefined) return;
  await trx.deleteFrom("indexed_blocks").where("chain", "=", chain).where("block_number", "<", Number(horizon.block_number)).execute();
}

export interface IndexerLag {
  chain: string;
  /** Last indexed block, or null before the first range is indexed. */
  cursor: number | null;
  head: number;
  /** head - cursor (never negative), or null before the first range. */
  lag: number | null;
  /** When the cursor last moved (epoch ms), or null. */
  updatedAt: number | null;
}

/** How far the index of `chain` trails the chain head, for a readiness check. */
export async function indexerLag(db: Executor, chain: string, head: number): Promise<IndexerLag> {
  const row = await db.selectFrom("indexer_cursors").select(["block_number", "updated_at"]).where("chain", "=", chain).executeTakeFirst();
  const cursor = row ? Number(row.block_number) : null;
  return {
    chain,
    cursor,
    head,
    lag: cursor === null ? null : Math.max(0, head - cursor),
    updatedAt: row ? Number(row.updated_at) : null,
  };
}
