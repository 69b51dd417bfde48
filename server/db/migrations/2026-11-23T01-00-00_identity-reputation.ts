import type { Kysely } from "kysely";

/**
 * Identity and on-chain reputation (issue 13): the registries' kept logs (registry_events), their projections
 * (identity_tokens, onchain_reputation), and the identity mints of hosted agents with their retry state
 * (identity_mints). Never import application types here: a migration describes the database as it was.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("registry_events")
    .addColumn("chain", "varchar(16)", (c) => c.notNull())
    .addColumn("block_number", "bigint", (c) => c.notNull())
    .addColumn("block_hash", "varchar(66)", (c) => c.notNull())
    .addColumn("log_index", "integer", (c) => c.notNull())
    .addColumn("tx_hash", "varchar(66)", (c) => c.notNull())
    .addColumn("tx_index", "integer", (c) => c.notNull())
    .addColumn("registry", "varchar(16)", (c) => c.notNull())
    .addColumn("event", "varchar(64)", (c) => c.notNull())
    .addColumn("subject", "varchar(78)", (c) => c.notNull())
    .addColumn("args", "text", (c) => c.notNull())
    .addColumn("block_time", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("registry_events_pk", ["chain", "block_number", "log_index"])
    .execute();
  await db.schema.createIndex("registry_events_subject").on("registry_events").columns(["chain", "registry", "subject"]).execute();

  await db.schema
    .createTable("identity_tokens")
    .addColumn("chain", "varchar(16)", (c) => c.notNull())
    .addColumn("agent_id", "varchar(78)", (c) => c.notNull())
    .addColumn("owner", "varchar(42)", (c) => c.notNull())
    .addColumn("agent_uri", "text", (c) => c.notNull())
    .addColumn("agent_wallet", "varchar(42)")
    .addColumn("metadata_hash", "text")
    .addColumn("registered_block", "bigint", (c) => c.notNull())
    .addColumn("updated_block", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("identity_tokens_pk", ["chain", "agent_id"])
    .execute();
  await db.schema.createIndex("identity_tokens_wallet").on("identity_tokens").columns(["agent_wallet"]).execute();

  await db.schema
    .createTable("onchain_reputation")
    .addColumn("chain", "varchar(16)", (c) => c.notNull())
    .addColumn("agent", "varchar(42)", (c) => c.notNull())
    .addColumn("tasks_completed", "integer", (c) => c.notNull())
    .addColumn("score_sum", "integer", (c) => c.notNull())
    .addColumn("score_count", "integer", (c) => c.notNull())
    .addColumn("disputes", "integer", (c) => c.notNull())
    .addPrimaryKeyConstraint("onchain_reputation_pk", ["chain", "agent"])
    .execute();

  await db.schema
    .createTable("identity_mints")
    .addColumn("agent_wallet", "varchar(42)", (c) => c.primaryKey())
    .addColumn("chain", "varchar(16)", (c) => c.notNull())
    .addColumn("owner_wallet", "varchar(42)", (c) => c.notNull())
    .addColumn("card_url", "text", (c) => c.notNull())
    .addColumn("metadata_hash", "varchar(66)", (c) => c.notNull())
    .addColumn("state", "varchar(16)", (c) => c.notNull())
    .addColumn("attempts", "integer", (c) => c.notNull())
    .addColumn("next_attempt_at", "bigint")
    .addColumn("last_error", "text")
    .addColumn("agent_id", "varchar(78)")
    .addColumn("tx_hash", "varchar(66)")
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("updated_at", "bigint", (c) => c.notNull())
    .execute();
  await db.schema.createIndex("identity_mints_due").on("identity_mints").columns(["state", "next_attempt_at"]).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("identity_mints").execute();
  await db.schema.dropTable("onchain_reputation").execute();
  await db.schema.dropTable("identity_tokens").execute();
  await db.schema.dropTable("registry_events").execute();
}
