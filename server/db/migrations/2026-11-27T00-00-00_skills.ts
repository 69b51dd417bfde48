import type { Kysely } from "kysely";

/**
 * Skills (issue 25): the registry (`skills`, a deleted skill kept and marked so its slug stays taken) and the frozen
 * snapshots installed in hosted agents (`hosted_agent_skills`, one per agent and slug, kept when the skill is edited or
 * deleted). Portable SQL only; never imports application types.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const postgres = db.getExecutor().adapter.constructor.name === "PostgresAdapter";
  const atomically = (work: (trx: Kysely<any>) => Promise<void>) => (db.isTransaction ? work(db) : db.transaction().execute(work));

  await atomically(async (trx) => {
    await trx.schema
      .createTable("skills")
      .addColumn("id", postgres ? "serial" : "integer", (c) => (postgres ? c.primaryKey() : c.primaryKey().autoIncrement()))
      .addColumn("slug", "varchar(64)", (c) => c.notNull().unique())
      .addColumn("account_id", "integer", (c) => c.notNull().references("accounts.id"))
      .addColumn("author_address", "varchar(42)", (c) => c.notNull())
      .addColumn("name", "varchar(100)", (c) => c.notNull())
      .addColumn("description", "text", (c) => c.notNull())
      .addColumn("version", "varchar(32)", (c) => c.notNull())
      .addColumn("license", "varchar(100)")
      .addColumn("instructions", "text", (c) => c.notNull())
      .addColumn("tools", "text", (c) => c.notNull())
      .addColumn("secret_refs", "text", (c) => c.notNull())
      .addColumn("capabilities", "text", (c) => c.notNull())
      .addColumn("is_public", "integer", (c) => c.notNull())
      .addColumn("created_at", "bigint", (c) => c.notNull())
      .addColumn("updated_at", "bigint", (c) => c.notNull())
      .addColumn("deleted_at", "bigint")
      .execute();
    await trx.schema.createIndex("skills_account").on("skills").columns(["account_id", "deleted_at"]).execute();
    await trx.schema.createIndex("skills_public").on("skills").columns(["is_public", "deleted_at"]).execute();

    await trx.schema
      .createTable("hosted_agent_skills")
      .addColumn("agent_id", "integer", (c) => c.notNull().references("hosted_agents.id"))
      .addColumn("slug", "varchar(64)", (c) => c.notNull())
      .addColumn("skill_id", "integer", (c) => c.notNull().references("skills.id"))
      .addColumn("snapshot", "text", (c) => c.notNull())
      .addColumn("installed_at", "bigint", (c) => c.notNull())
      .addPrimaryKeyConstraint("hosted_agent_skills_pk", ["agent_id", "slug"])
      .execute();
    await trx.schema.createIndex("hosted_agent_skills_skill").on("hosted_agent_skills").column("skill_id").execute();
  });
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("hosted_agent_skills").execute();
  await db.schema.dropTable("skills").execute();
}
