/**
 * A hosted agent's gas (issue 29, item 1): an agent whose wallet cannot pay a delivery's gas takes no task and says
 * why (its `lastError`, the log), and takes it once given gas, without a restart; with the gas sponsor on, the same
 * agent takes it and the sponsor pays its first evidence; a run whose delivery finds no gas fails with its reason
 * (the run row, `lastError`, the log) and the task is handed back once the agent has gas again.
 */
import { expect } from "chai";
import hre from "hardhat";
import { Wallet } from "ethers";
import { startStack, type Stack } from "../support/stack";
import { startModelServer, type ModelServer } from "../support/model-server";
import type { TestServerOptions } from "../server/harness";
import { agentOptions, fundGas, keyedClientOf, statusOf, until } from "./helpers";
import { cliEnv, ensureCliBuilt, runCli, taskDir } from "../support/cli";
import type { TaskView } from "@market/core/api";

const SUMMARY = "Summary: the report explains the warehouse move, its costs and the new delivery times in plain words.";

describe("hosted agents: gas", function () {
  this.timeout(180_000);
  let s: Stack | undefined;
  let model: ModelServer;
  const logLines: string[] = [];

  before(ensureCliBuilt);
  beforeEach(async function () {
    logLines.length = 0;
    model = await startModelServer();
    model.setScript(() => ({ content: SUMMARY }));
  });
  afterEach(async function () {
    if (this.currentTest?.state === "failed") console.log(logLines.filter((l) => l.includes("hostedAgent")).join("\n"));
    await s?.close();
    s = undefined;
    await model.close();
  });

  async function stack(hosted: TestServerOptions["hosted"] = {}) {
    s = await startStack({ hosted, logger: { level: "info", stream: { write: (line: string) => logLines.push(line) } } });
    const owner = await keyedClientOf(s, s.stranger);
    const { agent } = await owner.client.deployAgent(agentOptions(model));
    const { client: poster, key: posterKey } = await keyedClientOf(s, s.poster);
    const post = (instructions: string) =>
      poster
        .postTask({ instructions, amountRaw: 1_000_000n, privacy: "public", capabilities: ["summarization"], targetExecutor: agent.address })
        .then((r) => r.taskHash!);
    const lastError = async () =>
      (
        await s!.call<{ agents: Array<{ id: number; lastError: string | null }> }>("GET", "/api/v1/agents/mine", { key: owner.key })
      ).body.data.agents.find((a) => a.id === agent.id)?.lastError;
    const run = async (taskHash: string) =>
      (await s!.db
        .selectFrom("hosted_task_runs")
        .select(["status", "error"])
        .where("agent_id", "=", agent.id)
        .where("task_hash", "=", taskHash)
        .executeTakeFirst()) ?? { status: "none", error: null };
    return { s, owner, agent, post, posterKey, lastError, run };
  }

  it("without gas it takes no task and says why (lastError, log); sent gas, it takes the task and is paid, no restart", async function () {
    const { s, owner, agent, post, posterKey, lastError } = await stack();
    await owner.client.startAgent({ agentId: agent.id });
    const task = await post("Summarise the warehouse report.");
    await until(async () => (await lastError())?.startsWith("INSUFFICIENT_GAS: ") === true, 30_000, "lastError to name the gas");
    expect(await lastError()).to.contain(`Wallet ${agent.address} has 0 wei of native gas on arc`);
    expect(logLines.some((line) => line.includes('"code":"INSUFFICIENT_GAS"') && line.includes(`"hostedAgent":${agent.id}`))).to.equal(true);
    expect((await statusOf(s, posterKey, task)).status).to.equal("open");
    expect(model.requests).to.have.length(0);

    await fundGas(s.stranger, agent.address);
    await until(async () => (await statusOf(s, posterKey, task)).status === "verified", 60_000, "the task verified once the agent has gas");
  });

  it("with the gas sponsor on, the agent without gas takes the task and the sponsor pays its first evidence", async function () {
    const sponsorKey = Wallet.createRandom().privateKey;
    const { s, owner, agent, post, posterKey } = await stack({ gasSponsor: "on", gasSponsorKey: sponsorKey });
    await (await s.admin.sendTransaction({ to: new Wallet(sponsorKey).address, value: 10n ** 18n })).wait();
    await owner.client.startAgent({ agentId: agent.id });
    const task = await post("Summarise the sponsored report.");
    await until(async () => (await statusOf(s, posterKey, task)).status === "verified", 60_000, "the sponsored task verified");
    const rows = await s.db.selectFrom("gas_sponsorships").select(["agent_address", "purpose", "status"]).execute();
    expect(rows).to.deep.equal([{ agent_address: agent.address, purpose: "first-evidence", status: "sent" }]);
  });

  it("a delivery that finds no gas fails the run with its reason, and the task is handed back once there is gas", async function () {
    const { s, owner, agent, post, posterKey, lastError, run } = await stack({ releaseCheckMs: 500 });
    await fundGas(s.stranger, agent.address);
    // The wallet is emptied while the model answers: the check before the accept passed, the delivery finds nothing.
    model.setScript(() => {
      void hre.network.provider.send("hardhat_setBalance", [agent.address, "0x0"]);
      return { content: SUMMARY };
    });
    await owner.client.startAgent({ agentId: agent.id });
    const task = await post("Summarise the drained report.");
    await until(async () => (await run(task)).status === "failed", 30_000, "the run failed");
    expect((await run(task)).error).to.match(/^INSUFFICIENT_GAS: Wallet 0x[0-9a-fA-F]{40} has too little native gas on arc/);
    expect(await lastError()).to.match(new RegExp(`^task ${task}: INSUFFICIENT_GAS: `));
    expect(logLines.some((line) => line.includes('"msg":"task failed"') && line.includes(task))).to.equal(true);
    // No signed transaction in hex anywhere in the log.
    expect(logLines.filter((line) => /0x[0-9a-f]{200,}/i.test(line))).to.deep.equal([]);
    expect((await statusOf(s, posterKey, task)).status).to.equal("assigned");

    model.setScript(() => ({ content: SUMMARY }));
    await fundGas(s.stranger, agent.address);
    await until(async () => (await statusOf(s, posterKey, task)).status === "open", 30_000, "the failed task handed back");

    // Its poster sees what happened (issue 29, item 12): taken, the work failed and why, handed back. Nobody else does.
    await s.sync();
    const seen = await s.call<TaskView>("GET", `/api/v1/tasks/${task}`, { key: posterKey });
    const history = seen.body.data.state.history ?? [];
    expect(history.map((h) => h.event)).to.deep.equal([
      "funded",
      "taken",
      "work failed: the hosted agent gave up on it",
      "released: handed back, open to other agents again",
    ]);
    expect(history[2]).to.deep.include({ worker: agent.address });
    expect(history[2]!.reason).to.match(/^INSUFFICIENT_GAS: /);
    expect((await s.call<TaskView>("GET", `/api/v1/tasks/${task}`)).body.data.state.history).to.equal(undefined);
    expect((await s.call<TaskView>("GET", `/api/v1/tasks/${task}`, { key: owner.key })).body.data.state.history).to.equal(undefined);
    const status = await runCli(["status", task], { env: await cliEnv(s, s.poster, { apiKey: posterKey }), cwd: taskDir({}) });
    expect(status.status, status.stderr).to.equal(0);
    expect(status.stdout).to.contain("status: open");
    expect(status.stdout).to.match(
      new RegExp(
        `history:\n.*funded\n.*taken by ${agent.address}\n.*work failed: the hosted agent gave up on it by ${agent.address}: INSUFFICIENT_GAS: `,
      ),
    );
  });
});
