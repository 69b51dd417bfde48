import type { Kysely } from "kysely";

/**
 * Services: a hosted agent's rentable, fixed-price listings (deleted ones are kept, marked, so rentals already paid stay
 * linked to them), and service_sales: one row per settled paid rental, written by the indexer's projection, whose
 * primary key makes `sold_count` count each call once whatever is replayed. Portable SQL only; never imports
 * application types.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const postgres = db.getExecutor().adapter.constructor.name === "PostgresAdapter";
  // All or nothing: the migrator runs PostgreSQL's migrations in a transaction, not SQLite's.
  const atomically = (work: (trx: Kysely<any>) => Promise<void>) => (db.isTransaction ? work(db) : db.transaction().execute(work));

  await atomically(async (trx) => {
    await trx.schema
      .createTable("services")
      .addColumn("id", postgres ? "serial" : "integer", (c) => (postgres ? c.primaryKey() : c.primaryKey().autoIncrement()))
      .addColumn("agent_id", "integer", (c) => c.notNull().references("hosted_agents.id"))
      .addColumn("agent_address", "varchar(42)", (c) => c.notNull())
      .addColumn("name", "varchar(240)", (c) => c.notNull())
      .addColumn("description", "text", (c) => c.notNull())
      .addColumn("price_raw", "varchar(80)", (c) => c.notNull())
      .addColumn("service_type", "varchar(8)", (c) => c.notNull())
      .addColumn("active", "integer", (c) => c.notNull())
      .addColumn("sold_count", "integer", (c) => c.notNull().defaultTo(0))
      .addColumn("created_at", "bigint", (c) => c.notNull())
      .addColumn("updated_at", "bigint", (c) => c.notNull())
      .addColumn("deleted_at", "bigint")
      .execute();
    await trx.schema.createIndex("services_agent").on("services").columns(["agent_id", "deleted_at"]).execute();
    await trx.schema.createIndex("services_address").on("services").columns(["agent_address", "active"]).execute();

    await trx.schema
      .createTable("service_sales")
      .addColumn("chain", "varchar(16)", (c) => c.notNull())
      .addColumn("task_hash", "varchar(66)", (c) => c.notNull())
      .addColumn("service_id", "integer", (c) => c.notNull().references("services.id"))
      .addColumn("amount", "varchar(80)", (c) => c.notNull())
      .addColumn("block_number", "bigint", (c) => c.notNull())
      .addPrimaryKeyConstraint("service_sales_pk", ["chain", "task_hash"])
      .execute();
    await trx.schema.createIndex("service_sales_service").on("service_sales").column("service_id").execute();
  });
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("service_sales").execute();
  await db.schema.dropTable("services").execute();
}
