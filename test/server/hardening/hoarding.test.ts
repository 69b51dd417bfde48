/**
 * Task hoarding (docs/security.md, issue 14 item 1): an agent that accepts and never delivers is stopped by the cap
 * on undelivered assignments, loses reputation at each never-delivered expiry and at each release, and cannot accept
 * faster than its accept rate.
 */
import { expect } from "chai";
import hre from "hardhat";
import { startTestServer, type TestServer, type TestServerOptions } from "../harness";
import { expectError, expectOk } from "../expect";
import { AMOUNT, brief, CRITERIA, DAY, steps, type Steps } from "../lifecycle/helpers";
import { undeliveredAssignmentCap } from "@market/core/reputation";

interface Reputation {
  reputation: number;
}

describe("hardening: task hoarding", function () {
  let s: TestServer | undefined;
  let t: Steps;
  let posterKey: string;
  let agentKey: string;

  async function boot(options: TestServerOptions = {}) {
    s = await startTestServer(options);
    await hre.network.provider.send("evm_mine", []);
    await s.sync();
    t = steps(s);
    posterKey = await s.apiKeyFor(s.poster);
    agentKey = await s.registerAgent(s.worker, ["summarization"]);
    return s;
  }
  afterEach(async function () {
    await s?.close();
    s = undefined;
  });

  const post = (server: TestServer) => server.post(server.poster, posterKey, server.publicTask(brief(), { verificationCriteria: CRITERIA }), AMOUNT);
  const reputation = async (server: TestServer) =>
    expectOk(await server.call<Reputation>("GET", `/api/v1/reputation/${server.worker.address}`)).reputation;

  it("undeliveredAssignmentCap: 3 for a new agent, +1 per 5 credited tasks, at most 25", function () {
    const cases: Array<[number, number]> = [
      [0, 3],
      [4, 3],
      [5, 4],
      [49, 12],
      [110, 25],
      [10_000, 25],
    ];
    for (const [completed, cap] of cases) expect(undeliveredAssignmentCap(completed), `${completed} completed`).to.equal(cap);
  });

  it("a new agent that accepts and never delivers: stopped by the cap, -10 at each never-delivered expiry", async function () {
    const server = await boot();
    const held: string[] = [];
    for (let i = 0; i < 3; i++) {
      const { taskHash } = await post(server);
      expectOk(await t.accept(agentKey, taskHash));
      held.push(taskHash);
    }
    const { taskHash: fourth } = await post(server);
    const refused = await t.accept(agentKey, fourth);
    expectError(refused, "ASSIGNMENT_CAP_REACHED", 429);
    expect(refused.body.error.details?.[0]).to.deep.include({ held: 3, cap: 3 });
    // Nothing was sent for the refused accept: the task is still open on chain.
    expect(await server.escrow.queryFilter(server.escrow.filters.WorkerAssigned(fourth))).to.have.length(0);
    expect(await reputation(server)).to.equal(50);

    await t.travel(DAY);
    await t.settle(server.poster, posterKey, held[0]!, "claim-timeout", "refund");
    await server.sync();
    expect(await reputation(server)).to.equal(40);
    await t.settle(server.poster, posterKey, held[1]!, "claim-timeout", "refund");
    await server.sync();
    expect(await reputation(server)).to.equal(30);

    // Two assignments ended: two slots again, for a task whose deadline has not passed.
    const { taskHash: fresh } = await post(server);
    expectOk(await t.accept(agentKey, fresh));
  });

  it("a release costs 2 reputation and frees the slot", async function () {
    const server = await boot({ abuse: { assignmentCap: { base: 1, completionsPerSlot: 5, max: 25 } } });
    const { taskHash } = await post(server);
    const { taskHash: second } = await post(server);
    expectOk(await t.accept(agentKey, taskHash));
    expectError(await t.accept(agentKey, second), "ASSIGNMENT_CAP_REACHED", 429);
    await t.settle(server.worker, agentKey, taskHash, "release", "reopen");
    await server.sync();
    expect(await reputation(server)).to.equal(48);
    expectOk(await t.accept(agentKey, second));
  });

  it("RATE_LIMITED past the accepts per agent per minute, counted per agent", async function () {
    const server = await boot({ abuse: { acceptsPerMinute: 2 } });
    const tasks = [await post(server), await post(server), await post(server)];
    expectOk(await t.accept(agentKey, tasks[0]!.taskHash));
    expectOk(await t.accept(agentKey, tasks[1]!.taskHash));
    const limited = await t.accept(agentKey, tasks[2]!.taskHash);
    expectError(limited, "RATE_LIMITED", 429);
    // Another agent has a window of its own.
    const otherKey = await server.registerAgent(server.stranger, ["summarization"]);
    expectOk(await t.accept(otherKey, tasks[2]!.taskHash));
  });
});
