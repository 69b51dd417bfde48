import { sql, type Kysely } from "kysely";

/**
 * Counting open tasks at scale on PostgreSQL (the browse `total`; plans in bench/browse.json). The count joins
 * listings, their capabilities and the escrow tasks on the task hash: with the escrow tasks still Funded indexed by task
 * hash (and deadline), PostgreSQL merges three index-only scans in task-hash order (listings_open,
 * listing_capabilities_pk and this one) with no hash table, sort or temporary file. 1,000,000 open tasks: 0.7 s in one
 * process, where it hashed escrow_tasks in 1.7 s (or 1.3 s on three processes in parallel, which the count now never
 * uses). The index is partial, so ended tasks never enter it, and it replaces escrow_tasks_state there, which only the
 * count read. SQLite keeps escrow_tasks_state: its count reads it, and it cannot use a partial index for a status
 * that is a bound parameter, so this one would only cost its writes.
 */
export async function up(db: Kysely<any>): Promise<void> {
  if (!isPostgres(db)) return;
  await db.schema
    .createIndex("escrow_tasks_open")
    .on("escrow_tasks")
    .columns(["task_hash", "chain", "deadline"])
    .where(sql.ref("status"), "=", 0) // EscrowStatus.Funded (the escrow's enum, fixed by its ABI)
    .execute();
  await db.schema.dropIndex("escrow_tasks_state").execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  if (!isPostgres(db)) return;
  await db.schema.createIndex("escrow_tasks_state").on("escrow_tasks").columns(["chain", "task_hash", "status", "deadline"]).execute();
  await db.schema.dropIndex("escrow_tasks_open").execute();
}

function isPostgres(db: Kysely<any>): boolean {
  return db.getExecutor().adapter.constructor.name === "PostgresAdapter";
}
