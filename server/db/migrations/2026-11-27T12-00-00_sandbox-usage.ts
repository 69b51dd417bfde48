import type { Kysely } from "kysely";

/**
 * sandbox_usage (issue 26): the wall-clock milliseconds of sandbox runs (JS Eval and Sandbox tools) per hosted agent and
 * UTC day, the daily cost cap's account: kept in the database so a restart or another API process reads the same sum.
 * Portable SQL only; never imports application types.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("sandbox_usage")
    .addColumn("agent_id", "integer", (c) => c.notNull())
    .addColumn("day", "integer", (c) => c.notNull())
    .addColumn("wall_ms", "bigint", (c) => c.notNull())
    .addColumn("runs", "integer", (c) => c.notNull())
    .addPrimaryKeyConstraint("sandbox_usage_pk", ["agent_id", "day"])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("sandbox_usage").execute();
}
