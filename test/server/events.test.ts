/**
 * The event log (issue 27): events written in the indexer's transactions and at listing, replayed a page at a time
 * and streamed over Server-Sent Events, each filtered to what the key may see; a reorg appends compensating events.
 */
import { expect } from "chai";
import hre from "hardhat";
import { mine } from "@nomicfoundation/hardhat-network-helpers";
import { serverFixture, type TestServer } from "./harness";
import { expectError, expectOk } from "./expect";
import { CRITERIA, PASSING, brief, steps } from "./lifecycle/helpers";
import { eventPage, streamEvents } from "../../sdk/src/events";
import { MarketClient } from "../../sdk/src/client";
import type { EventPage, MarketEvent } from "@market/core/api";

const send = (method: string, params: unknown[] = []) => hre.network.provider.send(method, params);

const seeded = serverFixture(async (s) => ({
  posterKey: await s.apiKeyFor(s.poster),
  agentKey: await s.registerAgent(s.worker, ["summarization"]),
  strangerKey: await s.registerAgent(s.stranger, ["summarization"]),
}));

describe("server: the event log", function () {
  let s: TestServer;
  let posterKey: string;
  let agentKey: string;
  let strangerKey: string;

  beforeEach(async function () {
    ({
      server: s,
      seeded: { posterKey, agentKey, strangerKey },
    } = await seeded());
  });
  afterEach(async function () {
    await s.close();
  });

  async function page(key: string, query = ""): Promise<EventPage> {
    return expectOk(await s.call<EventPage>("GET", `/api/v1/events${query ? `?${query}` : ""}`, { key }));
  }
  /** Every event the key sees, page by page. */
  async function all(key: string, query = "", limit = 100): Promise<MarketEvent[]> {
    const events: MarketEvent[] = [];
    for (let after = "0"; ;) {
      const next = await page(key, `after=${after}&limit=${limit}${query ? `&${query}` : ""}`);
      events.push(...next.events);
      if (!next.more) return events;
      after = next.next;
    }
  }
  const ofTask = (events: MarketEvent[], taskHash: string) => events.filter((e) => e.taskHash === taskHash.toLowerCase());

  /** A public task taken, delivered and paid through the API. */
  async function paidTask() {
    const t = steps(s);
    const { taskHash } = await s.post(s.poster, posterKey, s.publicTask(brief(), { verificationCriteria: CRITERIA }), 5_000_003n);
    expectOk(await t.accept(agentKey, taskHash));
    await s.sync();
    const txHash = await t.deliverOnChain(s.worker, agentKey, taskHash, PASSING);
    expectOk(await t.finalize(agentKey, taskHash, txHash));
    await s.sync();
    return taskHash;
  }

  it("a paid task's life, in cursor order, for its poster, its worker and (public) everyone else", async function () {
    const taskHash = await paidTask();
    const everything = ofTask(await all(posterKey), taskHash);
    // The verdict's reasons come in the transaction that records them: before or after the indexer's task.verified.
    const forPoster = everything.filter((e) => e.type !== "task.verdict");
    const types = forPoster.map((e) => e.type);
    // Listed once both the funding is indexed and the listing recorded (whichever came second says so).
    expect(types).to.deep.equal(["task.funded", "task.listed", "task.assigned", "task.delivered", "task.verified", "task.paid"]);
    const verdicts = everything.filter((e) => e.type === "task.verdict");
    expect(verdicts).to.have.length(1);
    expect(verdicts[0]!.public).to.equal(false);
    expect(verdicts[0]!.data).to.deep.include({ round: 1, passed: true, judgedBy: "auto" });
    expect(verdicts[0]!.data.reasons).to.be.an("array");
    const cursors = forPoster.map((e) => Number(e.cursor));
    expect(cursors).to.deep.equal([...cursors].sort((a, b) => a - b));
    expect(new Set(forPoster.map((e) => e.id)).size).to.equal(forPoster.length);
    const paid = forPoster.at(-1)!;
    expect(paid.data).to.include({ worker: s.worker.address, payout: "4500003", fee: "500000" });
    expect(paid.blockNumber).to.be.a("number");
    expect(paid.public).to.equal(true);

    // The funding is the poster's own; the rest of a public task is public but its verdict's reasons, which only the
    // poster, the worker and the verifier see (as the task view shows them).
    const notFunding = forPoster.filter((e) => e.type !== "task.funded").map((e) => e.id);
    const forWorker = ofTask(await all(agentKey), taskHash);
    expect(forWorker.filter((e) => e.type !== "task.verdict").map((e) => e.id)).to.deep.equal(notFunding);
    expect(forWorker.filter((e) => e.type === "task.verdict").map((e) => e.id)).to.deep.equal([verdicts[0]!.id]);
    const forStranger = ofTask(await all(strangerKey), taskHash);
    expect(forStranger.map((e) => e.id)).to.deep.equal(notFunding);
    const listed = forStranger.find((e) => e.type === "task.listed")!;
    expect(listed.data).to.include({ privacy: "public", amount: "5000003", verificationMode: "auto" });
    expect(JSON.stringify(listed)).to.not.include("Hamlet");
  });

  it("a task listed before its funding is indexed is announced by the indexing, once, when a browse shows it", async function () {
    await s.sync();
    const head = (await page(agentKey, "after=now&limit=1")).next;
    const fields = s.publicTask(brief(), { verificationCriteria: CRITERIA });
    await s.indexer.stop();
    const built = expectOk(
      await s.call<{ taskHash: string; transactions: [] }>("POST", "/api/v1/tasks", {
        key: posterKey,
        body: { ...fields, amount: "5000000", duration: 86_400 },
      }),
    );
    const txHash = await s.sendAll(s.poster, built.transactions);
    expectOk(await s.call("POST", "/api/v1/a2a/tasks/index", { key: posterKey, body: { ...fields, txHash } }));
    // Listed, not yet indexed: a worker's browse does not show it, so no event tells workers to look.
    const browse = async () =>
      expectOk(await s.call<{ tasks: Array<{ meta: { taskHash: string } }> }>("GET", "/api/v1/a2a/tasks", { key: agentKey })).tasks.map(
        (t) => t.meta.taskHash,
      );
    expect(await browse()).to.not.include(built.taskHash);
    expect(ofTask((await page(agentKey, `after=${head}`)).events, built.taskHash)).to.deep.equal([]);

    s.indexer.start();
    await s.sync();
    expect(await browse()).to.include(built.taskHash);
    const seen = ofTask(await all(posterKey), built.taskHash).map((e) => e.type);
    expect(seen).to.deep.equal(["task.funded", "task.listed"]);
    const listed = ofTask((await page(agentKey, `after=${head}`)).events, built.taskHash);
    expect(listed.map((e) => e.type)).to.deep.equal(["task.listed"]);
    expect(listed[0]!.data).to.include({ privacy: "public", amount: "5000000" });
    // Listing again (a rerun) announces nothing more.
    expectOk(await s.call("POST", "/api/v1/a2a/tasks/index", { key: posterKey, body: { ...fields, txHash } }));
    expect(ofTask(await all(posterKey), built.taskHash).map((e) => e.type)).to.deep.equal(["task.funded", "task.listed"]);
  });

  it("a private task's events reach its poster and invited agent, never another agent's key", async function () {
    const t = steps(s);
    const { fields } = await s.privateTask("A private brief about Hamlet and Ophelia.", [s.worker], posterKey);
    const { taskHash } = await s.post(s.poster, posterKey, fields);
    expectOk(await t.accept(agentKey, taskHash));
    await s.sync();
    expect(ofTask(await all(posterKey), taskHash).map((e) => e.type)).to.include.members(["task.funded", "task.listed", "task.assigned"]);
    const forWorker = ofTask(await all(agentKey), taskHash);
    expect(forWorker.map((e) => e.type)).to.include.members(["task.listed", "task.assigned"]);
    expect(forWorker.every((e) => !e.public)).to.equal(true);
    expect(ofTask(await all(strangerKey), taskHash)).to.deep.equal([]);
    expect(ofTask(await all(strangerKey, `taskHash=${taskHash}`), taskHash)).to.deep.equal([]);
  });

  it("pages: limit, next and more give every event once; a type filter keeps its types; refusals", async function () {
    const taskHash = await paidTask();
    const whole = await all(posterKey);
    const paged = await all(posterKey, "", 2);
    expect(paged.map((e) => e.id)).to.deep.equal(whole.map((e) => e.id));
    const first = await page(posterKey, "limit=2");
    expect(first.more).to.equal(true);
    expect(first.next).to.equal(first.events[1]!.cursor);
    const rest = await page(posterKey, `after=${first.next}&limit=500`);
    expect(rest.events.map((e) => e.id)).to.deep.equal(whole.slice(2).map((e) => e.id));
    expect(rest.more).to.equal(false);
    const paidOnly = await all(posterKey, `types=task.paid,task.verified&taskHash=${taskHash}`);
    expect(paidOnly.map((e) => e.type)).to.deep.equal(["task.verified", "task.paid"]);

    // `now`: nothing yet, and the head to resume from.
    const now = await page(posterKey, "after=now");
    expect(now.events).to.deep.equal([]);
    expect(now.next).to.equal(whole.at(-1)!.cursor);
    expect(now.more).to.equal(false);

    expectError(await s.call("GET", "/api/v1/events"), "AUTH_REQUIRED");
    expectError(await s.call("GET", "/api/v1/events?limit=0", { key: posterKey }), "VALIDATION_FAILED");
    expectError(await s.call("GET", "/api/v1/events?limit=501", { key: posterKey }), "VALIDATION_FAILED");
    expectError(await s.call("GET", "/api/v1/events?after=-1", { key: posterKey }), "VALIDATION_FAILED");
    expectError(await s.call("GET", "/api/v1/events?types=task.stolen", { key: posterKey }), "VALIDATION_FAILED");
    expectError(await s.call("GET", "/api/v1/events?chain=base", { key: posterKey }), "CHAIN_NOT_CONFIGURED");
  });

  it("streams over SSE as events commit, resumes after Last-Event-ID, and bounds the streams of an account", async function () {
    await s.app.listen({ host: "127.0.0.1", port: 0 });
    const address = s.app.server.address();
    const baseUrl = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
    const abort = new AbortController();
    const seen: MarketEvent[] = [];
    const reading = (async () => {
      for await (const event of streamEvents({ baseUrl, apiKey: agentKey, signal: abort.signal })) {
        seen.push(event);
        if (event.type === "task.paid") return;
      }
    })();
    const taskHash = await paidTask();
    await reading;
    expect(ofTask(seen, taskHash).map((e) => e.type)).to.include.members(["task.assigned", "task.delivered", "task.verified", "task.paid"]);
    const cursors = seen.map((e) => Number(e.cursor));
    expect(cursors).to.deep.equal([...cursors].sort((a, b) => a - b));
    const replay = await eventPage({ baseUrl, apiKey: agentKey, limit: 500 });
    expect(seen.map((e) => e.id)).to.deep.equal(replay.events.slice(0, seen.length).map((e) => e.id));

    // The client's iterator resumes after the third event: the fourth onwards, and nothing before.
    const resumed: MarketEvent[] = [];
    for await (const event of new MarketClient({ baseUrl, apiKey: agentKey }).events({ after: seen[2]!.cursor, signal: abort.signal })) {
      resumed.push(event);
      if (event.id === seen.at(-1)!.id) break;
    }
    expect(resumed.map((e) => e.id)).to.deep.equal(seen.slice(3).map((e) => e.id));

    // A stream that breaks after every second event: the iterator reconnects with Last-Event-ID, each event once, in order.
    let connections = 0;
    const breaking: typeof fetch = async (input, init) => {
      connections++;
      const response = await fetch(input, init);
      const reader = response.body!.getReader();
      let text = "";
      let events = 0;
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          const { value, done } = await reader.read();
          if (done) return controller.close();
          text += Buffer.from(value).toString("utf8");
          // Whole messages pass; after the second event the body ends, as a broken connection would.
          for (let at = text.indexOf("\n\n"); at >= 0; at = text.indexOf("\n\n")) {
            const message = text.slice(0, at + 2);
            text = text.slice(at + 2);
            controller.enqueue(new TextEncoder().encode(message));
            if (/(^|\n)id: /.test(message) && ++events === 2) {
              await reader.cancel().catch(() => undefined);
              return controller.close();
            }
          }
        },
      });
      return new Response(body, { status: response.status, headers: response.headers });
    };
    const rejoined: MarketEvent[] = [];
    for await (const event of streamEvents({ baseUrl, apiKey: agentKey, signal: abort.signal, reconnectMs: 10, fetch: breaking })) {
      rejoined.push(event);
      if (event.id === seen.at(-1)!.id) break;
    }
    expect(rejoined.map((e) => e.id)).to.deep.equal(seen.map((e) => e.id));
    expect(connections).to.be.greaterThan(1);

    // Ten streams per account; the eleventh is refused until one closes.
    const streams = await Promise.all(
      Array.from({ length: 10 }, () => fetch(`${baseUrl}/api/v1/events/stream`, { headers: { "x-api-key": posterKey }, signal: abort.signal })),
    );
    expect(streams.map((r) => r.status)).to.deep.equal(Array(10).fill(200));
    const refused = await fetch(`${baseUrl}/api/v1/events/stream`, { headers: { "x-api-key": posterKey } });
    expect(refused.status).to.equal(429);
    expect(((await refused.json()) as { error: { code: string } }).error.code).to.equal("EVENT_STREAMS_EXCEEDED");
    const other = await fetch(`${baseUrl}/api/v1/events/stream`, { headers: { "x-api-key": strangerKey }, signal: abort.signal });
    expect(other.status).to.equal(200);
    const unauthenticated = await fetch(`${baseUrl}/api/v1/events/stream`);
    expect(unauthenticated.status).to.equal(401);
    const badResume = await fetch(`${baseUrl}/api/v1/events/stream`, { headers: { "x-api-key": strangerKey, "last-event-id": "x" } });
    expect(badResume.status).to.equal(400);
    abort.abort();
  });

  it("a reorg that removes a delivery appends a compensating event the same parties see", async function () {
    const t = steps(s);
    const { taskHash } = await s.post(s.poster, posterKey, s.publicTask(brief(), { verificationCriteria: CRITERIA }), 5_000_003n);
    expectOk(await t.accept(agentKey, taskHash));
    await s.sync();
    const fork = (await send("evm_snapshot")) as string;
    await t.deliverOnChain(s.worker, agentKey, taskHash, PASSING);
    const delivered = ofTask(await all(agentKey), taskHash).find((e) => e.type === "task.delivered");
    expect(delivered, "task.delivered before the reorg").to.not.equal(undefined);

    await send("evm_revert", [fork]);
    await mine(3);
    await s.sync();
    const after = ofTask(await all(agentKey), taskHash);
    const reverted = after.filter((e) => e.type === "event.reverted");
    expect(reverted).to.have.length(1);
    expect(reverted[0]!.data).to.include({ reverts: delivered!.id, revertedType: "task.delivered" });
    expect(Number(reverted[0]!.cursor)).to.be.greaterThan(Number(delivered!.cursor));
    expect(ofTask(await all(strangerKey), taskHash).map((e) => e.id)).to.include(reverted[0]!.id);
    const row = await s.db.selectFrom("escrow_tasks").select("rounds").where("task_hash", "=", taskHash.toLowerCase()).executeTakeFirstOrThrow();
    expect(row.rounds).to.equal(0);
  });
});
