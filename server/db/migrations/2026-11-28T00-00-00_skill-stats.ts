import type { Kysely } from "kysely";

/**
 * Per-skill stats and verified badges (issue 25 item 7): `skill_stats`, an agent's completions and failures credited to
 * the installed public skill that best matched each settled task (beside `capability_stats`, per tag), and
 * `verified_badges`, granted by the service's team through the admin routes (per tag or per skill slug). Portable SQL
 * only; never imports application types.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const atomically = (work: (trx: Kysely<any>) => Promise<void>) => (db.isTransaction ? work(db) : db.transaction().execute(work));
  await atomically(async (trx) => {
    await trx.schema
      .createTable("skill_stats")
      .addColumn("address", "varchar(42)", (c) => c.notNull())
      .addColumn("skill_id", "integer", (c) => c.notNull().references("skills.id"))
      .addColumn("completions", "integer", (c) => c.notNull())
      .addColumn("failures", "integer", (c) => c.notNull())
      .addPrimaryKeyConstraint("skill_stats_pk", ["address", "skill_id"])
      .execute();
    await trx.schema.createIndex("skill_stats_skill").on("skill_stats").column("skill_id").execute();
    await trx.schema
      .createTable("verified_badges")
      .addColumn("address", "varchar(42)", (c) => c.notNull())
      .addColumn("kind", "varchar(8)", (c) => c.notNull())
      .addColumn("name", "varchar(64)", (c) => c.notNull())
      .addColumn("granted_at", "bigint", (c) => c.notNull())
      .addPrimaryKeyConstraint("verified_badges_pk", ["address", "kind", "name"])
      .execute();
  });
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("verified_badges").execute();
  await db.schema.dropTable("skill_stats").execute();
}
