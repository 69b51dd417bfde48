import type { Kysely } from "kysely";

/**
 * The event log (server/events, issue 27): `events` holds what happened to tasks, one row per event, numbered per
 * chain by `seq` (the replay cursor); `event_heads` hands out the numbers (its row lock orders the writers of a
 * chain, so numbers follow commit order); `event_audience` names the wallets that may see an event that is not public.
 * Portable SQL only; never imports application types.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("event_heads")
    .addColumn("chain", "varchar(64)", (c) => c.primaryKey())
    .addColumn("seq", "bigint", (c) => c.notNull())
    .execute();
  await db.schema
    .createTable("events")
    .addColumn("chain", "varchar(64)", (c) => c.notNull())
    .addColumn("seq", "bigint", (c) => c.notNull())
    .addColumn("id", "varchar(100)", (c) => c.notNull().unique())
    .addColumn("type", "varchar(40)", (c) => c.notNull())
    .addColumn("task_hash", "varchar(66)")
    .addColumn("public", "integer", (c) => c.notNull())
    .addColumn("data", "text", (c) => c.notNull())
    .addColumn("block_number", "bigint")
    .addColumn("block_hash", "varchar(66)")
    .addColumn("log_index", "integer")
    .addColumn("tx_hash", "varchar(66)")
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("events_pk", ["chain", "seq"])
    .execute();
  await db.schema.createIndex("events_chain_block").on("events").columns(["chain", "block_hash", "log_index"]).execute();
  await db.schema
    .createTable("event_audience")
    .addColumn("wallet", "varchar(42)", (c) => c.notNull())
    .addColumn("chain", "varchar(64)", (c) => c.notNull())
    .addColumn("seq", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("event_audience_pk", ["wallet", "chain", "seq"])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("event_audience").execute();
  await db.schema.dropTable("events").execute();
  await db.schema.dropTable("event_heads").execute();
}
