/**
 * Disputes as a weapon (docs/security.md, issue 14 item 8): the spec's windows stay; a dispute the worker raised that
 * ends without a ruling costs it as a dispute lost (-10), while a poster's unruled dispute costs the worker nothing;
 * the service's admin sees the disputes awaiting a ruling (GET /api/v1/admin/disputes, X-Admin-Key), most urgent first.
 */
import { expect } from "chai";
import { startTestServer, type TestServer } from "../harness";
import { expectError, expectOk } from "../expect";
import { AMOUNT, brief, CRITERIA, DAY, PASSING, steps, type Steps } from "../lifecycle/helpers";
import { ADMIN_FAILURES_PER_MINUTE } from "../../../server/admin";
import { Ending } from "@market/core/escrow";
import type { AdminDisputes } from "@market/core/api";

const ADMIN_KEY = "admin-key-for-tests-0123456789abcdef0123456789";

interface Reputation {
  reputation: number;
  offChainDisputes: number;
}

describe("hardening: disputes as a weapon", function () {
  let s: TestServer | undefined;
  let t: Steps;
  let agentKey: string;
  let posterKey: string;
  afterEach(async function () {
    await s?.close();
    s = undefined;
  });

  async function boot() {
    s = await startTestServer({ adminApiKey: ADMIN_KEY });
    t = steps(s);
    agentKey = await s.registerAgent(s.worker, ["summarization"]);
    posterKey = await s.apiKeyFor(s.poster);
    return s;
  }
  const accepted = async (server: TestServer) => {
    const { taskHash } = await server.post(
      server.poster,
      posterKey,
      server.publicTask(brief(), { verificationCriteria: CRITERIA, requiredCapabilities: ["summarization"] }),
      AMOUNT,
    );
    expectOk(await t.accept(agentKey, taskHash));
    return taskHash;
  };
  const disputes = (server: TestServer, headers: Record<string, string> = { "x-admin-key": ADMIN_KEY }) =>
    server.call<AdminDisputes>("GET", "/api/v1/admin/disputes", { headers });
  const reputation = async (server: TestServer) => expectOk(await server.call<Reputation>("GET", `/api/v1/reputation/${server.worker.address}`));
  const stats = async (server: TestServer) =>
    server.db.selectFrom("capability_stats").select(["completions", "failures"]).where("address", "=", server.worker.address).execute();

  it("lists disputes awaiting a ruling for the admin; a worker's unruled dispute costs it 10, a poster's nothing", async function () {
    const server = await boot();
    const byWorker = await accepted(server);
    const byPoster = await accepted(server);
    const unjudged = await accepted(server);
    // The worker disputes at once, before delivering anything; the poster disputes another; a third is delivered and
    // never judged.
    await t.settle(server.worker, agentKey, byWorker, "dispute", "dispute");
    await t.settle(server.poster, posterKey, byPoster, "dispute", "dispute");
    await t.deliverOnChain(server.worker, agentKey, unjudged, PASSING);
    await server.sync();
    const raisedAt = (await t.escrowRow(byWorker)).phase_at!;

    const listed = expectOk(await disputes(server));
    expect(listed.total).to.equal(2);
    expect(listed.disputes.map((d) => [d.taskHash, d.status, d.raisedBy])).to.have.deep.members([
      [byWorker, "disputed", server.worker.address],
      [byPoster, "disputed", server.poster.address],
    ]);
    const first = listed.disputes.find((d) => d.taskHash === byWorker)!;
    expect(first).to.deep.include({ chain: "arc", poster: server.poster.address, worker: server.worker.address, amount: AMOUNT.toString() });
    expect(first.since).to.equal(raisedAt);
    // The spec's window: 14 days after the dispute (never before the deadline).
    expect(first.ruleBy).to.equal(raisedAt + 14 * DAY);
    expect(first.overdue).to.equal(false);
    expect(first.secondsLeft).to.be.within(14 * DAY - 120, 14 * DAY);

    // Past the deadline the poster escalates the unjudged work: it awaits a ruling too, due last.
    await t.travel(DAY + 60);
    await t.settle(server.poster, posterKey, unjudged, "claim-timeout", "escalate");
    await server.sync();
    const three = expectOk(await disputes(server)).disputes;
    expect(three.map((d) => d.status)).to.deep.equal(["disputed", "disputed", "escalated"]);
    expect(three[2]).to.deep.include({ taskHash: unjudged, raisedBy: null });
    expect(three[0]!.ruleBy).to.be.at.most(three[1]!.ruleBy);

    // Nobody rules: 14 days on, both disputes are overdue (the escalation, a day younger, not yet) and the poster takes
    // the refunds.
    await t.travel(14 * DAY - 3_600);
    const overdue = expectOk(await disputes(server)).disputes;
    expect(overdue.filter((d) => d.overdue).map((d) => d.taskHash)).to.have.members([byWorker, byPoster]);
    expect(overdue.find((d) => d.taskHash === byWorker)?.secondsLeft).to.equal(0);
    expect(await reputation(server)).to.deep.include({ reputation: 50, offChainDisputes: 2 });

    await t.settle(server.poster, posterKey, byPoster, "claim-timeout", "refund");
    await server.sync();
    expect((await t.escrowRow(byPoster)).ending).to.equal(Ending.DisputeUnruled);
    // The poster's own dispute, unruled: a failure for the task's tags, no reputation lost by the worker.
    expect(await reputation(server)).to.deep.include({ reputation: 50 });
    expect(await stats(server)).to.deep.equal([{ completions: 0, failures: 1 }]);

    await t.settle(server.poster, posterKey, byWorker, "claim-timeout", "refund");
    await server.sync();
    expect((await t.escrowRow(byWorker)).ending).to.equal(Ending.DisputeUnruled);
    // The worker's own dispute, unruled: counted as a dispute lost.
    expect(await reputation(server)).to.deep.include({ reputation: 40 });
    const row = await server.db
      .selectFrom("reputation")
      .select(["disputes", "disputes_lost"])
      .where("address", "=", server.worker.address)
      .executeTakeFirstOrThrow();
    expect(row).to.deep.equal({ disputes: 2, disputes_lost: 1 });
    expect(await stats(server)).to.deep.equal([{ completions: 0, failures: 2 }]);

    // The admin rules the escalated work; the list is empty.
    await (await server.escrow.connect(server.admin).resolveDispute(unjudged, true)).wait();
    await server.sync();
    expect(expectOk(await disputes(server))).to.deep.equal({ disputes: [], total: 0 });
  });

  it("only the admin's key opens the list (ADMIN_REQUIRED); wrong keys are limited per IP; no configured key, no admin", async function () {
    const server = await boot();
    expectError(await disputes(server, {}), "ADMIN_REQUIRED", 403);
    // A user's own API key, or a session, is not the admin's.
    expectError(await disputes(server, { "x-api-key": posterKey }), "ADMIN_REQUIRED", 403);
    expectError(await disputes(server, { "x-admin-key": posterKey }), "ADMIN_REQUIRED", 403);
    expectError(await disputes(server, { "x-admin-key": `${ADMIN_KEY}x` }), "ADMIN_REQUIRED", 403);
    const answers = [];
    for (let i = 0; i < ADMIN_FAILURES_PER_MINUTE; i++) answers.push(await disputes(server, { "x-admin-key": `wrong ${i}` }));
    const limited = answers.find((answer) => answer.status === 429);
    expect(limited, "wrong keys are limited per IP").to.not.equal(undefined);
    if (limited) expectError(limited, "RATE_LIMITED", 429);
    await server.close();

    s = await startTestServer();
    expectError(await disputes(s), "ADMIN_REQUIRED", 403);
  });
});
