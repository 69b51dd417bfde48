import type { Kysely } from "kysely";

/**
 * hosted_mcp_runs: the task file and journal of each MCP spending call an owner made for a hosted agent's custodied
 * wallet (per idempotencyKey), saved before each funding is sent: a repeat of the call on any API process finishes it
 * without paying twice. Portable SQL only; never imports application types.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("hosted_mcp_runs")
    .addColumn("agent_id", "integer", (c) => c.notNull().references("hosted_agents.id"))
    .addColumn("run", "varchar(64)", (c) => c.notNull())
    .addColumn("tasks", "text", (c) => c.notNull())
    .addColumn("journal", "text", (c) => c.notNull())
    .addColumn("updated_at", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("hosted_mcp_runs_pk", ["agent_id", "run"])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("hosted_mcp_runs").execute();
}
