import type { Db } from "../db";
import { readEvents, walletsOf, type EventFeed } from "../events";
import { signWebhook } from "@market/core/webhooks";
import { a2aStatusUpdate, type EventType, type MarketEvent } from "@market/core/api";
import { secretContext, type SecretBox } from "./store";

/**
 * Waits after each failed attempt of a delivery (Standard Webhooks' schedule): 5 s, 5 min, 30 min, 2 h, 5 h, 10 h,
 * 10 h; eight attempts over 27 h 35 min. A delivery still failing after the last one is `failed`, and its webhook is
 * disabled until its owner enables it again.
 */
export const DEFAULT_RETRY_DELAYS_MS = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000];

export interface WebhookSenderOptions {
  db: Db;
  box: SecretBox;
  now?: () => number;
  /** The fetch deliveries go through: the hosted HTTP tools' guarded fetch (private addresses refused at connect). */
  fetch: typeof fetch;
  /** Wakes the sender when the log grows (this process's feed); it also polls every `pollMs`. */
  feed?: EventFeed;
  retryDelaysMs?: readonly number[];
  /** One attempt's limit (ms, default 10 s): no answer by then is a failure. */
  timeoutMs?: number;
  pollMs?: number;
  /** Attempts in flight at once. */
  concurrency?: number;
  logger?: { warn(obj: object, msg: string): void };
}

export interface WebhookSender {
  /** Starts the loop (the holder of the webhooks lease runs it; server/index.ts). */
  start(): void;
  /** Stops after the attempts in flight have been recorded. */
  stop(): Promise<void>;
  /** One round: queue new events for every webhook, then attempt what is due. Tests call it. */
  runOnce(): Promise<void>;
}

const FANOUT_PAGE = 500;
const DUE_BATCH = 100;

/**
 * Delivers the event log to webhooks, at least once. Each round first queues, per active webhook, the events after
 * its cursor it may see (one delivery row per event, and the cursor moved, in one transaction: nothing queued twice or
 * skipped), then attempts the due deliveries. An attempt is claimed in the database before it is sent (`claimed_until`
 * past the attempt's timeout, `attempts` counted), so no other sender, in this or another process, sends it meanwhile;
 * a sender killed mid-attempt leaves a claim that expires, and the delivery is sent again (the receiver de-duplicates
 * by `webhook-id`).
 */
export function createWebhookSender(options: WebhookSenderOptions): WebhookSender {
  const { db, box } = options;
  const now = options.now ?? Date.now;
  const delays = options.retryDelaysMs ?? DEFAULT_RETRY_DELAYS_MS;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const pollMs = options.pollMs ?? 500;
  const concurrency = Math.max(1, options.concurrency ?? 16);
  let running = false;
  let loop: Promise<void> | undefined;
  let wake: (() => void) | undefined;

  async function fanOut(): Promise<void> {
    const heads = new Map((await db.selectFrom("event_heads").select(["chain", "seq"]).execute()).map((h) => [h.chain, Number(h.seq)]));
    const subscriptions = await db
      .selectFrom("webhook_subscriptions as w")
      .leftJoin("api_keys as k", "k.id", "w.key_id")
      .select(["w.id", "w.account_id", "w.wallet", "w.chain", "w.types", "w.task_hash", "w.cursor", "w.key_id", "k.revoked_at"])
      .where("w.status", "=", "active")
      .execute();
    for (const sub of subscriptions) {
      if (sub.key_id !== null && sub.revoked_at !== null) {
        await db
          .updateTable("webhook_subscriptions")
          .set({ status: "disabled", disabled_reason: "the API key that subscribed was revoked", updated_at: now() })
          .where("id", "=", sub.id)
          .execute();
        continue;
      }
      if ((heads.get(sub.chain) ?? 0) <= Number(sub.cursor)) continue;
      const wallets = await walletsOf(db, { wallet: sub.wallet, accountId: sub.account_id });
      for (let cursor = Number(sub.cursor); ;) {
        const types = sub.types === null ? undefined : (JSON.parse(sub.types) as EventType[]);
        const filter = {
          chain: sub.chain,
          after: cursor,
          wallets,
          ...(types ? { types } : {}),
          ...(sub.task_hash ? { taskHash: sub.task_hash } : {}),
        };
        const page = await readEvents(db, filter, FANOUT_PAGE);
        if (page.next === cursor) break;
        const at = now();
        const moved = await db.transaction().execute(async (trx) => {
          const cas = await trx
            .updateTable("webhook_subscriptions")
            .set({ cursor: page.next })
            .where("id", "=", sub.id)
            .where("cursor", "=", cursor)
            .executeTakeFirst();
          if (Number(cas.numUpdatedRows) !== 1) return false;
          if (page.events.length > 0) {
            await trx
              .insertInto("webhook_deliveries")
              .values(
                page.events.map((e) => ({
                  subscription_id: sub.id,
                  chain: sub.chain,
                  seq: Number(e.cursor),
                  event_id: e.id,
                  status: "pending" as const,
                  attempts: 0,
                  next_attempt_at: at,
                  created_at: at,
                })),
              )
              .onConflict((oc) => oc.columns(["subscription_id", "event_id"]).doNothing())
              .execute();
          }
          return true;
        });
        if (!moved || !page.more) break;
        cursor = page.next;
      }
    }
  }

  /** Claims a due delivery for one attempt; false when another sender has it. */
  async function claim(id: number, at: number): Promise<boolean> {
    const result = await db
      .updateTable("webhook_deliveries")
      .set((eb) => ({
        claimed_until: at + timeoutMs + 5_000,
        attempts: eb("attempts", "+", 1),
        first_attempt_at: eb.fn.coalesce("first_attempt_at", eb.val(at)),
      }))
      .where("id", "=", id)
      .where("status", "=", "pending")
      .where((eb) => eb.or([eb("claimed_until", "is", null), eb("claimed_until", "<", at)]))
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  async function attempt(
    delivery: { id: number; subscription_id: number; attempts: number },
    event: MarketEvent,
    target: { url: string; secret: string; token?: string },
  ) {
    // A standard webhook's body, or an A2A push notification's (a StreamResponse) with the config's token.
    const body = JSON.stringify(
      target.token === undefined ? { type: event.type, timestamp: new Date(event.createdAt).toISOString(), data: event } : a2aStatusUpdate(event),
    );
    const timestamp = Math.floor(now() / 1000);
    let status: number | null = null;
    let error: string | null = null;
    try {
      const response = await options.fetch(target.url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "user-agent": "market-webhooks/1",
          "webhook-id": event.id,
          "webhook-timestamp": String(timestamp),
          "webhook-signature": signWebhook(target.secret, event.id, timestamp, body),
          ...(target.token === undefined ? {} : { "x-a2a-notification-token": target.token }),
        },
        body,
        signal: AbortSignal.timeout(timeoutMs),
      });
      status = response.status;
      if (!response.ok) error = `answered ${response.status}`;
    } catch (cause) {
      error = cause instanceof Error && cause.name === "TimeoutError" ? `no answer within ${timeoutMs} ms` : messageOf(cause);
    }
    const at = now();
    const attempts = delivery.attempts + 1;
    if (error === null) {
      await db
        .updateTable("webhook_deliveries")
        .set({ status: "delivered", delivered_at: at, last_status: status, last_error: null, claimed_until: null })
        .where("id", "=", delivery.id)
        .execute();
      return;
    }
    const exhausted = attempts > delays.length;
    await db.transaction().execute(async (trx) => {
      await trx
        .updateTable("webhook_deliveries")
        .set({
          status: exhausted ? "failed" : "pending",
          next_attempt_at: exhausted ? at : at + delays[attempts - 1]!,
          last_status: status,
          last_error: error.slice(0, 500),
          claimed_until: null,
        })
        .where("id", "=", delivery.id)
        .execute();
      if (exhausted) {
        await trx
          .updateTable("webhook_subscriptions")
          .set({ status: "disabled", disabled_reason: `event ${event.id} failed ${attempts} attempts: ${error.slice(0, 200)}`, updated_at: at })
          .where("id", "=", delivery.subscription_id)
          .execute();
      }
    });
  }

  async function deliverDue(): Promise<number> {
    const at = now();
    const due = await db
      .selectFrom("webhook_deliveries as d")
      .innerJoin("webhook_subscriptions as w", "w.id", "d.subscription_id")
      .innerJoin("events as e", (join) => join.onRef("e.chain", "=", "d.chain").onRef("e.seq", "=", "d.seq"))
      .select(["d.id", "d.subscription_id", "d.attempts", "w.url", "w.secret", "w.token", "w.format", "w.account_id", "e.id as event_id"])
      .select(["e.seq", "e.chain", "e.type", "e.task_hash", "e.public", "e.data", "e.block_number", "e.tx_hash", "e.created_at"])
      .where("d.status", "=", "pending")
      .where("w.status", "=", "active")
      .where("d.next_attempt_at", "<=", at)
      .where((eb) => eb.or([eb("d.claimed_until", "is", null), eb("d.claimed_until", "<", at)]))
      .orderBy("d.id")
      .limit(DUE_BATCH)
      .execute();
    const secrets = new Map<number, { secret: string; token?: string }>();
    let sent = 0;
    const queue = [...due];
    const workers = Array.from({ length: Math.min(concurrency, queue.length) }, async () => {
      for (let row = queue.shift(); row; row = queue.shift()) {
        if (!(await claim(row.id, at))) continue;
        let opened = secrets.get(row.subscription_id);
        if (opened === undefined) {
          const context = secretContext(row.account_id, row.url);
          opened = {
            secret: box.open(row.secret, context),
            ...(row.format === "a2a" ? { token: row.token ? box.open(row.token, context) : "" } : {}),
          };
          secrets.set(row.subscription_id, opened);
        }
        const event: MarketEvent = {
          id: row.event_id,
          cursor: String(row.seq),
          chain: row.chain as MarketEvent["chain"],
          type: row.type as EventType,
          taskHash: row.task_hash as MarketEvent["taskHash"],
          public: Number(row.public) === 1,
          data: JSON.parse(row.data) as Record<string, unknown>,
          blockNumber: row.block_number === null ? null : Number(row.block_number),
          txHash: row.tx_hash,
          createdAt: Number(row.created_at),
        };
        await attempt(row, event, { url: row.url, ...opened });
        sent++;
      }
    });
    await Promise.all(workers);
    return sent;
  }

  async function runOnce(): Promise<void> {
    await fanOut();
    while ((await deliverDue()) === DUE_BATCH && running);
  }

  async function run(): Promise<void> {
    while (running) {
      try {
        await runOnce();
      } catch (error) {
        options.logger?.warn({ err: error }, "webhooks: a round failed; trying again");
      }
      if (!running) break;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, pollMs);
        function done() {
          clearTimeout(timer);
          wake = undefined;
          resolve();
        }
        wake = done;
        // The log's growth wakes the round early; the feed polls the heads once for every reader of this process.
        void options.feed?.waitForGrowth(pollMs).then(() => wake === done && done());
      });
    }
  }

  return {
    start() {
      if (running) return;
      running = true;
      loop = run();
    },
    async stop() {
      running = false;
      wake?.();
      await loop;
      loop = undefined;
    },
    runOnce,
  };
}

function messageOf(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : "";
  return `${error.message}${cause}`;
}
