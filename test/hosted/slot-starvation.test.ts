/**
 * Issue 23 item 4: free sign-ins whose models hang held every hosted agent's slot. Each owner was a unit of the fair
 * share, and an owner holding its share kept passing each freed slot to its own next task, while an idle owner's
 * agent, seeing no free slot, never even took its pinned task. Now the unit is one that costs something (a fee-paid
 * agent; an owner's unpaid agents together), an idle unit always queues and is served first, and a run never lasts
 * past its time budget whatever hangs. The attack is re-run here and its figures printed.
 */
import { expect } from "chai";
import { startStack, type Stack } from "../support/stack";
import { startModelServer, type ModelServer } from "../support/model-server";
import { createFairSemaphore, runWithinBudget } from "../../server/hosted/runner/bounds";
import { fairnessUnit } from "../../server/hosted/runner";
import { agentOptions, clientOf, fundGas, statusOf, until, extraSigner, keyedClientOf } from "./helpers";

const HANG_MS = 4_000;

describe("hosted agents: slots under hanging models (issue 23 item 4)", function () {
  this.timeout(180_000);
  let s: Stack;
  let model: ModelServer;

  before(async function () {
    // Two slots for the whole server, three owners; a model call is cut after 4 s; agents browse every 3 s (an agent ending a
    // task browses again at once).
    s = await startStack({
      hosted: { serverConcurrency: 2, agentConcurrency: 2, modelTimeoutMs: HANG_MS, taskBudgetMs: 10_000, browseIntervalMs: 3_000 },
    });
    model = await startModelServer();
    model.setScript((request) =>
      request.model === "hanging-model" ? { hang: true } : { content: "Summary: the report explains the new budget and who approves it." },
    );
  });
  after(async function () {
    await model.close();
    await s.close();
  });

  it("the attack re-run: two free owners with hanging models and four pinned tasks each; a third owner's pinned task is still worked at once", async function () {
    const hanging = { model: { baseUrl: model.baseUrl, name: "hanging-model" } };
    const attackers = [s.stranger, await extraSigner(9)];
    const attackerAgents = [];
    for (const attacker of attackers) {
      const client = await clientOf(s, attacker);
      const agent = (await client.deployAgent(agentOptions(model, hanging))).agent;
      await fundGas(attacker, agent.address);
      await client.startAgent({ agentId: agent.id });
      attackerAgents.push(agent);
    }
    const victimOwner = await extraSigner(8);
    const victimClient = await clientOf(s, victimOwner);
    const victim = (await victimClient.deployAgent(agentOptions(model, { capabilities: ["report_generation"] }))).agent;
    await fundGas(victimOwner, victim.address);
    await victimClient.startAgent({ agentId: victim.id });

    const { client: poster, key: posterKey } = await keyedClientOf(s, s.poster);
    const pinned = (instructions: string, agent: string, capabilities: string[]) =>
      poster.postTask({ instructions, amountRaw: 1_000_000n, privacy: "public", capabilities, targetExecutor: agent }).then((r) => r.taskHash!);
    for (let i = 0; i < 4; i++)
      for (const agent of attackerAgents) await pinned(`Summarise report ${i} for ${agent.address}.`, agent.address, ["summarization"]);
    await until(() => model.hangingCount() >= 2, 30_000, "both slots held by hanging calls");

    const posted = Date.now();
    const task = await pinned("Write up the quarterly report.", victim.address, ["report_generation"]);
    await until(async () => (await statusOf(s, posterKey, task)).status === "verified", 60_000, "the third owner's task verified");
    const waitedMs = Date.now() - posted;
    const hangingCalls = model.requests.filter((r) => r.model === "hanging-model").length;
    console.log(
      `      issue 23 item 4 re-run: the third owner's pinned task verified ${waitedMs} ms after posting; ${hangingCalls} hanging calls meanwhile`,
    );
    // Before: it waited for every one of the eight hanging tasks to end (8 × 4 s over two slots: 16 s and more).
    expect(waitedMs).to.be.below(2 * HANG_MS + 4_000);
  });

  it("counts a fee-paid agent as a unit of its own and an owner's unpaid agents as one", async function () {
    const [first, second] = await s.db.selectFrom("hosted_agents").select(["id", "account_id"]).orderBy("id").limit(2).execute();
    expect(await fairnessUnit(s.db, first!.id, first!.account_id)).to.equal(`owner:${first!.account_id}`);
    await s.db
      .insertInto("deploy_fee_credits")
      .values({
        chain: "arc",
        tx_hash: `0x${"12".repeat(32)}`,
        agent_id: second!.id,
        account_id: second!.account_id,
        payer: s.stranger.address,
        amount: "1",
        credited_at: Date.now(),
      })
      .execute();
    expect(await fairnessUnit(s.db, second!.id, second!.account_id)).to.equal(`agent:${second!.id}`);
  });

  it("serves an idle key before keys already holding permits, and lets it queue even when every permit is held", async function () {
    const slots = createFairSemaphore(2, () => 3);
    const a = await slots.acquire("a");
    const b = await slots.acquire("b");
    const moreA = slots.acquire("a");
    expect(slots.available("c"), "an idle key may queue one").to.equal(1);
    let cGot = false;
    const c = slots.acquire("c").then((release) => ((cGot = true), release));
    expect(slots.available("c")).to.equal(0);
    a();
    (await c)();
    expect(cGot).to.equal(true);
    b();
    (await moreA)();
  });

  it("ends a run at its time budget even when its work ignores every signal", async function () {
    const started = Date.now();
    const never = new Promise<string>(() => undefined);
    const outcome = await runWithinBudget(Date.now() + 200, new AbortController().signal, () => never, { graceMs: 100 }).catch(
      (e: Error) => e.message,
    );
    expect(outcome).to.equal("the task's time budget ran out (the run was cut off)");
    expect(Date.now() - started).to.be.below(2_000);
  });
});
