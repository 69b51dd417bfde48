import type { Kysely } from "kysely";

/**
 * mcp_quotes: the quotes of MCP spending calls (post_tasks, rent_service), kept by the service so the local `market
 * mcp` and the remote /mcp endpoint share them, and a used quote stays used across restarts.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("mcp_quotes")
    .addColumn("id", "varchar(64)", (c) => c.primaryKey())
    .addColumn("wallet", "varchar(42)", (c) => c.notNull())
    .addColumn("tool", "varchar(64)", (c) => c.notNull())
    .addColumn("fingerprint", "varchar(64)", (c) => c.notNull())
    .addColumn("quote", "text", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("expires_at", "bigint", (c) => c.notNull())
    .addColumn("used_at", "bigint")
    .execute();
  await db.schema.createIndex("mcp_quotes_wallet").on("mcp_quotes").columns(["wallet", "expires_at"]).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("mcp_quotes").execute();
}
