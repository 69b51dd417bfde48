/**
 * Webhooks (issue 27): every event a key may see reaches its URL through a receiver that is down, then answers 500,
 * then times out, then succeeds; each delivery verifies with the `standardwebhooks` package; a webhook that keeps
 * failing is disabled, enabled again and redelivered; owner checks, the quota and the URL guard.
 */
import { expect } from "chai";
import { Webhook } from "standardwebhooks";
import { serverFixture, startTestServer, type TestServer } from "./harness";
import { expectError, expectOk } from "./expect";
import { brief, CRITERIA } from "./lifecycle/helpers";
import { webhookReceiver, until, type WebhookReceiver } from "../support/webhook-receiver";
import { webhookOutbound } from "../../server/app";
import { createWebhookSender, type WebhookSender } from "../../server/webhooks";
import { verifyWebhook, WebhookVerificationError } from "@market/core/webhooks";
import type { EventPage, MarketEvent, Redelivered, WebhookCreated, WebhookDeliveries, WebhookList, WebhookView } from "@market/core/api";

const seeded = serverFixture(async (s) => ({
  posterKey: await s.apiKeyFor(s.poster),
  agentKey: await s.registerAgent(s.worker, ["summarization"]),
  strangerKey: await s.registerAgent(s.stranger, ["summarization"]),
}));

describe("server: webhooks", function () {
  let s: TestServer;
  let posterKey: string;
  let agentKey: string;
  let strangerKey: string;
  let sender: WebhookSender | undefined;
  const receivers: WebhookReceiver[] = [];

  beforeEach(async function () {
    ({
      server: s,
      seeded: { posterKey, agentKey, strangerKey },
    } = await seeded());
  });
  afterEach(async function () {
    await sender?.stop();
    sender = undefined;
    for (const r of receivers.splice(0)) await r.stop();
    await s.close();
  });

  function startSender(retryDelaysMs: number[], timeoutMs = 300) {
    const outbound = webhookOutbound(s.hostedConfig);
    sender = createWebhookSender({ db: s.db, box: outbound.box!, fetch: outbound.fetch, retryDelaysMs, timeoutMs, pollMs: 20 });
    sender.start();
    return sender;
  }
  async function subscribe(key: string, url: string, extra: Record<string, unknown> = {}) {
    return expectOk(await s.call<WebhookCreated>("POST", "/api/v1/webhooks", { key, body: { url, after: "0", ...extra } }));
  }
  async function replay(key: string): Promise<MarketEvent[]> {
    return expectOk(await s.call<EventPage>("GET", "/api/v1/events?limit=500", { key })).events;
  }
  const deliveries = async (key: string, id: number) =>
    expectOk(await s.call<WebhookDeliveries>("GET", `/api/v1/webhooks/${id}/deliveries`, { key })).deliveries;

  it("down, then 500, then a timeout, then 200: every event arrives, verified by standardwebhooks, none lost, in replay's ids", async function () {
    const down = webhookReceiver((attempt) => (attempt === 1 ? 500 : attempt === 2 ? "hang" : 200));
    receivers.push(down);
    await down.start();
    await down.stop(); // the port is known, and nothing listens on it
    const strangerHook = webhookReceiver();
    receivers.push(strangerHook);
    await strangerHook.start();
    const { webhook, secret } = await subscribe(posterKey, down.url);
    const forStranger = await subscribe(strangerKey, strangerHook.url);
    expect(secret).to.match(/^whsec_[A-Za-z0-9+/]{43}=$/);

    // A public task and a private one (wrapped to the worker): the poster's webhook gets both, the stranger's neither private event.
    await s.post(s.poster, posterKey, s.publicTask(brief(), { verificationCriteria: CRITERIA }));
    const { fields } = await s.privateTask("A private brief for the worker alone, about Hamlet.", [s.worker], posterKey);
    const { taskHash: privateHash } = await s.post(s.poster, posterKey, fields);
    startSender([50, 50, 50, 50, 50]);

    // Down for the first attempts of every event.
    const expected = (await replay(posterKey)).map((e) => e.id);
    expect(expected.length).to.be.greaterThanOrEqual(4);
    const refusedTwice = async () => {
      const log = await deliveries(posterKey, webhook.id);
      return log.length === expected.length && log.every((d) => d.attempts >= 2 && d.lastError !== null);
    };
    await until(refusedTwice, 20_000, "two refused attempts of every event");
    const refused = await deliveries(posterKey, webhook.id);
    expect(refused.map((d) => d.status)).to.not.include("delivered");
    expect(refused[0]!.lastError).to.match(/fetch failed|ECONNREFUSED/);
    await down.start();
    const allDelivered = async (key: string, id: number) => {
      const log = await deliveries(key, id);
      return log.length > 0 && log.every((d) => d.status === "delivered");
    };
    await until(() => allDelivered(posterKey, webhook.id), 30_000, "every delivery");

    const verifier = new Webhook(secret);
    const delivered = down.received.filter((r) => r.answered === 200);
    for (const r of down.received) {
      const payload = verifier.verify(r.body, r.headers as Record<string, string>) as { type: string; data: MarketEvent };
      expect(payload.data.id).to.equal(r.headers["webhook-id"]);
      expect(verifyWebhook(secret, r.body, r.headers)).to.deep.equal(payload);
    }
    expect(down.received.map((r) => r.answered)).to.include.members([500, "hang", 200]);
    // Each event: one 500, one timeout, one success; nothing twice after its success.
    expect([...new Set(delivered.map((r) => r.headers["webhook-id"]))]).to.have.members(expected);
    expect(delivered).to.have.length(expected.length);
    for (const id of expected) expect(down.attempts.get(id)).to.equal(3);
    const byCursor = delivered.map((r) => JSON.parse(r.body).data as MarketEvent).sort((a, b) => Number(a.cursor) - Number(b.cursor));
    expect(byCursor.map((e) => e.id)).to.deep.equal(expected);

    const log = await deliveries(posterKey, webhook.id);
    expect(log.every((d) => d.lastStatus === 200 && d.attempts >= 5 && d.deliveredAt !== null)).to.equal(true);

    // A tampered body or another secret fails verification.
    const one = delivered[0]!;
    expect(() => verifier.verify(one.body.replace("task.", "tusk."), one.headers as Record<string, string>)).to.throw();
    expect(() => verifyWebhook(forStranger.secret, one.body, one.headers)).to.throw(WebhookVerificationError);

    // The stranger's webhook: the public task's events, nothing of the private one.
    await until(() => allDelivered(strangerKey, forStranger.webhook.id));
    const strangerIds = strangerHook.received.map((r) => JSON.parse(r.body).data as MarketEvent);
    expect(strangerIds.length).to.be.greaterThan(0);
    expect(strangerIds.every((e) => e.public && e.taskHash !== privateHash)).to.equal(true);
  });

  it("a webhook that keeps failing is disabled; enabled again and redelivered, it gets every event", async function () {
    let healthy = false;
    const receiver = webhookReceiver(() => (healthy ? 200 : 503));
    receivers.push(receiver);
    await receiver.start();
    const { webhook, secret } = await subscribe(posterKey, receiver.url);
    await s.post(s.poster, posterKey, s.publicTask(brief(), { verificationCriteria: CRITERIA }));
    startSender([20, 20]);
    await until(async () => expectOk(await s.call<WebhookView>("GET", `/api/v1/webhooks/${webhook.id}`, { key: posterKey })).status === "disabled");
    // An attempt in flight when the webhook was disabled still records its answer: wait until the log stands still.
    let last = "";
    await until(async () => {
      const now = JSON.stringify(await deliveries(posterKey, webhook.id));
      const still = now === last;
      last = now;
      if (!still) await new Promise((resolve) => setTimeout(resolve, 300));
      return still;
    });
    const disabled = expectOk(await s.call<WebhookView>("GET", `/api/v1/webhooks/${webhook.id}`, { key: posterKey }));
    expect(disabled.disabledReason).to.match(/failed 3 attempts: answered 503/);
    const failed = (await deliveries(posterKey, webhook.id)).filter((d) => d.status === "failed");
    expect(failed.length).to.be.greaterThan(0);
    expect(failed.every((d) => d.attempts === 3 && d.lastStatus === 503)).to.equal(true);

    healthy = true;
    expect(expectOk(await s.call<WebhookView>("POST", `/api/v1/webhooks/${webhook.id}/enable`, { key: posterKey })).status).to.equal("active");
    const requeued = expectOk(await s.call<Redelivered>("POST", `/api/v1/webhooks/${webhook.id}/redeliver`, { key: posterKey, body: {} }));
    expect(requeued.requeued).to.equal(failed.length);
    await until(async () => (await deliveries(posterKey, webhook.id)).every((d) => d.status === "delivered"), 20_000, "redelivery");
    const ok = receiver.received.filter((r) => r.answered === 200);
    expect(new Set(ok.map((r) => r.headers["webhook-id"]))).to.deep.equal(new Set((await replay(posterKey)).map((e) => e.id)));
    for (const r of ok) new Webhook(secret).verify(r.body, r.headers as Record<string, string>);

    // One event again on request.
    const again = ok[0]!.headers["webhook-id"] as string;
    expect(
      expectOk(await s.call<Redelivered>("POST", `/api/v1/webhooks/${webhook.id}/redeliver`, { key: posterKey, body: { eventIds: [again] } }))
        .requeued,
    ).to.equal(1);
    await until(() => receiver.received.filter((r) => r.headers["webhook-id"] === again && r.answered === 200).length === 2);
  });

  it("owner checks from another account, the quota, the secret shown once and sealed at rest", async function () {
    const { webhook, secret } = await subscribe(posterKey, "http://127.0.0.1:9/hook");
    for (const [method, path, body] of [
      ["GET", "", undefined],
      ["DELETE", "", undefined],
      ["POST", "/enable", undefined],
      ["POST", "/redeliver", {}],
      ["GET", "/deliveries", undefined],
    ] as const) {
      expectError(
        await s.call(method, `/api/v1/webhooks/${webhook.id}${path}`, { key: strangerKey, ...(body ? { body } : {}) }),
        "WEBHOOK_NOT_FOUND",
      );
    }
    expectError(await s.call("GET", "/api/v1/webhooks/999999", { key: posterKey }), "WEBHOOK_NOT_FOUND");
    expectError(await s.call("GET", "/api/v1/webhooks"), "AUTH_REQUIRED");
    expect(expectOk(await s.call<WebhookList>("GET", "/api/v1/webhooks", { key: strangerKey })).webhooks).to.deep.equal([]);
    const listed = expectOk(await s.call<WebhookList>("GET", "/api/v1/webhooks", { key: posterKey }));
    expect(JSON.stringify(listed)).to.not.include(secret.slice(6));
    const row = await s.db.selectFrom("webhook_subscriptions").select("secret").where("id", "=", webhook.id).executeTakeFirstOrThrow();
    expect(row.secret).to.match(/^v1\./);
    expect(row.secret).to.not.include(secret.slice(6));

    for (let i = 1; i < 10; i++) await subscribe(posterKey, `http://127.0.0.1:9/hook${i}`);
    expectError(await s.call("POST", "/api/v1/webhooks", { key: posterKey, body: { url: "http://127.0.0.1:9/eleventh" } }), "WEBHOOK_QUOTA_EXCEEDED");
    expectOk(await s.call("DELETE", `/api/v1/webhooks/${webhook.id}`, { key: posterKey }));
    await subscribe(posterKey, "http://127.0.0.1:9/eleventh");

    expectError(await s.call("POST", "/api/v1/webhooks", { key: agentKey, body: { url: "ftp://example.com/hook" } }), "WEBHOOK_URL_REFUSED");
    expectError(await s.call("POST", "/api/v1/webhooks", { key: agentKey, body: { url: "http://user:pw@example.com/hook" } }), "WEBHOOK_URL_REFUSED");
    expectError(await s.call("POST", "/api/v1/webhooks", { key: agentKey, body: { url: "not a url" } }), "WEBHOOK_URL_REFUSED");
    expectError(
      await s.call("POST", "/api/v1/webhooks", { key: agentKey, body: { url: "https://example.com/", chain: "base" } }),
      "CHAIN_NOT_CONFIGURED",
    );
    expectError(
      await s.call("POST", "/api/v1/webhooks", { key: agentKey, body: { url: "https://example.com/", types: ["task.stolen"] } }),
      "VALIDATION_FAILED",
    );
  });

  it("SSRF: with private networks refused, loopback, private and plain-http URLs are refused at subscribe and at send", async function () {
    const guarded = await startTestServer({ hosted: { allowPrivateNetworks: false } });
    try {
      const key = await guarded.apiKeyFor(guarded.poster);
      for (const url of [
        "http://example.com/hook",
        "https://127.0.0.1/hook",
        "https://localhost/hook",
        "https://10.0.0.8/hook",
        "https://169.254.169.254/latest/meta-data",
        "https://[::ffff:127.0.0.1]/hook",
        "https://[::1]/hook",
      ]) {
        expectError(await guarded.call("POST", "/api/v1/webhooks", { key, body: { url } }), "WEBHOOK_URL_REFUSED");
      }
      expectOk(await guarded.call("POST", "/api/v1/webhooks", { key, body: { url: "https://example.com/hook" } }));
      // The sender's fetch refuses a private address even when a row names one (checked again at connect time).
      const outbound = webhookOutbound(guarded.hostedConfig);
      let refusal: unknown;
      await outbound.fetch("https://127.0.0.1:9/hook", { method: "POST" }).catch((error: unknown) => (refusal = error));
      expect((refusal as Error).name).to.equal("FetchRefused");
    } finally {
      await guarded.close();
    }
  });
});
