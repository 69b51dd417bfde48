import type { Kysely } from "kysely";

/**
 * Issue 14 (docs/security.md):
 * - blob_uploads: who uploaded each blob and when (an upload quota per account counts the bytes of its blobs no listing
 *   references; garbage collection removes blobs nobody references once their grace period is over);
 * - reputation_credits: the settled tasks that credited reputation, score and badges, per (poster, worker) pair, so
 *   the pair's credits per period are counted;
 * - indexes for those questions: listings by root hash, escrow tasks by hash alone.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("blob_uploads")
    .addColumn("root_hash", "varchar(66)", (c) => c.notNull())
    .addColumn("account_id", "integer", (c) => c.notNull())
    .addColumn("size", "integer", (c) => c.notNull())
    .addColumn("uploaded_at", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("blob_uploads_pk", ["root_hash", "account_id"])
    .execute();
  await db.schema.createIndex("blob_uploads_account").on("blob_uploads").columns(["account_id", "uploaded_at"]).execute();
  await db.schema.createIndex("listings_root_hash").on("listings").column("root_hash").execute();
  await db.schema.createIndex("escrow_tasks_hash").on("escrow_tasks").column("task_hash").execute();

  await db.schema
    .createTable("reputation_credits")
    .addColumn("chain", "varchar(16)", (c) => c.notNull())
    .addColumn("task_hash", "varchar(66)", (c) => c.notNull())
    .addColumn("worker", "varchar(42)", (c) => c.notNull())
    .addColumn("poster", "varchar(42)", (c) => c.notNull())
    .addColumn("credited_at", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("reputation_credits_pk", ["chain", "task_hash"])
    .execute();
  await db.schema.createIndex("reputation_credits_pair").on("reputation_credits").columns(["worker", "poster", "credited_at"]).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("reputation_credits").execute();
  await db.schema.dropIndex("escrow_tasks_hash").execute();
  await db.schema.dropIndex("listings_root_hash").execute();
  await db.schema.dropTable("blob_uploads").execute();
}
