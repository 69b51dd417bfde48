/**
 * Webhooks across processes (issue 27, docs/events.md): two API processes (`npm run server`) on one PostgreSQL
 * database, a loopback receiver that answers slowly. The process holding the webhooks lease is killed with SIGKILL
 * while deliveries are in flight, after their events were committed; the other takes the lease over and delivers the
 * rest. Every event of the log the key may see arrives; an id arrives twice only if its first arrival was in flight
 * when the sender died (what "at least once" means here); before the kill, with both processes up, none arrives twice.
 * Runs under `npm run test:postgres` (it needs TEST_DATABASE_URL).
 */
import { expect } from "chai";
import hre from "hardhat";
import { loadFixture } from "@nomicfoundation/hardhat-network-helpers";
import { Webhook } from "standardwebhooks";
import { deployEscrowFixture, POSTER_FUNDS } from "../fixtures/escrow";
import { randomActivity, serveNetwork, waitFor } from "../indexer/helpers";
import { testDatabase } from "./harness";
import { apiKeyOver, postJson, serverEnv, startServerProcess, type ServerProcess } from "../support/server-process";
import { webhookReceiver } from "../support/webhook-receiver";
import { WEBHOOKS_LEASE } from "../../server/webhooks";
import { readCursor } from "../../server/indexer";
import type { EventPage, WebhookCreated } from "@market/core/api";

async function activityFixture() {
  const fixture = await deployEscrowFixture();
  await fixture.usdc.mint(fixture.poster.address, POSTER_FUNDS);
  return fixture;
}

async function leasesOf(server: ServerProcess): Promise<string[]> {
  return ((await (await fetch(`${server.url}/health`)).json()) as { data: { leases: string[] } }).data.leases;
}

describe("webhooks: two processes on one PostgreSQL database, the sender killed mid-delivery", function () {
  this.timeout(300_000);

  before(function () {
    if (!process.env.TEST_DATABASE_URL) this.skip();
  });

  it("every event is delivered; none twice but those in flight at the kill", async function () {
    const fixture = await loadFixture(activityFixture);
    const network = await serveNetwork();
    const { db, url: databaseUrl, drop } = await testDatabase();
    const servers: ServerProcess[] = [];
    // Each answer 150 ms late: with 16 attempts in flight, a kill always finds some unanswered.
    const receiver = webhookReceiver(() => 200);
    await receiver.start();
    try {
      const env = await serverEnv(fixture, {
        rpcUrl: network.url,
        dir: "/tmp",
        databaseUrl,
        extra: { BLOB_STORE: "database", LEASE_RETRY_MS: "300", WEBHOOK_RETRY_DELAYS_MS: "200,200,200,200", WEBHOOK_TIMEOUT_MS: "3000" },
      });
      servers.push(...(await Promise.all([startServerProcess(env), startServerProcess(env)])));
      await waitFor(async () => (await Promise.all(servers.map(leasesOf))).some((l) => l.includes(WEBHOOKS_LEASE)), 15_000, "a webhook sender");
      const holders = await Promise.all(servers.map(async (s) => (await leasesOf(s)).includes(WEBHOOKS_LEASE)));
      expect(holders.filter(Boolean)).to.have.length(1);
      const sender = servers[holders.indexOf(true)]!;
      const survivor = servers[holders.indexOf(false)]!;

      const key = await apiKeyOver(survivor.url, fixture.poster);
      receiver.delayMs = 150;
      const { secret } = await postJson<WebhookCreated>(survivor.url, "/api/v1/webhooks", { url: receiver.url, after: "0" }, { "x-api-key": key });

      // Escrow activity of the poster, indexed by whichever process indexes: its events are committed, then delivered.
      await randomActivity(fixture, { seed: 91, steps: 80, tag: "webhooks-scale-out" });
      await waitFor(async () => receiver.received.length >= 20, 60_000, "the first deliveries");
      const killedAt = Date.now();
      await sender.kill();
      const firstArrival = new Map<string, number>();
      for (const r of receiver.received)
        if (!firstArrival.has(String(r.headers["webhook-id"]))) firstArrival.set(String(r.headers["webhook-id"]), r.at);

      await waitFor(async () => (await leasesOf(survivor)).includes(WEBHOOKS_LEASE), 15_000, "the survivor to take the sender over");
      const head = await hre.ethers.provider.getBlockNumber();
      await waitFor(async () => ((await readCursor(db, "arc"))?.number ?? 0) >= head, 60_000, "the index to reach the head");
      const expected: string[] = [];
      for (let after = "0"; ;) {
        const page = await fetch(`${survivor.url}/api/v1/events?after=${after}&limit=500`, { headers: { "x-api-key": key } }).then(
          async (r) => ((await r.json()) as { data: EventPage }).data,
        );
        expected.push(...page.events.map((e) => e.id));
        if (!page.more) break;
        after = page.next;
      }
      expect(expected.length).to.be.greaterThan(40);
      await waitFor(
        async () => new Set(receiver.received.map((r) => String(r.headers["webhook-id"]))).size >= expected.length,
        60_000,
        "every event",
      );

      const ids = receiver.received.map((r) => String(r.headers["webhook-id"]));
      expect(new Set(ids)).to.deep.equal(new Set(expected));
      const verifier = new Webhook(secret);
      for (const r of receiver.received) verifier.verify(r.body, r.headers as Record<string, string>);
      // Twice only for an attempt in flight at the kill: first received within one answer's delay of it, or after it
      // (sent before the kill, answered to a dead sender).
      const twice = [...new Set(ids.filter((id, i) => ids.indexOf(id) !== i))];
      for (const id of twice) expect(firstArrival.get(id) ?? Infinity, `first arrival of ${id}`).to.be.at.least(killedAt - 1_000);
      const beforeKill = receiver.received.filter((r) => r.at < killedAt - 1_000).map((r) => String(r.headers["webhook-id"]));
      expect(new Set(beforeKill).size).to.equal(beforeKill.length);
      console.log(`      ${expected.length} events, ${ids.length} deliveries, ${twice.length} sent twice across the kill`);
    } finally {
      for (const server of servers) await server.kill();
      await receiver.stop();
      await network.close();
      await drop();
    }
  });
});
