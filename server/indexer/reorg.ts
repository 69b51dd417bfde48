import type { Kysely } from "kysely";
import type { Database } from "../db/schema";
import { lockCursor, moveCursor, type Cursor } from "./cursor";
import { fromEventRow, fromRegistryEventRow, type ChainEvent } from "./events";
import { isRegistryProjection, type AnyProjection } from "./projection";
import type { IndexerProvider } from "./node";

/**
 * The newest indexed block still on the canonical chain: walks back through indexed_blocks comparing each stored hash
 * with the node's block at that height. Undefined when none matches (a reorg deeper than the stored history, or a
 * different chain): the index then starts over from the start block.
 */
export async function findCommonAncestor(db: Kysely<Database>, provider: IndexerProvider, chain: string, below: number): Promise<Cursor | undefined> {
  const PAGE = 32;
  let upper = below;
  for (;;) {
    const stored = await db
      .selectFrom("indexed_blocks")
      .select(["block_number", "block_hash"])
      .where("chain", "=", chain)
      .where("block_number", "<=", upper)
      .orderBy("block_number", "desc")
      .limit(PAGE)
      .execute();
    if (stored.length === 0) return undefined;
    const canonical = await Promise.all(stored.map((b) => provider.getBlock(Number(b.block_number))));
    for (const [i, block] of stored.entries()) {
      if (canonical[i]?.hash === block.block_hash) return { number: Number(block.block_number), hash: block.block_hash };
    }
    upper = Number(stored[stored.length - 1]!.block_number) - 1;
  }
}

/**
 * Removes everything indexed above `ancestor` (everything, when undefined) in one transaction: the events, their
 * projections (in reverse order), the remembered blocks, and moves the cursor back from `cursor`. Returns the
 * removed events.
 */
export async function rollbackTo(
  db: Kysely<Database>,
  chain: string,
  cursor: Cursor,
  ancestor: Cursor | undefined,
  projections: readonly AnyProjection[],
  now: number,
): Promise<ChainEvent[]> {
  const above = ancestor?.number ?? -1;
  return db.transaction().execute(async (trx) => {
    await lockCursor(trx, chain);
    const rows = await trx
      .selectFrom("escrow_events")
      .selectAll()
      .where("chain", "=", chain)
      .where("block_number", ">", above)
      .orderBy("block_number")
      .orderBy("log_index")
      .execute();
    const removed = rows.map(fromEventRow);
    await trx.deleteFrom("escrow_events").where("chain", "=", chain).where("block_number", ">", above).execute();
    const registryRows = await trx
      .selectFrom("registry_events")
      .selectAll()
      .where("chain", "=", chain)
      .where("block_number", ">", above)
      .orderBy("block_number")
      .orderBy("log_index")
      .execute();
    const removedRegistry = registryRows.map(fromRegistryEventRow);
    await trx.deleteFrom("registry_events").where("chain", "=", chain).where("block_number", ">", above).execute();
    for (const projection of [...projections].reverse()) {
      if (isRegistryProjection(projection)) await projection.rollback(trx, chain, removedRegistry);
      else await projection.rollback(trx, chain, removed);
    }
    await trx.deleteFrom("indexed_blocks").where("chain", "=", chain).where("block_number", ">", above).execute();
    await moveCursor(trx, chain, cursor, ancestor, now);
    return removed;
  });
}
