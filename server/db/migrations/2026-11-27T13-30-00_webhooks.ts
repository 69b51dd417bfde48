import type { Kysely } from "kysely";

/**
 * Webhooks (server/webhooks, issue 27): an account's subscriptions (a URL, an event filter, a signing secret sealed
 * under the master key, and how far into its chain's event log it has queued deliveries) and one delivery per
 * (subscription, event), the delivery log. Portable SQL only; never imports application types.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const postgres = db.getExecutor().adapter.constructor.name === "PostgresAdapter";
  await db.schema
    .createTable("webhook_subscriptions")
    .addColumn("id", postgres ? "serial" : "integer", (c) => (postgres ? c.primaryKey() : c.primaryKey().autoIncrement()))
    .addColumn("account_id", "integer", (c) => c.notNull().references("accounts.id"))
    .addColumn("key_id", "integer", (c) => c.references("api_keys.id"))
    .addColumn("wallet", "varchar(42)", (c) => c.notNull())
    .addColumn("chain", "varchar(64)", (c) => c.notNull())
    .addColumn("url", "varchar(2048)", (c) => c.notNull())
    .addColumn("types", "text")
    .addColumn("task_hash", "varchar(66)")
    .addColumn("format", "varchar(16)", (c) => c.notNull().defaultTo("standard"))
    .addColumn("token", "text")
    .addColumn("secret", "text", (c) => c.notNull())
    .addColumn("status", "varchar(16)", (c) => c.notNull())
    .addColumn("disabled_reason", "text")
    .addColumn("cursor", "bigint", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("updated_at", "bigint", (c) => c.notNull())
    .execute();
  await db.schema.createIndex("webhook_subscriptions_account").on("webhook_subscriptions").column("account_id").execute();
  await db.schema
    .createTable("webhook_deliveries")
    .addColumn("id", postgres ? "serial" : "integer", (c) => (postgres ? c.primaryKey() : c.primaryKey().autoIncrement()))
    .addColumn("subscription_id", "integer", (c) => c.notNull().references("webhook_subscriptions.id").onDelete("cascade"))
    .addColumn("chain", "varchar(64)", (c) => c.notNull())
    .addColumn("seq", "bigint", (c) => c.notNull())
    .addColumn("event_id", "varchar(100)", (c) => c.notNull())
    .addColumn("status", "varchar(16)", (c) => c.notNull())
    .addColumn("attempts", "integer", (c) => c.notNull())
    .addColumn("next_attempt_at", "bigint", (c) => c.notNull())
    .addColumn("claimed_until", "bigint")
    .addColumn("last_status", "integer")
    .addColumn("last_error", "text")
    .addColumn("first_attempt_at", "bigint")
    .addColumn("delivered_at", "bigint")
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addUniqueConstraint("webhook_deliveries_event", ["subscription_id", "event_id"])
    .execute();
  await db.schema.createIndex("webhook_deliveries_due").on("webhook_deliveries").columns(["status", "next_attempt_at"]).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("webhook_deliveries").execute();
  await db.schema.dropTable("webhook_subscriptions").execute();
}
