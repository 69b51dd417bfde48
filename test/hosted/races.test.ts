/**
 * Owner operations racing each other: concurrent deploys against the account's quota, withdraws racing each other or
 * a start, a delete racing a start. Each ends in one consistent state, the loser answered with a clear code.
 */
import { expect } from "chai";
import type { HardhatEthersSigner } from "@nomicfoundation/hardhat-ethers/signers";
import { startTestServer, privateKeyOf, type TestServer } from "../server/harness";
import { expectError } from "../server/expect";
import { publicKeyFromPrivateKey } from "../../core/crypto";

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
