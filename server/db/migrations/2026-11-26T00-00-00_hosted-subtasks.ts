import type { Kysely } from "kysely";

/**
 * hosted_subtasks: the sub-tasks a hosted agent posted (`delegate_to_agent`) while working a task, with their rewards:
 * the count and the total per task are read from here, so a restart of the agent or the server resets neither.
 * Portable SQL only; never imports application types.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const postgres = db.getExecutor().adapter.constructor.name === "PostgresAdapter";
  await db.schema
    .createTable("hosted_subtasks")
    .addColumn("id", postgres ? "serial" : "integer", (c) => (postgres ? c.primaryKey() : c.primaryKey().autoIncrement()))
    .addColumn("agent_id", "integer", (c) => c.notNull().references("hosted_agents.id"))
    .addColumn("task_hash", "varchar(66)", (c) => c.notNull())
    .addColumn("amount", "varchar(80)", (c) => c.notNull())
    .addColumn("subtask_hash", "varchar(66)")
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .execute();
  await db.schema.createIndex("hosted_subtasks_task").on("hosted_subtasks").columns(["agent_id", "task_hash"]).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("hosted_subtasks").execute();
}
