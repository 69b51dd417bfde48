import { sql, type Kysely, type Transaction } from "kysely";
import type { Database } from "../db/schema";
import type { EventType } from "@market/core/api/events";

type Executor = Kysely<Database> | Transaction<Database>;

/** An event to append: its cursor and id are given by the log. */
export interface EventDraft {
  type: EventType;
  taskHash: string | null;
  public: boolean;
  /** Wallets that may see it when not public (checksummed or not: stored lowercase). */
  audience: readonly string[];
  data: Record<string, unknown>;
  /** Where on chain it comes from; absent for an event the API records (a listing). */
  log?: { blockNumber: number; blockHash: string; logIndex: number; txHash: string };
}

/** Rows of one multi-row insert: SQLite binds at most 32,766 values a statement. */
const ROWS_PER_INSERT = 500;

/** The stable id of the event numbered `seq` on `chain`. */
export const eventId = (chain: string, seq: number) => `evt_${chain}_${seq}`;

/**
 * Appends events to a chain's log inside the caller's transaction, numbered after the chain's last: the head row's
 * update is held until the transaction ends, so a chain's writers (its indexer, listings) number in commit order and a
 * reader that has seen cursor N never later finds a new event below it. Returns the cursors given.
 */
export async function appendEvents(trx: Transaction<Database>, chain: string, drafts: readonly EventDraft[], now: number): Promise<number[]> {
  if (drafts.length === 0) return [];
  const head = await trx
    .insertInto("event_heads")
    .values({ chain, seq: drafts.length })
    .onConflict((oc) => oc.column("chain").doUpdateSet({ seq: sql<number>`event_heads.seq + ${drafts.length}` }))
    .returning("seq")
    .executeTakeFirstOrThrow();
  const first = Number(head.seq) - drafts.length + 1;
  const rows = drafts.map((draft, i) => ({
    chain,
    seq: first + i,
    id: eventId(chain, first + i),
    type: draft.type,
    task_hash: draft.taskHash,
    public: draft.public ? 1 : 0,
    data: JSON.stringify(draft.data),
    block_number: draft.log?.blockNumber ?? null,
    block_hash: draft.log?.blockHash ?? null,
    log_index: draft.log?.logIndex ?? null,
    tx_hash: draft.log?.txHash ?? null,
    created_at: now,
  }));
  const audience = drafts.flatMap((draft, i) =>
    draft.public ? [] : [...new Set(draft.audience.map((w) => w.toLowerCase()))].map((wallet) => ({ wallet, chain, seq: first + i })),
  );
  for (let i = 0; i < rows.length; i += ROWS_PER_INSERT)
    await trx
      .insertInto("events")
      .values(rows.slice(i, i + ROWS_PER_INSERT))
      .execute();
  for (let i = 0; i < audience.length; i += ROWS_PER_INSERT) {
    await trx
      .insertInto("event_audience")
      .values(audience.slice(i, i + ROWS_PER_INSERT))
      .execute();
  }
  return rows.map((row) => row.seq);
}

/**
 * Takes the chain's log for the rest of the transaction (the head row's lock, as appendEvents does) before the caller
 * reads what decides whether it appends: two writers that each wait for the other's rows (a listing and the indexing
 * of its funding) then never both miss them.
 */
export async function holdLog(trx: Transaction<Database>, chain: string): Promise<void> {
  await trx
    .insertInto("event_heads")
    .values({ chain, seq: 0 })
    .onConflict((oc) => oc.column("chain").doUpdateSet({ seq: sql<number>`event_heads.seq` }))
    .execute();
}

/** The chain's last cursor (0 before its first event). */
export async function lastCursor(db: Executor, chain: string): Promise<number> {
  const row = await db.selectFrom("event_heads").select("seq").where("chain", "=", chain).executeTakeFirst();
  return row ? Number(row.seq) : 0;
}
