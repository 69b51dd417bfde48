import { sql, type Kysely } from "kysely";

/**
 * One copy of a task's amount (issue 24): `listings.amount` duplicated `escrow_tasks.amount`, the funding event's
 * amount the indexer records. The listing keeps what only the listing knows; the amount is read from the escrow's
 * row. Portable SQL only (SQLite drops a column since 3.35); never imports application types.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("listings").dropColumn("amount").execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable("listings")
    .addColumn("amount", "varchar(80)", (c) => c.notNull().defaultTo("0"))
    .execute();
  await sql`update listings set amount = (select e.amount from escrow_tasks e where e.chain = listings.chain and e.task_hash = listings.task_hash)
    where exists (select 1 from escrow_tasks e where e.chain = listings.chain and e.task_hash = listings.task_hash)`.execute(db);
}
