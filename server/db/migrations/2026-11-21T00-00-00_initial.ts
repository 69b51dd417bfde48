import type { CreateTableBuilder, Kysely } from "kysely";

/**
 * Initial schema. Portable SQL only (SQLite and PostgreSQL): amounts as text, times and block numbers as bigint,
 * JSON as text. Never import application types here: a migration describes the database as it was.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const postgres = isPostgres(db);
  // An auto-incrementing integer key: SERIAL on PostgreSQL, INTEGER PRIMARY KEY AUTOINCREMENT on SQLite.
  const withId = <T extends string>(table: CreateTableBuilder<T, never>) =>
    table.addColumn("id", postgres ? "serial" : "integer", (c) => (postgres ? c.primaryKey() : c.primaryKey().autoIncrement()));

  await withId(db.schema.createTable("accounts"))
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .execute();

  await db.schema
    .createTable("account_wallets")
    .addColumn("address", "varchar(42)", (c) => c.primaryKey())
    .addColumn("account_id", "integer", (c) => c.notNull().references("accounts.id"))
    .addColumn("position", "integer", (c) => c.notNull())
    .addColumn("linked_at", "bigint", (c) => c.notNull())
    .addUniqueConstraint("account_wallets_position", ["account_id", "position"])
    .execute();

  await db.schema
    .createTable("auth_nonces")
    .addColumn("nonce", "varchar(64)", (c) => c.primaryKey())
    .addColumn("address", "varchar(42)", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("expires_at", "bigint", (c) => c.notNull())
    .addColumn("used_at", "bigint")
    .execute();

  await withId(db.schema.createTable("sessions"))
    .addColumn("token_hash", "varchar(66)", (c) => c.notNull().unique())
    .addColumn("account_id", "integer", (c) => c.notNull().references("accounts.id"))
    .addColumn("address", "varchar(42)", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("expires_at", "bigint", (c) => c.notNull())
    .addColumn("revoked_at", "bigint")
    .execute();

  await withId(db.schema.createTable("api_keys"))
    .addColumn("account_id", "integer", (c) => c.notNull().references("accounts.id"))
    .addColumn("wallet_address", "varchar(42)", (c) => c.notNull())
    .addColumn("key_hash", "varchar(66)", (c) => c.notNull().unique())
    .addColumn("key_prefix", "varchar(16)", (c) => c.notNull())
    .addColumn("name", "varchar(100)", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("revoked_at", "bigint")
    .addColumn("last_used_at", "bigint")
    .execute();
  await db.schema.createIndex("api_keys_account").on("api_keys").column("account_id").execute();

  await db.schema
    .createTable("agents")
    .addColumn("address", "varchar(42)", (c) => c.primaryKey())
    .addColumn("account_id", "integer", (c) => c.references("accounts.id"))
    .addColumn("public_key", "varchar(130)")
    .addColumn("display_name", "varchar(100)")
    .addColumn("min_reward", "varchar(80)")
    .addColumn("capabilities", "text", (c) => c.notNull())
    .addColumn("supported_chains", "text")
    .addColumn("registered_at", "bigint", (c) => c.notNull())
    .addColumn("updated_at", "bigint", (c) => c.notNull())
    .execute();

  await db.schema
    .createTable("agent_capabilities")
    .addColumn("agent_address", "varchar(42)", (c) => c.notNull().references("agents.address"))
    .addColumn("tag", "varchar(64)", (c) => c.notNull())
    .addPrimaryKeyConstraint("agent_capabilities_pk", ["agent_address", "tag"])
    .execute();
  await db.schema.createIndex("agent_capabilities_tag").on("agent_capabilities").column("tag").execute();

  await db.schema
    .createTable("blobs")
    .addColumn("root_hash", "varchar(66)", (c) => c.primaryKey())
    .addColumn("size", "integer", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .execute();

  await db.schema
    .createTable("listings")
    .addColumn("task_hash", "varchar(66)", (c) => c.primaryKey())
    .addColumn("chain", "varchar(16)", (c) => c.notNull())
    .addColumn("poster", "varchar(42)", (c) => c.notNull())
    .addColumn("privacy", "varchar(8)", (c) => c.notNull())
    .addColumn("public_brief", "text")
    .addColumn("routing_summary", "varchar(500)")
    .addColumn("root_hash", "varchar(200)")
    .addColumn("verification_mode", "varchar(8)", (c) => c.notNull())
    .addColumn("verification_criteria", "text")
    .addColumn("required_capabilities", "text", (c) => c.notNull())
    .addColumn("location_zone", "varchar(128)", (c) => c.notNull())
    .addColumn("target_executor", "varchar(42)")
    .addColumn("target_executor_type", "varchar(32)")
    .addColumn("service_id", "integer")
    .addColumn("verifier_address", "varchar(42)")
    .addColumn("key_custody_blob", "text")
    .addColumn("amount", "varchar(80)", (c) => c.notNull())
    .addColumn("token", "varchar(42)", (c) => c.notNull())
    .addColumn("funding_tx", "varchar(66)", (c) => c.notNull())
    .addColumn("listed_at", "bigint", (c) => c.notNull())
    .execute();
  await db.schema.createIndex("listings_listed_at").on("listings").columns(["listed_at", "task_hash"]).execute();
  await db.schema.createIndex("listings_poster").on("listings").columns(["poster", "listed_at"]).execute();

  await db.schema
    .createTable("listing_capabilities")
    .addColumn("task_hash", "varchar(66)", (c) => c.notNull().references("listings.task_hash"))
    .addColumn("tag", "varchar(64)", (c) => c.notNull())
    .addPrimaryKeyConstraint("listing_capabilities_pk", ["task_hash", "tag"])
    .execute();

  await db.schema
    .createTable("task_keys")
    .addColumn("task_hash", "varchar(66)", (c) => c.notNull().references("listings.task_hash"))
    .addColumn("agent_address", "varchar(42)", (c) => c.notNull())
    .addColumn("wrapped_key", "text", (c) => c.notNull())
    .addPrimaryKeyConstraint("task_keys_pk", ["task_hash", "agent_address"])
    .execute();

  await db.schema
    .createTable("indexer_cursors")
    .addColumn("chain", "varchar(16)", (c) => c.primaryKey())
    .addColumn("block_number", "bigint", (c) => c.notNull())
    .addColumn("block_hash", "varchar(66)", (c) => c.notNull())
    .addColumn("updated_at", "bigint", (c) => c.notNull())
    .execute();

  await db.schema
    .createTable("indexed_blocks")
    .addColumn("chain", "varchar(16)", (c) => c.notNull())
    .addColumn("block_number", "bigint", (c) => c.notNull())
    .addColumn("block_hash", "varchar(66)", (c) => c.notNull())
    .addColumn("parent_hash", "varchar(66)", (c) => c.notNull())
    .addPrimaryKeyConstraint("indexed_blocks_pk", ["chain", "block_number"])
    .execute();

  await db.schema
    .createTable("escrow_events")
    .addColumn("chain", "varchar(16)", (c) => c.notNull())
    .addColumn("block_number", "bigint", (c) => c.notNull())
    .addColumn("block_hash", "varchar(66)", (c) => c.notNull())
    .addColumn("log_index", "integer", (c) => c.notNull())
    .addColumn("tx_hash", "varchar(66)", (c) => c.notNull())
    .addColumn("tx_index", "integer", (c) => c.notNull())
    .addColumn("event", "varchar(64)", (c) => c.notNull())
    .addColumn("task_hash", "varchar(66)")
    .addColumn("args", "text", (c) => c.notNull())
    .addColumn("block_time", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("escrow_events_pk", ["chain", "block_number", "log_index"])
    .execute();
  await db.schema.createIndex("escrow_events_task").on("escrow_events").columns(["chain", "task_hash"]).execute();

  await db.schema
    .createTable("escrow_tasks")
    .addColumn("chain", "varchar(16)", (c) => c.notNull())
    .addColumn("task_hash", "varchar(66)", (c) => c.notNull())
    .addColumn("poster", "varchar(42)", (c) => c.notNull())
    .addColumn("token", "varchar(42)", (c) => c.notNull())
    .addColumn("amount", "varchar(80)", (c) => c.notNull())
    .addColumn("verifier", "varchar(42)")
    .addColumn("worker", "varchar(42)")
    .addColumn("deadline", "bigint", (c) => c.notNull())
    .addColumn("status", "integer", (c) => c.notNull())
    .addColumn("rounds", "integer", (c) => c.notNull())
    .addColumn("ending", "integer", (c) => c.notNull())
    .addColumn("result_hash", "varchar(66)")
    .addColumn("phase_at", "bigint")
    .addColumn("last_score", "integer")
    .addColumn("payout", "varchar(80)")
    .addColumn("fee", "varchar(80)")
    .addColumn("created_block", "bigint", (c) => c.notNull())
    .addColumn("created_tx", "varchar(66)", (c) => c.notNull())
    .addColumn("updated_block", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("escrow_tasks_pk", ["chain", "task_hash"])
    .execute();
  await db.schema.createIndex("escrow_tasks_status").on("escrow_tasks").columns(["chain", "status"]).execute();
  await db.schema.createIndex("escrow_tasks_worker").on("escrow_tasks").columns(["worker"]).execute();

  await db.schema
    .createTable("escrow_state")
    .addColumn("chain", "varchar(16)", (c) => c.primaryKey())
    .addColumn("paused_at", "bigint")
    .addColumn("total_paused", "bigint", (c) => c.notNull())
    .addColumn("fee_bps", "integer", (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of [
    "escrow_state",
    "escrow_tasks",
    "escrow_events",
    "indexed_blocks",
    "indexer_cursors",
    "task_keys",
    "listing_capabilities",
    "listings",
    "blobs",
    "agent_capabilities",
    "agents",
    "api_keys",
    "sessions",
    "auth_nonces",
    "account_wallets",
    "accounts",
  ]) {
    await db.schema.dropTable(table).execute();
  }
}

function isPostgres(db: Kysely<any>): boolean {
  return db.getExecutor().adapter.constructor.name === "PostgresAdapter";
}
