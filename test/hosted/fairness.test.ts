/**
 * The server's task slots (`serverConcurrency`) are shared between owners: one owner whose agents' model hangs holds
 * at most its share, so another owner's agent still takes and delivers its task meanwhile.
 */
import { expect } from "chai";
import { startStack, type Stack } from "../support/stack";
import { startModelServer, type ModelServer } from "../support/model-server";
import { createFairSemaphore } from "../../server/hosted/runner/bounds";
import { agentOptions, clientOf, fundGas, statusOf, until, extraSigner, keyedClientOf } from "./helpers";

describe("hosted agents: the server's slots, shared between owners", function () {
  this.timeout(180_000);
  let s: Stack;
  let model: ModelServer;

  beforeEach(async function () {
    // Two slots for the whole server; the hanging calls outlast the whole test.
    s = await startStack({ hosted: { serverConcurrency: 2, agentConcurrency: 1, modelTimeoutMs: 90_000, taskBudgetMs: 120_000 } });
    model = await startModelServer();
    model.setScript((request) =>
      request.model === "hanging-model" ? { hang: true } : { content: "Summary: the report explains the new budget and who approves it." },
    );
  });
  afterEach(async function () {
    await model.close();
    await s.close();
  });

  it("one owner's hanging agents cannot keep another owner's agent from working", async function () {
    const greedy = s.stranger;
    const greedyClient = await clientOf(s, greedy);
    const hanging = { model: { baseUrl: model.baseUrl, name: "hanging-model" } };
    const first = (await greedyClient.deployAgent(agentOptions(model, hanging))).agent;
    const second = (await greedyClient.deployAgent(agentOptions(model, hanging))).agent;
    const other = await extraSigner(8);
    const otherClient = await clientOf(s, other);
    const working = (await otherClient.deployAgent(agentOptions(model, { capabilities: ["report_generation"] }))).agent;
    for (const agent of [first, second, working]) await fundGas(greedy, agent.address);
    await greedyClient.startAgent({ agentId: first.id });
    await greedyClient.startAgent({ agentId: second.id });
    await otherClient.startAgent({ agentId: working.id });

    const { client: poster, key: posterKey } = await keyedClientOf(s, s.poster);
    const pinned = (instructions: string, agent: string, capabilities: string[]) =>
      poster.postTask({ instructions, amountRaw: 1_000_000n, privacy: "public", capabilities, targetExecutor: agent }).then((r) => r.taskHash!);
    await pinned("Summarise the first report.", first.address, ["summarization"]);
    await pinned("Summarise the second report.", second.address, ["summarization"]);
    // The greedy owner's agents take what slots they may (a moment for the second to try).
    await until(() => model.hangingCount() >= 1, 30_000, "a hanging model call");
    const tried = Date.now() + 3_000;
    await until(() => model.hangingCount() === 2 || Date.now() > tried, 10_000, "the second agent's try");
    expect(model.hangingCount(), "the greedy owner holds its share only").to.equal(1);

    const task = await pinned("Write up the quarterly report.", working.address, ["report_generation"]);
    await until(async () => (await statusOf(s, posterKey, task)).status === "verified", 30_000, "the other owner's task verified");
  });

  it("shares permits by key: at most the share each while several keys are active, all of them for a key alone", async function () {
    let active = 1;
    const slots = createFairSemaphore(4, () => active);
    const a = await Promise.all([slots.acquire("a"), slots.acquire("a"), slots.acquire("a"), slots.acquire("a")]);
    expect(slots.available("a")).to.equal(0);
    // A second owner arrives: the first keeps what it holds, and gets no more while it is over its share of 2.
    active = 2;
    let gotB = false;
    const b = slots.acquire("b").then((release) => ((gotB = true), release));
    const moreA = slots.acquire("a");
    expect(slots.available("b")).to.equal(0);
    a[0]();
    await b;
    expect(gotB).to.equal(true);
    a[1]();
    a[2]();
    // "a" is at 1 of its share of 2 now: its waiter is served.
    (await moreA)();
    expect(slots.available("b")).to.equal(1);
  });
});
