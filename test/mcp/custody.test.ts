/**
 * The remote /mcp endpoint acting as a hosted agent's custodied wallet for its owner (`X-Market-Agent`), with the
 * official MCP SDK client: quote → confirm paid from the agent's wallet with exact balances, a repeat under the same
 * idempotencyKey paying nothing, cancel back to the agent's wallet; anyone but the owner refused before any tool runs;
 * a running agent and a withdrawal under way refused with nothing spent.
 */
import { expect } from "chai";
import hre from "hardhat";
import { stackFixture, type Stack } from "../support/stack";
import { expectError } from "../server/expect";
import { fundGas, until } from "../hosted/helpers";
import { httpMcp, type Mcp } from "./helpers";

const AMOUNT = 1_250_000n;
const FUNDS = 5_000_000n;
const PUBLIC = { instructions: "Name three rivers of Europe and the seas they flow into.", amount: AMOUNT.toString(), privacy: "public" };
const INITIALIZE = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
};

const custodyStack = stackFixture(async (s) => {
  await s.registerAgent(s.worker, ["web_research"]);
  const ownerKey = await s.apiKeyFor(s.poster);
  const otherKey = await s.apiKeyFor(s.stranger);
  const agent = await s.deployHostedAgent(s.poster, ownerKey);
  await fundGas(s.poster, agent.address);
  await (await s.usdc.connect(s.admin).mint(agent.address, FUNDS)).wait();
  return { ownerKey, otherKey, agent };
});

describe("mcp: a hosted agent's custodied wallet over the remote /mcp endpoint", function () {
  this.timeout(120_000);
  let s: Stack;
  let ownerKey: string;
  let otherKey: string;
  let agent: { id: number; address: string };
  let mcp: Mcp | undefined;

  const balances = async () => ({
    agent: await s.usdc.balanceOf(agent.address),
    owner: await s.usdc.balanceOf(s.poster.address),
    escrow: await s.usdc.balanceOf(s.escrowAddress),
  });
  const asAgent = () => httpMcp(s.apiUrl, ownerKey, { "x-market-agent": String(agent.id) });
  const agentState = async () => (await s.db.selectFrom("hosted_agents").select("state").where("id", "=", agent.id).executeTakeFirstOrThrow()).state;

  beforeEach(async function () {
    ({
      stack: s,
      seeded: { ownerKey, otherKey, agent },
    } = await custodyStack());
  });
  afterEach(async function () {
    await mcp?.close();
    mcp = undefined;
    await s.close();
  });

  it("posts from the agent's wallet (quote, confirm: exact balances), pays nothing on a repeat, and cancels back to it", async function () {
    const start = await balances();
    mcp = await asAgent();
    const args = { tasks: [PUBLIC], idempotencyKey: "agent-run-1" };

    const quote = await mcp.call("post_tasks", args);
    expect(quote.isError, quote.text).to.equal(false);
    expect(quote.data).to.deep.include({
      tasks: 1,
      alreadyPosted: 0,
      toPost: 1,
      escrow: AMOUNT.toString(),
      payFrom: agent.address,
      walletBalance: FUNDS.toString(),
      settlement: "arc",
      transactions: 2,
    });
    expect(await balances()).to.deep.equal(start);

    const done = await mcp.call("post_tasks", { ...args, confirm: true, quoteId: quote.data.quoteId });
    expect(done.isError, done.text).to.equal(false);
    expect(done.data).to.deep.include({ tasks: 1, posted: 1, alreadyPosted: 0, unlisted: 0, failed: 0, escrowPaid: AMOUNT.toString() });
    const taskHash = String((done.data.results as Array<{ taskHash: string }>)[0]!.taskHash);
    expect(await balances()).to.deep.equal({ agent: FUNDS - AMOUNT, owner: start.owner, escrow: start.escrow + AMOUNT });
    // Listed with the agent as its poster; the hold is released.
    await s.sync();
    const listed = await s.call<{ meta: { poster: string } }>("GET", `/api/v1/tasks/${taskHash}`);
    expect(listed.body.data.meta.poster).to.equal(agent.address);
    expect(await agentState()).to.equal("stopped");
    // The run is saved for any API process to resume, and it holds no credential.
    const [saved, ...others] = await s.db.selectFrom("hosted_mcp_runs").selectAll().where("agent_id", "=", agent.id).execute();
    expect(others).to.deep.equal([]);
    expect(saved!.journal).to.contain('"t":"posted"').and.to.contain(taskHash);
    // Its task file (the briefs) is sealed at rest under the master key (issue 23), bound to the agent and the run.
    expect(saved!.tasks).to.match(/^v1\./).and.not.to.contain(PUBLIC.instructions);
    const tasks = s.hosting.store.openRecord(saved!.tasks, `mcp-run:${agent.id}:${saved!.run}`);
    expect(tasks).to.contain(PUBLIC.instructions);
    expect(() => s.hosting.store.openRecord(saved!.tasks, `mcp-run:${agent.id + 1}:${saved!.run}`)).to.throw();
    expect(saved!.journal + tasks).not.to.match(/ha_|sk_/);

    // The same call again: already posted, nothing to pay.
    const again = await mcp.call("post_tasks", args);
    expect(again.data).to.deep.include({ tasks: 1, alreadyPosted: 1, toPost: 0, escrow: "0" });
    const repeated = await mcp.call("post_tasks", { ...args, confirm: true, quoteId: again.data.quoteId });
    expect(repeated.data).to.deep.include({ alreadyPosted: 1, posted: 0, escrowPaid: "0" });
    // Another payload under the used key is refused, nothing spent.
    const reused = await mcp.call("post_tasks", { tasks: [{ ...PUBLIC, amount: "1300000" }], idempotencyKey: "agent-run-1" });
    expect(reused.code, reused.text).to.equal("IDEMPOTENCY_KEY_REUSED");
    expect(await balances()).to.deep.equal({ agent: FUNDS - AMOUNT, owner: start.owner, escrow: start.escrow + AMOUNT });

    // The poster sees its task; cancelling signs from the agent's wallet and refunds it all.
    const polled = await mcp.call("poll_task_result", { taskHash });
    expect(polled.data).to.deep.include({ taskHash, status: "open", reward: AMOUNT.toString() });
    const cancelled = await mcp.call("cancel_task", { taskHash });
    expect(cancelled.isError, cancelled.text).to.equal(false);
    expect(cancelled.data).to.deep.include({ taskHash, outcome: "refund" });
    expect(await balances()).to.deep.equal(start);
    expect(await agentState()).to.equal("stopped");
  });

  it("refuses anyone but the owner, an unknown agent, a malformed id and the agent's own token before any tool runs", async function () {
    const start = await balances();
    const mcpCall = (headers: Record<string, string>) => s.call<unknown>("POST", "/mcp", { body: INITIALIZE, headers });
    expectError(await mcpCall({ "x-api-key": otherKey, "x-market-agent": String(agent.id) }), "NOT_AGENT_OWNER");
    expectError(await mcpCall({ "x-api-key": ownerKey, "x-market-agent": "987654" }), "HOSTED_AGENT_NOT_FOUND");
    expectError(await mcpCall({ "x-api-key": ownerKey, "x-market-agent": "one" }), "VALIDATION_FAILED");
    expectError(await mcpCall({ "x-api-key": await s.agentToken(agent.id), "x-market-agent": String(agent.id) }), "INVALID_TOKEN");

    // The official client, from the wrong account: refused at connect; nothing was quoted or spent.
    let refused: unknown;
    try {
      await httpMcp(s.apiUrl, otherKey, { "x-market-agent": String(agent.id) });
    } catch (error) {
      refused = error;
    }
    expect(String(refused)).to.match(/403|NOT_AGENT_OWNER/);
    expect(await s.db.selectFrom("mcp_quotes").selectAll().execute()).to.deep.equal([]);
    expect(await balances()).to.deep.equal(start);
  });

  it("refuses to spend while the agent runs (AGENT_RUNNING) or a withdrawal holds its wallet (WITHDRAWAL_IN_PROGRESS); nothing spent", async function () {
    const start = await balances();
    mcp = await asAgent();
    const args = { tasks: [PUBLIC], idempotencyKey: "agent-run-2" };
    const quote = await mcp.call("post_tasks", args);
    expect(quote.isError, quote.text).to.equal(false);

    expect((await s.call("POST", `/api/v1/agents/${agent.id}/start`, { key: ownerKey })).status).to.equal(200);
    const running = await mcp.call("post_tasks", { ...args, confirm: true, quoteId: quote.data.quoteId });
    expect(running.code, running.text).to.equal("AGENT_RUNNING");
    const cancelRunning = await mcp.call("cancel_task", { taskHash: `0x${"ab".repeat(32)}` });
    expect(cancelRunning.code, cancelRunning.text).to.equal("AGENT_RUNNING");
    expect((await s.call("POST", `/api/v1/agents/${agent.id}/stop`, { key: ownerKey })).status).to.equal(200);

    // A withdrawal whose transfer is not mined yet holds the wallet.
    await hre.network.provider.send("evm_setAutomine", [false]);
    let withdrawal: Promise<{ status: number }> | undefined;
    try {
      withdrawal = s.call("POST", `/api/v1/agents/${agent.id}/withdraw`, { key: ownerKey, body: { amountRaw: "1000" } });
      await until(async () => (await agentState()) === "withdrawing", 10_000, "the withdrawal's hold");
      const held = await mcp.call("post_tasks", { ...args, confirm: true, quoteId: quote.data.quoteId });
      expect(held.code, held.text).to.equal("WITHDRAWAL_IN_PROGRESS");
    } finally {
      await hre.network.provider.send("evm_setAutomine", [true]);
      await hre.network.provider.send("evm_mine", []);
    }
    expect((await withdrawal)?.status).to.equal(200);
    expect(await agentState()).to.equal("stopped");
    expect(await balances()).to.deep.equal({ agent: FUNDS - 1000n, owner: start.owner + 1000n, escrow: start.escrow });

    // The quote was left unused by each refusal: it now pays, once.
    const done = await mcp.call("post_tasks", { ...args, confirm: true, quoteId: quote.data.quoteId });
    expect(done.isError, done.text).to.equal(false);
    expect(done.data).to.deep.include({ posted: 1, escrowPaid: AMOUNT.toString() });
    expect(await balances()).to.deep.equal({ agent: FUNDS - 1000n - AMOUNT, owner: start.owner + 1000n, escrow: start.escrow + AMOUNT });
  });
});
