/**
 * Owner operations racing each other: concurrent deploys against the account's quota, withdraws racing each other or
 * a start, a delete racing a start. Each ends in one consistent state, the loser answered with a clear code.
 */
import { expect } from "chai";
import type { HardhatEthersSigner } from "@nomicfoundation/hardhat-ethers/signers";
import { startTestServer, privateKeyOf, type TestServer } from "../server/harness";
import { expectError, expectOk } from "../server/expect";
import { startStack, type Stack } from "../support/stack";
import { fundGas } from "./helpers";
import { publicKeyFromPrivateKey } from "@market/core/crypto";

const FEE = 1_000_000n;

describe("hosted agents: racing owner operations", function () {
  this.timeout(120_000);
  let s: TestServer;
  let owner: HardhatEthersSigner;
  let ownerKey: string;

  beforeEach(async function () {
    s = await startTestServer({ hosted: { maxAgentsPerAccount: 2, deploysPerHour: 100, deployFeeRaw: FEE } });
    owner = s.stranger;
    ownerKey = await s.apiKeyFor(owner);
    await (await s.usdc.connect(s.admin).mint(owner.address, 100_000_000n)).wait();
  });
  afterEach(async function () {
    await s.close();
  });

  const body = (extra: Record<string, unknown> = {}) => ({
    displayName: "Racing agent",
    instructions: "Answer briefly.",
    model: { baseUrl: "http://127.0.0.1:9/v1", name: "m", apiKey: "sk-model-key" },
    ownerPublicKey: publicKeyFromPrivateKey(privateKeyOf(owner)),
    start: false,
    ...extra,
  });
  const deploy = (extra: Record<string, unknown> = {}) =>
    s.call<{ agent: { id: number; address: string; state: string } }>("POST", "/api/v1/agents", { key: ownerKey, body: body(extra) });
  /** A fee transaction of its own for each deploy. */
  async function payFee(): Promise<string> {
    const sent = await s.usdc.connect(owner).transfer(s.treasury.address, FEE);
    await sent.wait();
    return sent.hash;
  }

  it("concurrent deploys never exceed the account's quota: the ones over it are refused AGENT_QUOTA_EXCEEDED and leave nothing", async function () {
    const fees: string[] = [];
    for (let i = 0; i < 6; i++) fees.push(await payFee());
    const answers = await Promise.all(fees.map((feeTxHash) => deploy({ feeTxHash })));
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses).to.deep.equal([200, 200, 409, 409, 409, 409]);
    for (const answer of answers.filter((a) => a.status !== 200)) expectError(answer, "AGENT_QUOTA_EXCEEDED");
    const rows = await s.db.selectFrom("hosted_agents").select("id").execute();
    expect(rows).to.have.length(2);
    // Only the two kept agents have secrets and fee credits (the refused deploys' fees stay unused).
    expect(await s.db.selectFrom("deploy_fee_credits").select("tx_hash").execute()).to.have.length(2);
    const secretOwners = new Set((await s.db.selectFrom("hosted_agent_secrets").select("agent_id").execute()).map((r) => r.agent_id));
    expect([...secretOwners].sort()).to.deep.equal(rows.map((r) => r.id).sort());
  });
});

describe("hosted agents: withdraws racing", function () {
  this.timeout(120_000);
  let s: TestServer;
  let owner: HardhatEthersSigner;
  let ownerKey: string;

  beforeEach(async function () {
    s = await startTestServer({ hosted: { deploysPerHour: 100 } });
    owner = s.stranger;
    ownerKey = await s.apiKeyFor(owner);
  });
  afterEach(async function () {
    await s.close();
  });

  /** A stopped agent whose wallet holds `funds` raw units and gas. */
  async function fundedAgent(funds: bigint) {
    const agent = await s.deployHostedAgent(owner, ownerKey, { displayName: "Withdrawn agent" });
    await (await s.usdc.connect(s.admin).mint(agent.address, funds)).wait();
    await fundGas(s.admin, agent.address);
    return agent;
  }
  const withdraw = (id: number, amountRaw?: bigint) =>
    s.call<{ amount: string; txHash: string }>("POST", `/api/v1/agents/${id}/withdraw`, {
      key: ownerKey,
      body: amountRaw === undefined ? {} : { amountRaw: amountRaw.toString() },
    });

  it("two withdraws at once: one sends, the other is refused WITHDRAWAL_IN_PROGRESS (or NOTHING_TO_WITHDRAW once it ended); the owner is paid once, exactly", async function () {
    const agent = await fundedAgent(5_000_000n);
    const before = await s.usdc.balanceOf(owner.address);
    const answers = await Promise.all([withdraw(agent.id), withdraw(agent.id)]);
    const won = answers.filter((a) => a.status === 200);
    expect(won, JSON.stringify(answers.map((a) => a.body))).to.have.length(1);
    // On a loaded machine the second request may arrive after the first withdrawal has ended: the wallet is empty then.
    const refused = answers.find((a) => a.status !== 200)!;
    expectError(refused, refused.body.error.code === "NOTHING_TO_WITHDRAW" ? "NOTHING_TO_WITHDRAW" : "WITHDRAWAL_IN_PROGRESS");
    expect(won[0]!.body.data.amount).to.equal("5000000");
    expect(await s.usdc.balanceOf(owner.address)).to.equal(before + 5_000_000n);
    expect(await s.usdc.balanceOf(agent.address)).to.equal(0n);
    // Ended, the withdrawal lets go of the agent: it is stopped, and starts.
    const row = await s.db.selectFrom("hosted_agents").select("state").where("id", "=", agent.id).executeTakeFirstOrThrow();
    expect(row.state).to.equal("stopped");
    expect(expectOk(await s.call<{ agent: { state: string } }>("POST", `/api/v1/agents/${agent.id}/start`, { key: ownerKey })).agent.state).to.equal(
      "running",
    );
  });

  it("a withdraw racing a start: exactly one of them wins, the other is refused with a clear code", async function () {
    for (let round = 0; round < 3; round++) {
      const agent = await fundedAgent(1_000_000n);
      const [withdrawn, started] = await Promise.all([
        withdraw(agent.id),
        s.call<{ agent: { state: string } }>("POST", `/api/v1/agents/${agent.id}/start`, { key: ownerKey }),
      ]);
      // On a loaded machine the start can arrive after the withdrawal has ended: both then succeed, one after the
      // other (the wallet emptied, then the agent running). Never both at once.
      const after = withdrawn.status === 200 && started.status === 200;
      if (after) {
        expect(expectOk(started).agent.state).to.equal("running");
        expect(await s.usdc.balanceOf(agent.address)).to.equal(0n);
      } else if (withdrawn.status === 200) {
        expectError(started, "WITHDRAWAL_IN_PROGRESS");
        expect(await s.usdc.balanceOf(agent.address)).to.equal(0n);
      } else {
        expectError(withdrawn, "AGENT_RUNNING");
        expect(expectOk(started).agent.state).to.equal("running");
        expect(await s.usdc.balanceOf(agent.address)).to.equal(1_000_000n);
      }
      const row = await s.db.selectFrom("hosted_agents").select("state").where("id", "=", agent.id).executeTakeFirstOrThrow();
      expect(row.state).to.equal(withdrawn.status === 200 && !after ? "stopped" : "running");
    }
  });
});

describe("hosted agents: delete and start, with runners", function () {
  this.timeout(120_000);
  let s: Stack;
  let ownerKey: string;

  beforeEach(async function () {
    s = await startStack({ hosted: { deploysPerHour: 100, maxAgentsPerAccount: 20 } });
    ownerKey = await s.apiKeyFor(s.stranger);
  });
  afterEach(async function () {
    await s.close();
  });

  const deployStopped = () => s.deployHostedAgent(s.stranger, ownerKey, { displayName: "Short-lived agent" });
  const stateOf = async (id: number) =>
    await s.db.selectFrom("hosted_agents").select(["state", "last_error"]).where("id", "=", id).executeTakeFirstOrThrow();

  it("a launch that cannot open the agent's secrets leaves it stopped with the reason, not running without a runner", async function () {
    const agent = await deployStopped();
    await s.db.deleteFrom("hosted_agent_secrets").where("agent_id", "=", agent.id).where("kind", "=", "wallet").execute();
    const started = expectOk(
      await s.call<{ agent: { state: string; lastError: string | null } }>("POST", `/api/v1/agents/${agent.id}/start`, { key: ownerKey }),
    );
    expect(started.agent.state).to.equal("stopped");
    expect(started.agent.lastError).to.match(/no wallet key/);
    expect(s.hosting.runners.isRunning(agent.id)).to.equal(false);
    expect((await stateOf(agent.id)).state).to.equal("stopped");
  });

  it("a delete racing a start leaves the agent deleted: never running again, no runner, no token", async function () {
    for (let round = 0; round < 4; round++) {
      const agent = await deployStopped();
      const remove = () => s.call("DELETE", `/api/v1/agents/${agent.id}`, { key: ownerKey });
      const start = () => s.call<{ agent: { state: string } }>("POST", `/api/v1/agents/${agent.id}/start`, { key: ownerKey });
      // Alternate which is asked first.
      const [deleted, started] =
        round % 2 === 0 ? await Promise.all([remove(), start()]) : await Promise.all([start(), remove()]).then(([a, b]) => [b, a] as const);
      expectOk(deleted);
      if (started.status !== 200) expectError(started, "HOSTED_AGENT_NOT_FOUND");
      expect((await stateOf(agent.id)).state, `round ${round}`).to.equal("deleted");
      expect(s.hosting.runners.isRunning(agent.id)).to.equal(false);
      expect(await s.db.selectFrom("hosted_agent_tokens").select("agent_id").where("agent_id", "=", agent.id).execute()).to.deep.equal([]);
      expect(await s.db.selectFrom("hosted_agent_secrets").select("agent_id").where("agent_id", "=", agent.id).execute()).to.deep.equal([]);
      // A start after the delete finds nothing.
      expectError(await s.call("POST", `/api/v1/agents/${agent.id}/start`, { key: ownerKey }), "HOSTED_AGENT_NOT_FOUND");
    }
  });
});
