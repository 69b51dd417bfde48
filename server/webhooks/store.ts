import type { Selectable } from "kysely";
import type { Db } from "../db";
import type { WebhookDeliveriesTable, WebhookSubscriptionsTable } from "../db/schema";
import type { Principal } from "../auth/principal";
import type { ChainRegistry } from "../chains";
import { lastCursor } from "../events";
import { MarketError } from "@market/core/errors";
import { newWebhookSecret } from "@market/core/webhooks";
import type { ChainName } from "@market/core/chains";
import type { EventType, WebhookCreateBody, WebhookCreated, WebhookDelivery, WebhookView } from "@market/core/api";

/** Seals and opens a webhook's secret at rest (the master key's vault, bound to the subscription). */
export interface SecretBox {
  seal(secret: string, context: string): string;
  open(sealed: string, context: string): string;
}

/** The context a subscription's secret is sealed under: a sealed secret copied to another row does not open. */
export const secretContext = (accountId: number, url: string) => `webhook:${accountId}:${url}`;

export interface WebhookStoreDeps {
  db: Db;
  chains: ChainRegistry;
  now: () => number;
  /** Absent without a master key: webhooks are then refused (WEBHOOKS_UNAVAILABLE). */
  box?: SecretBox;
  /** Why a URL may not receive webhooks (the hosted HTTP tools' guard); undefined when it may. */
  urlRefusal: (url: URL) => string | undefined;
  perAccount: number;
}

type Subscription = Selectable<WebhookSubscriptionsTable>;

export function webhookView(row: Subscription): WebhookView {
  return {
    id: row.id,
    url: row.url,
    chain: row.chain as ChainName,
    types: row.types === null ? null : (JSON.parse(row.types) as EventType[]),
    status: row.status,
    disabledReason: row.disabled_reason,
    cursor: String(row.cursor),
    createdAt: Number(row.created_at),
  };
}

export function deliveryView(row: Selectable<WebhookDeliveriesTable>): WebhookDelivery {
  return {
    id: row.id,
    eventId: row.event_id,
    cursor: String(row.seq),
    status: row.status,
    attempts: row.attempts,
    nextAttemptAt: row.status === "pending" && Number(row.next_attempt_at) !== DUE_AT_ONCE ? Number(row.next_attempt_at) : null,
    lastStatus: row.last_status,
    lastError: row.last_error,
    deliveredAt: row.delivered_at === null ? null : Number(row.delivered_at),
  };
}

/**
 * `next_attempt_at` of a delivery due at once: before any clock's now, so the sender (in this process or another, with
 * its own clock) takes it on its next round whatever the two clocks say. The delivery log shows it as null (no wait).
 */
const DUE_AT_ONCE = 0;

/** An account's webhooks: subscribe (the secret shown once), list, remove, re-enable, redeliver, read the delivery log. */
export function createWebhookStore(deps: WebhookStoreDeps) {
  const { db, now } = deps;

  function checkUrl(text: string): string {
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      throw refused("is not a URL");
    }
    if (url.username || url.password) throw refused("carries credentials");
    const reason = deps.urlRefusal(url);
    if (reason) throw refused(reason);
    return url.toString();
  }

  /** The account's subscription, or WEBHOOK_NOT_FOUND (another account's looks the same as none). */
  async function owned(principal: Principal, id: number): Promise<Subscription> {
    const row = await db
      .selectFrom("webhook_subscriptions")
      .selectAll()
      .where("id", "=", id)
      .where("account_id", "=", principal.accountId)
      .executeTakeFirst();
    if (!row) throw new MarketError("WEBHOOK_NOT_FOUND");
    return row;
  }

  return {
    owned,

    async subscribe(principal: Principal, body: WebhookCreateBody): Promise<WebhookCreated> {
      if (!deps.box) throw new MarketError("WEBHOOKS_UNAVAILABLE");
      const url = checkUrl(body.url);
      const chain = body.chain ? deps.chains.require(body.chain).config.name : deps.chains.posting().config.name;
      const secret = newWebhookSecret();
      const at = now();
      const row = await db.transaction().execute(async (trx) => {
        const held = await trx
          .selectFrom("webhook_subscriptions")
          .select((eb) => eb.fn.countAll<number>().as("n"))
          .where("account_id", "=", principal.accountId)
          .executeTakeFirstOrThrow();
        if (Number(held.n) >= deps.perAccount) {
          throw new MarketError("WEBHOOK_QUOTA_EXCEEDED", undefined, {
            details: [{ message: "held", held: Number(held.n), quota: deps.perAccount }],
          });
        }
        return trx
          .insertInto("webhook_subscriptions")
          .values({
            account_id: principal.accountId,
            key_id: principal.keyId ?? null,
            wallet: principal.wallet,
            chain,
            url,
            types: body.types ? JSON.stringify(body.types) : null,
            secret: deps.box!.seal(secret, secretContext(principal.accountId, url)),
            status: "active",
            disabled_reason: null,
            cursor: body.after !== undefined ? Number(body.after) : await lastCursor(trx, chain),
            created_at: at,
            updated_at: at,
          })
          .returningAll()
          .executeTakeFirstOrThrow();
      });
      return { webhook: webhookView(row), secret };
    },

    /**
     * An A2A push-notification config: a webhook of the caller's account for one task's events, sent as A2A
     * StreamResponses with the config's token. Counts against the same quota.
     */
    async createPushConfig(principal: Principal, config: { taskHash: string; url: string; token: string }): Promise<Subscription> {
      if (!deps.box) throw new MarketError("WEBHOOKS_UNAVAILABLE");
      const url = checkUrl(config.url);
      const listing = await db.selectFrom("listings").select("chain").where("task_hash", "=", config.taskHash).executeTakeFirst();
      const chain = listing?.chain ?? deps.chains.posting().config.name;
      const at = now();
      const context = secretContext(principal.accountId, url);
      return db.transaction().execute(async (trx) => {
        const held = await trx
          .selectFrom("webhook_subscriptions")
          .select((eb) => eb.fn.countAll<number>().as("n"))
          .where("account_id", "=", principal.accountId)
          .executeTakeFirstOrThrow();
        if (Number(held.n) >= deps.perAccount) throw new MarketError("WEBHOOK_QUOTA_EXCEEDED");
        return trx
          .insertInto("webhook_subscriptions")
          .values({
            account_id: principal.accountId,
            key_id: principal.keyId ?? null,
            wallet: principal.wallet,
            chain,
            url,
            types: null,
            task_hash: config.taskHash,
            format: "a2a",
            token: deps.box!.seal(config.token, context),
            secret: deps.box!.seal(newWebhookSecret(), context),
            status: "active",
            disabled_reason: null,
            cursor: await lastCursor(trx, chain),
            created_at: at,
            updated_at: at,
          })
          .returningAll()
          .executeTakeFirstOrThrow();
      });
    },

    /** The account's push configs of a task (all of them, or the one `id` names). */
    async pushConfigs(principal: Principal, taskHash: string, id?: number): Promise<Subscription[]> {
      let query = db
        .selectFrom("webhook_subscriptions")
        .selectAll()
        .where("account_id", "=", principal.accountId)
        .where("task_hash", "=", taskHash)
        .where("format", "=", "a2a");
      if (id !== undefined) query = query.where("id", "=", id);
      return query.orderBy("id").execute();
    },

    async list(principal: Principal): Promise<WebhookView[]> {
      const rows = await db.selectFrom("webhook_subscriptions").selectAll().where("account_id", "=", principal.accountId).orderBy("id").execute();
      return rows.map(webhookView);
    },

    async remove(principal: Principal, id: number): Promise<void> {
      await owned(principal, id);
      await db.deleteFrom("webhook_subscriptions").where("id", "=", id).where("account_id", "=", principal.accountId).execute();
    },

    /** Active again: its pending deliveries resume at once (its failed ones wait for `redeliver`). */
    async enable(principal: Principal, id: number): Promise<WebhookView> {
      await owned(principal, id);
      await db.transaction().execute(async (trx) => {
        await trx
          .updateTable("webhook_subscriptions")
          .set({ status: "active", disabled_reason: null, updated_at: now() })
          .where("id", "=", id)
          .execute();
        await trx
          .updateTable("webhook_deliveries")
          .set({ next_attempt_at: DUE_AT_ONCE })
          .where("subscription_id", "=", id)
          .where("status", "=", "pending")
          .execute();
      });
      return webhookView(await owned(principal, id));
    },

    /** Queues failed deliveries again (those named, or all), from a fresh back-off schedule. */
    async redeliver(principal: Principal, id: number, eventIds?: readonly string[]): Promise<number> {
      await owned(principal, id);
      let query = db
        .updateTable("webhook_deliveries")
        .set({ status: "pending", attempts: 0, next_attempt_at: DUE_AT_ONCE, claimed_until: null, first_attempt_at: null })
        .where("subscription_id", "=", id)
        .where("status", "in", eventIds ? ["failed", "delivered"] : ["failed"]);
      if (eventIds) query = query.where("event_id", "in", eventIds);
      const result = await query.executeTakeFirst();
      return Number(result.numUpdatedRows);
    },

    async deliveries(principal: Principal, id: number, filter: { status?: WebhookDelivery["status"]; before?: number }): Promise<WebhookDelivery[]> {
      await owned(principal, id);
      let query = db.selectFrom("webhook_deliveries").selectAll().where("subscription_id", "=", id);
      if (filter.status) query = query.where("status", "=", filter.status);
      if (filter.before !== undefined) query = query.where("id", "<", filter.before);
      const rows = await query.orderBy("id", "desc").limit(100).execute();
      return rows.map(deliveryView);
    },
  };
}

export type WebhookStore = ReturnType<typeof createWebhookStore>;

function refused(reason: string): MarketError {
  return new MarketError("WEBHOOK_URL_REFUSED", `The webhook URL ${reason}.`, { details: [{ field: "url", message: reason }] });
}
