/**
 * Built-in tools and sponsored gas: an agent talks with its owner mid-task (send_message, wait_for_reply, read_inbox),
 * delegates a paid sub-task to another hosted agent from its own wallet and reads the result, and an agent with an
 * empty wallet delivers on sponsored gas (once; never for an exported wallet).
 */
import { expect } from "chai";
import hre from "hardhat";
import { startStack, type Stack } from "../support/stack";
import { startModelServer, briefOf, type ModelRequest, type ModelServer } from "../support/model-server";
import { privateKeyOf } from "../server/harness";
import { escrowInterface } from "../../sdk/src/chain";
import type { PostTaskInput } from "../../sdk/src/posting";
import { time } from "@nomicfoundation/hardhat-network-helpers";
import { agentOptions, clientOf, deliveriesOf, fundGas, statusOf, until, extraSigner, keyedClientOf, startedAgent } from "./helpers";

const toolResults = (request: ModelRequest) => request.messages.filter((m) => m.role === "tool").map((m) => m.content ?? "");

/** The poster's public summarization task for `agent` alone (`fields` adds to it): its hash, the poster and its key. */
async function taskFor(s: Stack, agent: { address: string }, instructions: string, amountRaw: bigint, fields: Partial<PostTaskInput> = {}) {
  const { client: poster, key: posterKey } = await keyedClientOf(s, s.poster);
  const { taskHash } = await poster.postTask({
    instructions,
    amountRaw,
    privacy: "public",
    capabilities: ["summarization"],
    targetExecutor: agent.address,
    ...fields,
  });
  return { poster, posterKey, task: taskHash! };
}

describe("hosted agents: built-in tools", function () {
  this.timeout(180_000);
  let s: Stack;
  let model: ModelServer;

  beforeEach(async function () {
    s = await startStack();
    model = await startModelServer();
  });
  afterEach(async function () {
    await s.close();
    await model.close();
  });

  it("asks its owner mid-task and waits for the reply (send_message, wait_for_reply, read_inbox)", async function () {
    // The owner answers before the model even calls wait_for_reply (a quick owner): the reply still counts as one.
    let replied!: () => void;
    const ownerReplied = new Promise<void>((resolve) => (replied = resolve));
    model.setScript(async (request) => {
      const results = toolResults(request);
      if (results.length === 0)
        return { toolCalls: [{ name: "send_message", arguments: { to: "owner", body: "Which quarter should the summary cover?" } }] };
      if (results.length === 1) {
        await ownerReplied;
        return { toolCalls: [{ name: "wait_for_reply", arguments: { from: "owner", timeoutSeconds: 60 } }] };
      }
      if (results.length === 2) return { toolCalls: [{ name: "read_inbox", arguments: { from: "owner" } }] };
      const reply = results[1]!.includes("third quarter") ? "the third quarter" : "an unknown quarter";
      return { content: `Summary of ${reply}: sales rose steadily and costs fell in every region we track.` };
    });
    const owner = s.stranger;
    const { client: ownerClient, agent } = await startedAgent(s, owner, agentOptions(model));
    const { posterKey, task } = await taskFor(s, agent, "Summarise our sales.", 1_000_000n);

    await until(async () => (await ownerClient.agentMessages({ agentId: agent.id })).messages.length === 1, 30_000, "the agent's question");
    expect((await ownerClient.agentMessages({ agentId: agent.id })).messages[0]).to.deep.include({
      sender: "agent",
      body: "Which quarter should the summary cover?",
    });
    await ownerClient.sendAgentMessage({ agentId: agent.id, body: "Cover the third quarter, please." });
    replied();
    await until(async () => (await statusOf(s, posterKey, task)).status === "verified", 30_000, "the task verified");
    expect((await statusOf(s, posterKey, task)).output).to.equal(
      "Summary of the third quarter: sales rose steadily and costs fell in every region we track.",
    );
    const last = model.requests.at(-1)!;
    expect(toolResults(last)[2]).to.include("Cover the third quarter");
    // Another account cannot read or write the conversation.
    const stranger = await clientOf(s, s.poster);
    const refused = await stranger.agentMessages({ agentId: agent.id }).catch((e: { code: string }) => e.code);
    expect(refused).to.equal("NOT_AGENT_OWNER");
  });

  it("delegates a paid sub-task from its own wallet to another hosted agent and reads its result", async function () {
    const ownerA = s.stranger;
    const ownerB = await extraSigner(8);
    model.setScript((request) => {
      const brief = briefOf(request);
      if (request.model === "translator") return { content: "Translation: the French word is bonjour, a greeting used all day long." };
      const results = toolResults(request);
      if (results.length === 0) {
        return {
          toolCalls: [
            {
              name: "delegate_to_agent",
              arguments: {
                instructions: `Translate 'hello' into French. (${brief.length})`,
                amountRaw: "1000000",
                agent: agentB.address,
                waitSeconds: 90,
              },
            },
          ],
        };
      }
      return { content: `Final answer: ${JSON.parse(results[0]!).output as string}` };
    });
    const clientA = await clientOf(s, ownerA);
    const clientB = await clientOf(s, ownerB);
    const agentA = (await clientA.deployAgent(agentOptions(model, { subtasks: { enabled: true, maxRewardRaw: "2000000" } }))).agent;
    const agentB = (
      await clientB.deployAgent(agentOptions(model, { model: { baseUrl: model.baseUrl, name: "translator" }, capabilities: ["translation"] }))
    ).agent;
    expect(agentA.builtinTools).to.include("delegate_to_agent");
    await fundGas(ownerA, agentA.address);
    await fundGas(ownerB, agentB.address);
    await (await s.usdc.connect(s.admin).mint(agentA.address, 5_000_000n)).wait();
    await clientB.startAgent({ agentId: agentB.id });
    await clientA.startAgent({ agentId: agentA.id });

    const { posterKey, task } = await taskFor(s, agentA, "Say hello in French for our greeting card.", 3_000_000n);
    await until(async () => (await statusOf(s, posterKey, task)).status === "verified", 90_000, "the task verified");
    expect((await statusOf(s, posterKey, task)).output).to.equal(
      "Final answer: Translation: the French word is bonjour, a greeting used all day long.",
    );

    // The sub-task: posted and funded by agent A's wallet, private, pinned to B, paid to B.
    const sub = await s.db
      .selectFrom("listings")
      .innerJoin("escrow_tasks", (j) =>
        j.onRef("escrow_tasks.chain", "=", "listings.chain").onRef("escrow_tasks.task_hash", "=", "listings.task_hash"),
      )
      .select(["listings.privacy", "listings.target_executor", "escrow_tasks.amount"])
      .where("listings.poster", "=", agentA.address)
      .execute();
    expect(sub).to.have.length(1);
    expect(sub[0]).to.deep.include({ privacy: "private", target_executor: agentB.address, amount: "1000000" });
    expect(await s.usdc.balanceOf(agentB.address)).to.equal(900_000n);
    expect(await s.usdc.balanceOf(agentA.address)).to.equal(5_000_000n - 1_000_000n + 2_700_000n);
  });

  it("posts at most 3 sub-tasks per task, over all its rounds", async function () {
    const worker = s.worker;
    await s.registerAgent(worker, ["summarization"]);
    // Each round the model delegates 3 sub-tasks (waiting for none), then answers: the first answer fails the poster's
    // keyword, so the task is delivered again, and the model asks for 3 more.
    model.setScript((request) => {
      const results = toolResults(request);
      const second = briefOf(request).includes("failed verification");
      if (results.length < 3) {
        return {
          toolCalls: [
            {
              name: "delegate_to_agent",
              arguments: {
                instructions: `Summarise part ${results.length + 1} of the plan.`,
                amountRaw: "30000",
                agent: worker.address,
                waitSeconds: 0,
              },
            },
          ],
        };
      }
      return { content: second ? "Plan summary, second version: the budget rises and hiring waits a year." : "Plan summary: the budget rises." };
    });
    const { agent } = await startedAgent(s, s.stranger, agentOptions(model, { subtasks: { enabled: true, maxRewardRaw: "100000" } }), 5_000_000n);
    const { posterKey, task } = await taskFor(s, agent, "Summarise the plan.", 1_000_000n, {
      verificationMode: "auto",
      verificationCriteria: { contains_keywords: ["second version"] },
    });
    await until(async () => (await statusOf(s, posterKey, task)).status === "verified", 60_000, "verified in its second round");
    expect(await deliveriesOf(s, task)).to.have.length(2);
    const subtasks = await s.db.selectFrom("listings").select("task_hash").where("poster", "=", agent.address).execute();
    expect(subtasks).to.have.length(3);
    expect(await s.usdc.balanceOf(agent.address)).to.equal(5_000_000n - 3n * 30_000n + 900_000n);
    // The second round's three asks were refused (its last model call sees all three answers).
    const refusals = toolResults(model.requests.at(-1)!).filter((r) => r.includes("Error: SUBTASK_COUNT_EXCEEDED: at most 3 sub-tasks per task"));
    expect(refusals).to.have.length(3);
  });

  it("pays at most the owner's maxRewardRaw for all of a task's sub-tasks, counted in the database across a restart of the agent", async function () {
    const worker = s.worker;
    await s.registerAgent(worker, ["summarization"]);
    // Before the restart the model delegates 60,000 (of 100,000) and then hangs; after it, the task is worked again
    // from its start and the model asks for 60,000 more, then answers with what it was told.
    let restarted = false;
    model.setScript((request) => {
      const results = toolResults(request);
      if (results.length === 0)
        return {
          toolCalls: [
            {
              name: "delegate_to_agent",
              arguments: { instructions: "Summarise the annex.", amountRaw: "60000", agent: worker.address, waitSeconds: 0 },
            },
          ],
        };
      if (!restarted) return { hang: true };
      return { content: `Plan summary: the budget rises; delegation said ${results[0]!.slice(0, 120)}` };
    });
    const { client, agent } = await startedAgent(
      s,
      s.stranger,
      agentOptions(model, { subtasks: { enabled: true, maxRewardRaw: "100000" } }),
      5_000_000n,
    );
    const { posterKey, task } = await taskFor(s, agent, "Summarise the plan.", 1_000_000n);
    await until(() => model.hangingCount() === 1, 30_000, "the first sub-task posted and the model hanging");
    const listed = async () =>
      s.db
        .selectFrom("listings")
        .innerJoin("escrow_tasks", (j) =>
          j.onRef("escrow_tasks.chain", "=", "listings.chain").onRef("escrow_tasks.task_hash", "=", "listings.task_hash"),
        )
        .select("escrow_tasks.amount")
        .where("listings.poster", "=", agent.address)
        .execute();
    await until(async () => (await listed()).length === 1, 30_000, "the first sub-task listed");
    restarted = true;
    await client.stopAgent({ agentId: agent.id });
    await client.startAgent({ agentId: agent.id });
    await until(async () => (await statusOf(s, posterKey, task)).status === "verified", 60_000, "verified after the restart");
    // One sub-task only: the second (60,000 more) would have paid 120,000 for the task's sub-tasks.
    expect(await listed()).to.deep.equal([{ amount: "60000" }]);
    expect((await statusOf(s, posterKey, task)).output).to.include(
      "Error: SUBTASK_BUDGET_EXCEEDED: the sub-tasks of one task may pay at most 100000 raw units in all",
    );
    const ledger = await s.db.selectFrom("hosted_subtasks").select(["task_hash", "amount"]).where("agent_id", "=", agent.id).execute();
    expect(ledger).to.deep.equal([{ task_hash: task, amount: "60000" }]);
    expect(await s.usdc.balanceOf(agent.address)).to.equal(5_000_000n - 60_000n + 900_000n);
  });

  it("refuses delegation above the owner's limit, and offers no delegate_to_agent without the option", async function () {
    model.setScript((request) => {
      const results = toolResults(request);
      if (results.length === 0)
        return { toolCalls: [{ name: "delegate_to_agent", arguments: { instructions: "Do it all.", amountRaw: "5000000" } }] };
      return { content: `Final answer: the delegation said ${results[0]!.slice(0, 60)} and so I did the summary myself.` };
    });
    const { client, agent } = await startedAgent(s, s.stranger, agentOptions(model, { subtasks: { enabled: true, maxRewardRaw: "1000000" } }));
    const { posterKey, task } = await taskFor(s, agent, "Summarise the plan.", 1_000_000n);
    await until(async () => (await statusOf(s, posterKey, task)).status === "verified", 30_000, "verified");
    expect((await statusOf(s, posterKey, task)).output).to.include("above the owner's limit of 1000000");
    expect(await s.db.selectFrom("listings").select("task_hash").where("poster", "=", agent.address).execute()).to.deep.equal([]);
    const plain = (await client.deployAgent(agentOptions(model))).agent;
    expect(plain.builtinTools).to.deep.equal(["send_message", "read_inbox", "wait_for_reply"]);
  });
});

describe("hosted agents: sponsored gas", function () {
  this.timeout(120_000);
  let s: Stack;
  let model: ModelServer;

  beforeEach(async function () {
    const sponsor = await extraSigner(10);
    s = await startStack({ hosted: { gasSponsor: "on", gasSponsorKey: privateKeyOf(sponsor), releaseCheckMs: 200 } });
    model = await startModelServer();
    model.setScript(() => ({ content: "Summary: the memo sets out the budget for next year and who approves it." }));
  });
  afterEach(async function () {
    await s.close();
    await model.close();
  });

  it("tops up an empty wallet for its first submitEvidence, once, and never an exported wallet", async function () {
    const sponsor = await extraSigner(10);
    const bridge = (await s.call<{ gasSponsor: { state: string; address: string } }>("GET", "/health/bridge")).body.data;
    expect(bridge).to.deep.equal({ gasSponsor: { state: "active", address: sponsor.address }, verifierMatches: { arc: true } });
    const owner = s.stranger;
    const client = await clientOf(s, owner);
    const agent = (await client.deployAgent(agentOptions(model))).agent;
    await client.startAgent({ agentId: agent.id });
    expect(await s.usdc.runner!.provider!.getBalance(agent.address)).to.equal(0n);
    const { posterKey, task } = await taskFor(s, agent, "Summarise the budget memo.", 2_000_000n);
    await until(async () => (await statusOf(s, posterKey, task)).status === "verified", 30_000, "verified on sponsored gas");
    expect(await s.usdc.balanceOf(agent.address)).to.equal(1_800_000n);
    const rows = await s.db.selectFrom("gas_sponsorships").selectAll().execute();
    expect(rows.map((r) => [r.agent_address, r.purpose, r.status])).to.deep.equal([[agent.address, "first-evidence", "sent"]]);

    // Once per purpose; and an exported wallet is never sponsored again.
    const data = escrowInterface.encodeFunctionData("submitEvidence", [task, `0x${"00".repeat(32)}`]);
    const call = { chain: "arc", from: agent.address, to: s.escrowAddress, data };
    expect(await s.hosting.sponsor.topUp(call)).to.deep.equal({ sponsored: false, reason: "used" });
    await client.exportAgentKey({ agentId: agent.id });
    expect(await s.hosting.sponsor.topUp(call)).to.deep.equal({ sponsored: false, reason: "exported" });
    const release = escrowInterface.encodeFunctionData("releaseUnjudgedWork", [task]);
    expect(await s.hosting.sponsor.topUp({ ...call, data: release })).to.deep.equal({ sponsored: false, reason: "exported" });
  });

  it("collects escalated work nobody judged 14 days after the escalation (releaseUnjudgedWork), on sponsored gas", async function () {
    const owner = s.stranger;
    const client = await clientOf(s, owner);
    const agent = (await client.deployAgent(agentOptions(model))).agent;
    await client.startAgent({ agentId: agent.id });
    const { poster, posterKey, task } = await taskFor(s, agent, "Summarise the budget memo.", 2_000_000n, {
      verificationMode: "manual",
      durationSeconds: 3_600,
    });
    await until(async () => (await statusOf(s, posterKey, task)).status === "awaiting_verification", 30_000, "delivered, awaiting the poster");
    // The poster never judges: after the deadline its claim escalates the work.
    await time.increase(3_601);
    await s.sync();
    expect((await poster.cancelAndRefund(task)).outcome).to.equal("escalate");
    await s.sync();
    expect((await statusOf(s, posterKey, task)).status).to.equal("escalated");
    await time.increase(14 * 86_400 + 1);
    await hre.network.provider.send("evm_mine", []);
    await s.sync();
    await until(async () => (await statusOf(s, posterKey, task)).status === "completed", 30_000, "the work released and paid");
    expect(await s.usdc.balanceOf(agent.address)).to.equal(1_800_000n);
    const purposes = (await s.db.selectFrom("gas_sponsorships").select(["purpose", "status"]).execute()).map((r) => `${r.purpose}:${r.status}`);
    expect(purposes[0]).to.equal("first-evidence:sent");
    expect(purposes.slice(1)).to.deep.equal(purposes.length > 1 ? [`release:${task}:sent`] : []);
  });
});
