import { sql, type Kysely } from "kysely";

/**
 * Scale-out (docs/scaling.md): several API processes on one PostgreSQL database.
 *
 * - outbox: a request any replica records (`queued`: no nonce, no signed transaction yet) and the one sender signs;
 *   the signed columns become nullable, `revert` keeps the escrow's custom error of a request refused when it was
 *   signed, and a purpose has at most one entry that is not `reverted` (a unique index, not a read-then-write).
 * - outbox_nonces: the next nonce of each key on each chain, moved in the transaction that signs.
 * - row_locks: a row per name that a transaction updates first to hold the name until it commits (e.g. one accept at
 *   a time per agent, on every replica).
 * - rate_windows: fixed-window counters shared by every replica (e.g. accepts per agent per minute).
 * - blob_contents: the bytes of stored blobs when the database keeps them (`BLOB_STORE=database`), so every replica
 *   reads what any replica stored.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const postgres = db.getExecutor().adapter.constructor.name === "PostgresAdapter";
  // All or nothing: the migrator runs PostgreSQL's migrations in a transaction, not SQLite's.
  const atomically = (work: (trx: Kysely<any>) => Promise<void>) => (db.isTransaction ? work(db) : db.transaction().execute(work));
  await atomically(async (trx) => {
    if (postgres) {
      for (const column of NULLABLE)
        await trx.schema
          .alterTable("outbox")
          .alterColumn(column, (c) => c.dropNotNull())
          .execute();
      await trx.schema.alterTable("outbox").addColumn("revert", "text").execute();
    } else {
      await rebuildSqliteOutbox(trx);
    }
    await trx.schema
      .createIndex("outbox_live_purpose")
      .on("outbox")
      .columns(["chain", "purpose"])
      .unique()
      .where(sql.ref("status"), "<>", "reverted")
      .execute();

    await trx.schema
      .createTable("outbox_nonces")
      .addColumn("chain", "varchar(16)", (c) => c.notNull())
      .addColumn("sender", "varchar(42)", (c) => c.notNull())
      .addColumn("next_nonce", "bigint", (c) => c.notNull())
      .addColumn("updated_at", "bigint", (c) => c.notNull())
      .addPrimaryKeyConstraint("outbox_nonces_pk", ["chain", "sender"])
      .execute();

    await trx.schema
      .createTable("row_locks")
      .addColumn("name", "varchar(200)", (c) => c.primaryKey())
      .addColumn("locked_at", "bigint", (c) => c.notNull())
      .execute();

    await trx.schema
      .createTable("rate_windows")
      .addColumn("key", "varchar(200)", (c) => c.primaryKey())
      .addColumn("started_at", "bigint", (c) => c.notNull())
      .addColumn("count", "integer", (c) => c.notNull())
      .execute();
    await trx.schema.createIndex("rate_windows_started_at").on("rate_windows").column("started_at").execute();

    await trx.schema
      .createTable("blob_contents")
      .addColumn("root_hash", "varchar(66)", (c) => c.primaryKey())
      .addColumn("data", postgres ? "bytea" : "blob", (c) => c.notNull())
      .execute();
  });
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("blob_contents").execute();
  await db.schema.dropTable("rate_windows").execute();
  await db.schema.dropTable("row_locks").execute();
  await db.schema.dropTable("outbox_nonces").execute();
  await db.schema.dropIndex("outbox_live_purpose").execute();
  // Queued entries have no transaction to keep; the columns go back to NOT NULL on PostgreSQL.
  await db.deleteFrom("outbox").where("status", "=", "queued").execute();
  if (db.getExecutor().adapter.constructor.name === "PostgresAdapter") {
    await db.schema.alterTable("outbox").dropColumn("revert").execute();
    for (const column of NULLABLE)
      await db.schema
        .alterTable("outbox")
        .alterColumn(column, (c) => c.setNotNull())
        .execute();
  }
}

/** The columns a queued entry has no value for yet. */
const NULLABLE = ["nonce", "gas_limit", "max_fee", "priority_fee", "raw", "tx_hash", "hashes"] as const;

/** SQLite cannot drop NOT NULL: the table is made again with the same rows, ids and indexes. */
async function rebuildSqliteOutbox(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("outbox_next")
    .addColumn("id", "integer", (c) => c.primaryKey().autoIncrement())
    .addColumn("chain", "varchar(16)", (c) => c.notNull())
    .addColumn("sender", "varchar(42)", (c) => c.notNull())
    .addColumn("nonce", "integer")
    .addColumn("purpose", "varchar(200)", (c) => c.notNull())
    .addColumn("to_address", "varchar(42)", (c) => c.notNull())
    .addColumn("data", "text", (c) => c.notNull())
    .addColumn("gas_limit", "varchar(40)")
    .addColumn("max_fee", "varchar(80)")
    .addColumn("priority_fee", "varchar(80)")
    .addColumn("raw", "text")
    .addColumn("tx_hash", "varchar(66)")
    .addColumn("hashes", "text")
    .addColumn("status", "varchar(16)", (c) => c.notNull())
    .addColumn("attempts", "integer", (c) => c.notNull())
    .addColumn("mined_block", "bigint")
    .addColumn("error", "text")
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("sent_at", "bigint")
    .addColumn("updated_at", "bigint", (c) => c.notNull())
    .addColumn("revert", "text")
    .addUniqueConstraint("outbox_nonce", ["chain", "sender", "nonce"])
    .execute();
  const columns = [
    "id",
    "chain",
    "sender",
    "nonce",
    "purpose",
    "to_address",
    "data",
    "gas_limit",
    "max_fee",
    "priority_fee",
    "raw",
    "tx_hash",
    "hashes",
    "status",
    "attempts",
    "mined_block",
    "error",
    "created_at",
    "sent_at",
    "updated_at",
  ];
  await db.insertInto("outbox_next").columns(columns).expression(db.selectFrom("outbox").select(columns)).execute();
  await db.schema.dropTable("outbox").execute();
  await db.schema.alterTable("outbox_next").renameTo("outbox").execute();
  await db.schema.createIndex("outbox_purpose").on("outbox").columns(["chain", "purpose"]).execute();
  await db.schema.createIndex("outbox_status").on("outbox").columns(["status"]).execute();
}
