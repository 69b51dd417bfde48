import type { CreateTableBuilder, Kysely } from "kysely";

/**
 * Hosted agents: the agent record, its tools, its custodied secrets, the runner's tokens and task runs, deploy-fee
 * credits (one row per fee transaction: the primary key credits a fee once, whoever races for it), key exports,
 * sponsored gas and owner <-> agent messages. Portable SQL only; never imports application types.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const postgres = db.getExecutor().adapter.constructor.name === "PostgresAdapter";
  const withId = <T extends string>(table: CreateTableBuilder<T, never>) =>
    table.addColumn("id", postgres ? "serial" : "integer", (c) => (postgres ? c.primaryKey() : c.primaryKey().autoIncrement()));
  // All or nothing: the migrator runs PostgreSQL's migrations in a transaction, not SQLite's.
  const atomically = (work: (trx: Kysely<any>) => Promise<void>) => (db.isTransaction ? work(db) : db.transaction().execute(work));

  await atomically(async (trx) => {
    await withId(trx.schema.createTable("hosted_agents"))
      .addColumn("address", "varchar(42)", (c) => c.notNull().unique())
      .addColumn("account_id", "integer", (c) => c.notNull().references("accounts.id"))
      .addColumn("owner_address", "varchar(42)", (c) => c.notNull())
      .addColumn("owner_public_key", "varchar(130)", (c) => c.notNull())
      .addColumn("display_name", "varchar(100)", (c) => c.notNull())
      .addColumn("instructions", "text", (c) => c.notNull())
      .addColumn("model_base_url", "text", (c) => c.notNull())
      .addColumn("model_name", "varchar(200)", (c) => c.notNull())
      .addColumn("capabilities", "text", (c) => c.notNull())
      .addColumn("min_reward", "varchar(80)")
      .addColumn("subtask_max_reward", "varchar(80)")
      .addColumn("state", "varchar(16)", (c) => c.notNull())
      .addColumn("running_config", "text")
      .addColumn("last_error", "text")
      .addColumn("exported_at", "bigint")
      .addColumn("created_at", "bigint", (c) => c.notNull())
      .addColumn("updated_at", "bigint", (c) => c.notNull())
      .execute();
    await trx.schema.createIndex("hosted_agents_account").on("hosted_agents").column("account_id").execute();
    await trx.schema.createIndex("hosted_agents_state").on("hosted_agents").column("state").execute();

    await trx.schema
      .createTable("hosted_agent_tools")
      .addColumn("agent_id", "integer", (c) => c.notNull().references("hosted_agents.id"))
      .addColumn("name", "varchar(64)", (c) => c.notNull())
      .addColumn("origin", "varchar(100)", (c) => c.notNull())
      .addColumn("definition", "text", (c) => c.notNull())
      .addPrimaryKeyConstraint("hosted_agent_tools_pk", ["agent_id", "name"])
      .execute();

    await trx.schema
      .createTable("hosted_agent_secrets")
      .addColumn("agent_id", "integer", (c) => c.notNull().references("hosted_agents.id"))
      .addColumn("kind", "varchar(16)", (c) => c.notNull())
      .addColumn("name", "varchar(100)", (c) => c.notNull())
      .addColumn("sealed", "text", (c) => c.notNull())
      .addColumn("owner_copy", "text", (c) => c.notNull())
      .addColumn("created_at", "bigint", (c) => c.notNull())
      .addPrimaryKeyConstraint("hosted_agent_secrets_pk", ["agent_id", "kind", "name"])
      .execute();

    await trx.schema
      .createTable("hosted_agent_tokens")
      .addColumn("token_hash", "varchar(66)", (c) => c.primaryKey())
      .addColumn("agent_id", "integer", (c) => c.notNull().references("hosted_agents.id"))
      .addColumn("created_at", "bigint", (c) => c.notNull())
      .execute();
    await trx.schema.createIndex("hosted_agent_tokens_agent").on("hosted_agent_tokens").column("agent_id").execute();

    await trx.schema
      .createTable("hosted_task_runs")
      .addColumn("agent_id", "integer", (c) => c.notNull().references("hosted_agents.id"))
      .addColumn("task_hash", "varchar(66)", (c) => c.notNull())
      .addColumn("status", "varchar(16)", (c) => c.notNull())
      .addColumn("steps", "integer", (c) => c.notNull())
      .addColumn("error", "text")
      .addColumn("started_at", "bigint", (c) => c.notNull())
      .addColumn("ended_at", "bigint")
      .addPrimaryKeyConstraint("hosted_task_runs_pk", ["agent_id", "task_hash"])
      .execute();

    await trx.schema
      .createTable("deploy_fee_credits")
      .addColumn("chain", "varchar(16)", (c) => c.notNull())
      .addColumn("tx_hash", "varchar(66)", (c) => c.notNull())
      .addColumn("agent_id", "integer", (c) => c.notNull().references("hosted_agents.id"))
      .addColumn("account_id", "integer", (c) => c.notNull().references("accounts.id"))
      .addColumn("payer", "varchar(42)", (c) => c.notNull())
      .addColumn("amount", "varchar(80)", (c) => c.notNull())
      .addColumn("credited_at", "bigint", (c) => c.notNull())
      .addPrimaryKeyConstraint("deploy_fee_credits_pk", ["chain", "tx_hash"])
      .execute();

    await withId(trx.schema.createTable("key_exports"))
      .addColumn("agent_id", "integer", (c) => c.notNull().references("hosted_agents.id"))
      .addColumn("account_id", "integer", (c) => c.notNull().references("accounts.id"))
      .addColumn("ip", "varchar(64)")
      .addColumn("exported_at", "bigint", (c) => c.notNull())
      .execute();
    await trx.schema.createIndex("key_exports_agent").on("key_exports").column("agent_id").execute();

    await withId(trx.schema.createTable("gas_sponsorships"))
      .addColumn("chain", "varchar(16)", (c) => c.notNull())
      .addColumn("agent_address", "varchar(42)", (c) => c.notNull())
      .addColumn("purpose", "varchar(120)", (c) => c.notNull())
      .addColumn("amount", "varchar(80)", (c) => c.notNull())
      .addColumn("tx_hash", "varchar(66)")
      .addColumn("status", "varchar(16)", (c) => c.notNull())
      .addColumn("created_at", "bigint", (c) => c.notNull())
      .addUniqueConstraint("gas_sponsorships_once", ["chain", "agent_address", "purpose"])
      .execute();

    await withId(trx.schema.createTable("hosted_agent_messages"))
      .addColumn("agent_id", "integer", (c) => c.notNull().references("hosted_agents.id"))
      .addColumn("sender", "varchar(8)", (c) => c.notNull())
      .addColumn("body", "text", (c) => c.notNull())
      .addColumn("created_at", "bigint", (c) => c.notNull())
      .execute();
    await trx.schema.createIndex("hosted_agent_messages_agent").on("hosted_agent_messages").columns(["agent_id", "id"]).execute();
  });
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of [
    "hosted_agent_messages",
    "gas_sponsorships",
    "key_exports",
    "deploy_fee_credits",
    "hosted_task_runs",
    "hosted_agent_tokens",
    "hosted_agent_secrets",
    "hosted_agent_tools",
    "hosted_agents",
  ]) {
    await db.schema.dropTable(table).execute();
  }
}
