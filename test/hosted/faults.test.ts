/**
 * A misbehaving model endpoint: one that hangs, one that errors, one that answers garbage. Each task fails cleanly
 * (recorded, nothing delivered, the task handed back to the market and never taken again by that agent), the agent
 * keeps running and takes its next task, and meanwhile other agents and the API go on.
 */
import { expect } from "chai";
import { startStack, type Stack } from "../support/stack";
import { startModelServer, briefOf, type ModelServer } from "../support/model-server";
import { agentOptions, clientOf, deliveriesOf, fundGas, statusOf, until, extraSigner, keyedClientOf } from "./helpers";

describe("hosted agents: a misbehaving model", function () {
  this.timeout(180_000);
  let s: Stack;
  let model: ModelServer;

  beforeEach(async function () {
    // The hung call must outlast the other agent's whole task (posted, accepted, delivered, verified), which takes
    // seconds on a loaded machine or on PostgreSQL; the call ends (and its task fails) when this timeout does.
    s = await startStack({ hosted: { modelTimeoutMs: 8_000, taskBudgetMs: 20_000 } });
    model = await startModelServer();
  });
  afterEach(async function () {
    await s.close();
    await model.close();
  });

  it("hangs, errors or answers garbage: each task fails cleanly, the agent keeps running, nothing is delivered twice", async function () {
    model.setScript((request) => {
      const brief = briefOf(request);
      if (request.model === "other-model") return { content: "Summary: the other agent's report covers quarterly sales growth in detail." };
      if (brief.includes("HANG")) return { hang: true };
      if (brief.includes("ERROR")) return { status: 500 };
      if (brief.includes("GARBAGE-TEXT")) return { garbage: "<html>this is not JSON at all</html>" };
      if (brief.includes("GARBAGE-JSON")) return { garbage: JSON.stringify({ choices: "nope" }) };
      return { content: "Summary: the final report explains the warehouse move and its costs in plain words." };
    });
    const owner = s.stranger;
    const ownerClient = await clientOf(s, owner);
    const flaky = (await ownerClient.deployAgent(agentOptions(model, { capabilities: ["summarization"] }))).agent;
    const otherOwner = await extraSigner(8);
    const other = (
      await (
        await clientOf(s, otherOwner)
      ).deployAgent(agentOptions(model, { model: { baseUrl: model.baseUrl, name: "other-model" }, capabilities: ["report_generation"] }))
    ).agent;
    await fundGas(owner, flaky.address);
    await fundGas(owner, other.address);
    await ownerClient.startAgent({ agentId: flaky.id });
    await (await clientOf(s, otherOwner)).startAgent({ agentId: other.id });

    const { client: poster, key: posterKey } = await keyedClientOf(s, s.poster);
    const pinned = (instructions: string, agent: string, capabilities = ["summarization"]) =>
      poster.postTask({ instructions, amountRaw: 1_000_000n, privacy: "public", capabilities, targetExecutor: agent }).then((r) => r.taskHash!);

    // While the flaky agent's model hangs, the other agent works and the API answers at once. (A first /health probes
    // this machine's sandbox once, which is not what is measured here: it is asked before the hang.)
    expect((await s.call("GET", "/health")).status).to.equal(200);
    const hung = await pinned("Summarise this HANG report.", flaky.address);
    await until(() => model.hangingCount() === 1, 20_000, "the model call to hang");
    const started = performance.now();
    expect((await s.call("GET", "/health")).status).to.equal(200);
    expect(performance.now() - started).to.be.below(500);
    const otherTask = await pinned("Write up the quarterly sales report.", other.address, ["report_generation"]);
    await until(async () => (await statusOf(s, posterKey, otherTask)).status === "verified", 30_000, "the other agent's task verified");
    expect(model.hangingCount()).to.equal(1);

    const errored = await pinned("Summarise this ERROR report.", flaky.address);
    const garbageText = await pinned("Summarise this GARBAGE-TEXT report.", flaky.address);
    const garbageJson = await pinned("Summarise this GARBAGE-JSON report.", flaky.address);
    const failedRun = async (taskHash: string) =>
      (await s.db
        .selectFrom("hosted_task_runs")
        .select(["status", "error"])
        .where("agent_id", "=", flaky.id)
        .where("task_hash", "=", taskHash)
        .executeTakeFirst()) ?? { status: "none", error: null };
    for (const taskHash of [hung, errored, garbageText, garbageJson]) {
      await until(async () => (await failedRun(taskHash)).status === "failed", 30_000, `task ${taskHash} failed`);
      // Handed back: open again (pinned to this agent, so the poster can cancel it for a full refund).
      await until(async () => (await statusOf(s, posterKey, taskHash)).status === "open", 30_000, `task ${taskHash} released`);
    }
    expect((await failedRun(hung)).error).to.match(/model call failed|time budget/);
    expect((await failedRun(errored)).error).to.match(/500/);
    expect((await failedRun(garbageText)).error).to.match(/model call failed/);
    expect((await failedRun(garbageJson)).error).to.match(/not a chat completion/);

    // Still running: its next task is delivered, once.
    const good = await pinned("Summarise the final report.", flaky.address);
    await until(async () => (await statusOf(s, posterKey, good)).status === "verified", 30_000, "the good task verified");
    const view = await s.call<{ agent: { state: string } }>("GET", `/api/v1/agents/${flaky.id}`);
    expect(view.body.data.agent.state).to.equal("running");
    for (const taskHash of [hung, errored, garbageText, garbageJson]) expect(await deliveriesOf(s, taskHash)).to.deep.equal([]);
    expect(await deliveriesOf(s, good)).to.have.length(1);
    // The failed tasks are never taken again: a few more browses later they are still open and undelivered.
    const calls = model.requests.length;
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(model.requests.length).to.equal(calls);
    for (const taskHash of [errored, garbageText]) expect((await statusOf(s, posterKey, taskHash)).status).to.equal("open");
  });
});
