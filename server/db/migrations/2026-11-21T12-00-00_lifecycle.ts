import type { Kysely } from "kysely";

/**
 * The task life cycle through the API: accept locks and assignments, offers, bids, deliveries and verdicts, the
 * verifier key's transaction outbox, reputation and per-tag stats, reviews and task messages.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const postgres = db.getExecutor().adapter.constructor.name === "PostgresAdapter";
  const id = (table: string) =>
    db.schema
      .createTable(table)
      .addColumn("id", postgres ? "serial" : "integer", (c) => (postgres ? c.primaryKey() : c.primaryKey().autoIncrement()));

  // One row per task while an agent accepts or holds it: the primary key makes accepting exclusive.
  await db.schema
    .createTable("assignments")
    .addColumn("task_hash", "varchar(66)", (c) => c.primaryKey())
    .addColumn("agent_address", "varchar(42)", (c) => c.notNull())
    .addColumn("status", "varchar(16)", (c) => c.notNull()) // accepting | assigned
    .addColumn("outbox_id", "integer")
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("updated_at", "bigint", (c) => c.notNull())
    .execute();

  await db.schema
    .createTable("offers")
    .addColumn("task_hash", "varchar(66)", (c) => c.notNull())
    .addColumn("agent_address", "varchar(42)", (c) => c.notNull())
    .addColumn("rank", "integer", (c) => c.notNull())
    .addColumn("starts_at", "bigint", (c) => c.notNull())
    .addColumn("expires_at", "bigint", (c) => c.notNull())
    .addColumn("declined_at", "bigint")
    .addPrimaryKeyConstraint("offers_pk", ["task_hash", "agent_address"])
    .execute();

  await db.schema
    .createTable("bids")
    .addColumn("task_hash", "varchar(66)", (c) => c.notNull())
    .addColumn("agent_address", "varchar(42)", (c) => c.notNull())
    .addColumn("message", "varchar(1000)")
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("bids_pk", ["task_hash", "agent_address"])
    .execute();

  await db.schema
    .createTable("deliveries")
    .addColumn("task_hash", "varchar(66)", (c) => c.notNull())
    .addColumn("round", "integer", (c) => c.notNull())
    .addColumn("agent_address", "varchar(42)", (c) => c.notNull())
    .addColumn("output", "text", (c) => c.notNull())
    .addColumn("result_hash", "varchar(66)", (c) => c.notNull())
    .addColumn("evidence_tx", "varchar(66)")
    .addColumn("evidence_raw", "text")
    .addColumn("delivered_at", "bigint", (c) => c.notNull())
    .addColumn("finalized_at", "bigint")
    .addColumn("passed", "integer") // null until judged; 1 passed, 0 failed
    .addColumn("score", "integer")
    .addColumn("reasons", "text")
    .addColumn("judged_by", "varchar(16)") // auto | poster | verifier | admin
    .addPrimaryKeyConstraint("deliveries_pk", ["task_hash", "round"])
    .execute();

  // Every transaction the service's verifier key sends, in nonce order; survives restarts.
  await id("outbox")
    .addColumn("chain", "varchar(16)", (c) => c.notNull())
    .addColumn("sender", "varchar(42)", (c) => c.notNull())
    .addColumn("nonce", "integer", (c) => c.notNull())
    .addColumn("purpose", "varchar(200)", (c) => c.notNull())
    .addColumn("to_address", "varchar(42)", (c) => c.notNull())
    .addColumn("data", "text", (c) => c.notNull())
    .addColumn("gas_limit", "varchar(40)", (c) => c.notNull())
    .addColumn("max_fee", "varchar(80)", (c) => c.notNull())
    .addColumn("priority_fee", "varchar(80)", (c) => c.notNull())
    .addColumn("raw", "text", (c) => c.notNull())
    .addColumn("tx_hash", "varchar(66)", (c) => c.notNull())
    .addColumn("hashes", "text", (c) => c.notNull()) // JSON: every hash signed for this nonce (replacements included)
    .addColumn("status", "varchar(16)", (c) => c.notNull()) // signed | sent | mined | reverted
    .addColumn("attempts", "integer", (c) => c.notNull())
    .addColumn("mined_block", "bigint")
    .addColumn("error", "text")
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("sent_at", "bigint")
    .addColumn("updated_at", "bigint", (c) => c.notNull())
    .addUniqueConstraint("outbox_nonce", ["chain", "sender", "nonce"])
    .execute();
  await db.schema.createIndex("outbox_purpose").on("outbox").columns(["chain", "purpose"]).execute();
  await db.schema.createIndex("outbox_status").on("outbox").columns(["status"]).execute();

  // Earned numbers per wallet, derived from escrow events (rebuilt for an agent after a reorg).
  await db.schema
    .createTable("reputation")
    .addColumn("address", "varchar(42)", (c) => c.primaryKey())
    .addColumn("reputation", "integer", (c) => c.notNull())
    .addColumn("tasks_completed", "integer", (c) => c.notNull())
    .addColumn("failed_rounds", "integer", (c) => c.notNull())
    .addColumn("disputes", "integer", (c) => c.notNull())
    .addColumn("disputes_lost", "integer", (c) => c.notNull())
    .addColumn("earnings", "varchar(80)", (c) => c.notNull())
    .addColumn("raw_score", "integer", (c) => c.notNull())
    .addColumn("last_settled_at", "bigint")
    .execute();

  await db.schema
    .createTable("capability_stats")
    .addColumn("address", "varchar(42)", (c) => c.notNull())
    .addColumn("tag", "varchar(64)", (c) => c.notNull())
    .addColumn("completions", "integer", (c) => c.notNull())
    .addColumn("failures", "integer", (c) => c.notNull())
    .addPrimaryKeyConstraint("capability_stats_pk", ["address", "tag"])
    .execute();

  await db.schema
    .createTable("reviews")
    .addColumn("task_hash", "varchar(66)", (c) => c.primaryKey())
    .addColumn("agent_address", "varchar(42)", (c) => c.notNull())
    .addColumn("poster", "varchar(42)", (c) => c.notNull())
    .addColumn("rating", "integer", (c) => c.notNull())
    .addColumn("comment", "varchar(2000)")
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .execute();
  await db.schema.createIndex("reviews_agent").on("reviews").columns(["agent_address", "created_at"]).execute();

  await id("task_messages")
    .addColumn("task_hash", "varchar(66)", (c) => c.notNull())
    .addColumn("sender", "varchar(42)", (c) => c.notNull())
    .addColumn("body", "varchar(4000)", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .execute();
  await db.schema.createIndex("task_messages_task").on("task_messages").columns(["task_hash", "id"]).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ["task_messages", "reviews", "capability_stats", "reputation", "outbox", "deliveries", "bids", "offers", "assignments"]) {
    await db.schema.dropTable(table).execute();
  }
}
