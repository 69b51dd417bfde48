/**
 * Every refusal of the hosted-agent routes, with its exact code: each DEPLOY_FEE_NOT_PAID reason (a fee credited once
 * even when two deploys race with it), bad owner keys and tools, non-owners on every owner route, withdrawing while
 * running or across chains, a hosted agent's own token creating keys or deploying, quotas and the rate of deploys.
 */
import { expect } from "chai";
import { sql } from "kysely";
import hre from "hardhat";
import { randomBytes } from "node:crypto";
import type { HardhatEthersSigner } from "@nomicfoundation/hardhat-ethers/signers";
import { startTestServer, privateKeyOf, type TestServer } from "../server/harness";
import { expectError, expectOk } from "../server/expect";
import { publicKeyFromPrivateKey } from "@market/core/crypto";

const FEE = 2_000_000n;

describe("hosted agents: refusals", function () {
  this.timeout(120_000);
  let s: TestServer;
  let owner: HardhatEthersSigner;
  let ownerKey: string;
  let otherKey: string;

  beforeEach(async function () {
    s = await startTestServer({ hosted: { deployFeeRaw: FEE, deploysPerHour: 100 } });
    owner = s.stranger;
    ownerKey = await s.apiKeyFor(owner);
    otherKey = await s.apiKeyFor(s.poster);
    await (await s.usdc.connect(s.admin).mint(owner.address, 100_000_000n)).wait();
  });
  afterEach(async function () {
    await s.close();
  });

  const body = (extra: Record<string, unknown> = {}) => ({
    displayName: "Refusal agent",
    instructions: "Answer briefly.",
    model: { baseUrl: "http://127.0.0.1:9/v1", name: "m", apiKey: "sk-never-shown" },
    ownerPublicKey: publicKeyFromPrivateKey(privateKeyOf(owner)),
    start: false,
    ...extra,
  });

  async function payFee(from: HardhatEthersSigner, to: string, amount: bigint): Promise<string> {
    const sent = await s.usdc.connect(from).transfer(to, amount);
    await sent.wait();
    return sent.hash;
  }

  const deploy = (key: string, extra: Record<string, unknown> = {}) =>
    s.call<{ agent: { id: number; address: string; state: string } }>("POST", "/api/v1/agents", { key, body: body(extra) });

  async function deployed(extra: Record<string, unknown> = {}) {
    const feeTxHash = await payFee(owner, s.treasury.address, FEE);
    return expectOk(await deploy(ownerKey, { feeTxHash, ...extra })).agent;
  }

  it("answers the deploy-fee terms", async function () {
    expect(expectOk(await s.call("GET", "/api/v1/agents/deploy-fee"))).to.deep.equal({
      chain: "arc",
      amount: FEE.toString(),
      token: s.token,
      recipient: s.treasury.address,
      required: true,
    });
  });

  it("refuses a deploy whose fee is not paid, naming each reason, and credits a fee once", async function () {
    const reason = async (answer: Awaited<ReturnType<typeof deploy>>, expected: string) => {
      expectError(answer, "DEPLOY_FEE_NOT_PAID", 402);
      expect((answer.body.error as { reason?: string }).reason).to.equal(expected);
    };
    await reason(await deploy(ownerKey), "FEE_TX_MISSING");
    await reason(await deploy(ownerKey, { feeTxHash: `0x${randomBytes(32).toString("hex")}` }), "NOT_CONFIRMED");
    await reason(await deploy(ownerKey, { feeTxHash: await payFee(owner, s.poster.address, FEE) }), "WRONG_RECIPIENT");
    await reason(await deploy(ownerKey, { feeTxHash: await payFee(owner, s.treasury.address, FEE - 1n) }), "TOO_SMALL");
    // Paid by a wallet of another account.
    await reason(await deploy(ownerKey, { feeTxHash: await payFee(s.poster, s.treasury.address, FEE) }), "PAYER_NOT_LINKED");
    // A transfer that reverted (mined with status 0).
    await hre.network.provider.send("evm_setAutomine", [false]);
    let reverted: string;
    try {
      const data = s.usdc.interface.encodeFunctionData("transfer", [s.treasury.address, 10n ** 30n]);
      reverted = (await owner.sendTransaction({ to: s.token, data, gasLimit: 200_000 })).hash;
      await hre.network.provider.send("evm_mine", []);
    } finally {
      await hre.network.provider.send("evm_setAutomine", [true]);
    }
    expect((await hre.ethers.provider.getTransactionReceipt(reverted))?.status).to.equal(0);
    await reason(await deploy(ownerKey, { feeTxHash: reverted }), "REVERTED");
    expect(await s.db.selectFrom("hosted_agents").selectAll().execute()).to.deep.equal([]);

    // Paid right: the deploy goes through; the same transaction again is already credited.
    const feeTxHash = await payFee(owner, s.treasury.address, FEE);
    expectOk(await deploy(ownerKey, { feeTxHash }));
    await reason(await deploy(ownerKey, { feeTxHash }), "ALREADY_CREDITED");

    // Two deploys racing with one new payment: exactly one is credited, the other refused, nothing half-written.
    const raced = await payFee(owner, s.treasury.address, FEE);
    const answers = await Promise.all([deploy(ownerKey, { feeTxHash: raced }), deploy(ownerKey, { feeTxHash: raced })]);
    expect(answers.map((a) => a.status).sort()).to.deep.equal([200, 402]);
    await reason(
      answers.find((a) => a.status === 402)!,
      "ALREADY_CREDITED",
    );
    expect(await s.db.selectFrom("deploy_fee_credits").select("tx_hash").execute()).to.have.length(2);
    expect(await s.db.selectFrom("hosted_agents").select("id").execute()).to.have.length(2);
    expect(await s.db.selectFrom("hosted_agent_secrets").select("agent_id").execute()).to.have.length(4);
  });

  it("refuses an owner public key that is not an uncompressed secp256k1 key", async function () {
    const feeTxHash = await payFee(owner, s.treasury.address, FEE);
    const compressed = new hre.ethers.Wallet(privateKeyOf(owner)).signingKey.compressedPublicKey;
    for (const ownerPublicKey of [compressed, `04${"ab".repeat(64)}`, "hello", `04${"00".repeat(64)}`]) {
      expectError(await deploy(ownerKey, { feeTxHash, ownerPublicKey }), "INVALID_PUBLIC_KEY");
    }
    expect(await s.db.selectFrom("deploy_fee_credits").selectAll().execute()).to.deep.equal([]);
  });

  it("refuses tools that cannot work: duplicate or built-in names, placeholders without an input, auth without a secret", async function () {
    const feeTxHash = await payFee(owner, s.treasury.address, FEE);
    const tool = (extra: Record<string, unknown>) => ({
      name: "fetch_page",
      description: "Fetch a page.",
      parameters: { type: "object", properties: { id: { type: "string", description: "Page id." } } },
      method: "GET",
      url: "http://127.0.0.1:9/pages/{id}",
      paramMapping: { id: "path" },
      ...extra,
    });
    const cases: Array<[unknown[], string]> = [
      [[tool({}), tool({})], "body.tools.1.name"],
      [[tool({ name: "send_message" })], "body.tools.0.name"],
      [[tool({ url: "http://127.0.0.1:9/pages/{missing}" })], "body.tools.0.url"],
      [[tool({ auth: { type: "bearer" } })], "body.tools.0.auth.secretRef"],
      [[tool({ auth: { type: "header", secretRef: "k" } })], "body.tools.0.auth.keyName"],
      [[tool({ auth: { type: "bearer", secretRef: "k" } })], "body.tools.0.auth.keyName"],
      [[tool({ auth: { type: "query_param", secretRef: "k" } })], "body.tools.0.auth.keyName"],
      [[tool({ name: "has-hyphen" })], "body.tools.0.name"],
    ];
    for (const [tools, field] of cases) {
      const answer = await deploy(ownerKey, { feeTxHash, tools });
      expectError(answer, "VALIDATION_FAILED");
      expect(answer.body.error.details?.[0]?.field).to.equal(field);
    }
  });

  it("answers non-owners NOT_AGENT_OWNER on every owner route, and unknown agents HOSTED_AGENT_NOT_FOUND", async function () {
    const agent = await deployed();
    const routes: Array<["POST" | "DELETE" | "GET", string, unknown?]> = [
      ["POST", "start"],
      ["POST", "stop"],
      ["POST", "restart"],
      ["POST", "export-key"],
      ["POST", "withdraw", {}],
      ["DELETE", ""],
      ["GET", "messages"],
      ["POST", "messages", { body: "hello" }],
    ];
    for (const [method, action, payload] of routes) {
      const url = `/api/v1/agents/${agent.id}${action ? `/${action}` : ""}`;
      expectError(await s.call(method, url, { key: otherKey, ...(payload === undefined ? {} : { body: payload }) }), "NOT_AGENT_OWNER");
      expectError(
        await s.call(method, `/api/v1/agents/999${action ? `/${action}` : ""}`, {
          key: ownerKey,
          ...(payload === undefined ? {} : { body: payload }),
        }),
        "HOSTED_AGENT_NOT_FOUND",
      );
      expectError(await s.call(method, url, payload === undefined ? {} : { body: payload }), "AUTH_REQUIRED");
    }
    expect(await s.db.selectFrom("key_exports").selectAll().execute()).to.deep.equal([]);
    expect((await s.db.selectFrom("hosted_agents").select("state").executeTakeFirstOrThrow()).state).to.equal("stopped");
  });

  it("withdraws only when stopped, only to the owner on the settlement chain", async function () {
    const agent = await deployed({ start: true });
    expect(agent.state).to.equal("running");
    expectError(await s.call("POST", `/api/v1/agents/${agent.id}/withdraw`, { key: ownerKey, body: {} }), "AGENT_RUNNING");
    expectError(await s.call("POST", `/api/v1/agents/${agent.id}/withdraw`, { key: ownerKey, body: { chain: "base" } }), "BRIDGE_UNAVAILABLE");
    expectOk(await s.call("POST", `/api/v1/agents/${agent.id}/stop`, { key: ownerKey }));
    expectError(await s.call("POST", `/api/v1/agents/${agent.id}/withdraw`, { key: ownerKey, body: {} }), "NOTHING_TO_WITHDRAW");
    // Funds left and the key never exported: deleting is refused.
    await payFee(owner, agent.address, 1_000n);
    const refused = await s.call("DELETE", `/api/v1/agents/${agent.id}`, { key: ownerKey });
    expectError(refused, "WRONG_STATE");
    expect((refused.body.error as { reason?: string }).reason).to.equal("FUNDS_LEFT");
    expectOk(await s.call("POST", `/api/v1/agents/${agent.id}/export-key`, { key: ownerKey }));
    expectOk(await s.call("DELETE", `/api/v1/agents/${agent.id}`, { key: ownerKey }));
    expectError(await s.call("GET", `/api/v1/agents/${agent.id}`), "HOSTED_AGENT_NOT_FOUND");
    expect(await s.db.selectFrom("hosted_agent_secrets").selectAll().execute()).to.deep.equal([]);
  });

  it("releases no key when its export cannot be recorded (KEY_EXPORT_NOT_RECORDED), and the wallet stays unexported", async function () {
    const agent = await deployed();
    // The record's table gone for a moment: the export's transaction fails.
    await sql`alter table key_exports rename to key_exports_away`.execute(s.db);
    let refused;
    try {
      refused = await s.call("POST", `/api/v1/agents/${agent.id}/export-key`, { key: ownerKey });
    } finally {
      await sql`alter table key_exports_away rename to key_exports`.execute(s.db);
    }
    expectError(refused, "KEY_EXPORT_NOT_RECORDED");
    expect(refused.status).to.equal(503);
    expect(JSON.stringify(refused.body)).not.to.contain("encryptedPrivateKey");
    const row = await s.db.selectFrom("hosted_agents").select("exported_at").where("id", "=", agent.id).executeTakeFirstOrThrow();
    expect(row.exported_at).to.equal(null);
    expect(await s.db.selectFrom("key_exports").selectAll().execute()).to.deep.equal([]);
    // Recorded, it is released.
    const exported = expectOk(await s.call<{ exports: number }>("POST", `/api/v1/agents/${agent.id}/export-key`, { key: ownerKey }));
    expect(exported.exports).to.equal(1);
  });

  it("refuses deleting an agent that holds a task not ended (its payout would reach a destroyed key) until the key is exported", async function () {
    const agent = await deployed({ start: true });
    // Its runner's token (no runner runs here): it registers and takes a task as its runner would.
    const token = await s.agentToken(agent.id);
    expectOk(
      await s.call("POST", "/api/v1/a2a/register", {
        key: token,
        body: { publicKey: hre.ethers.Wallet.createRandom().signingKey.publicKey, supportedChains: ["arc"] },
      }),
    );
    const { taskHash } = await s.post(s.poster, otherKey, s.publicTask("Summarise the attached board minutes in two lines."));
    expectOk(await s.call("POST", `/api/v1/a2a/tasks/${taskHash}/accept`, { key: token }));
    await s.sync();
    expect((await s.escrow.getTask(taskHash)).worker).to.equal(agent.address);
    expectOk(await s.call("POST", `/api/v1/agents/${agent.id}/stop`, { key: ownerKey }));

    // Its wallet holds nothing yet, but the task may still pay it: deleting would destroy the only key to that wallet.
    expect(await s.usdc.balanceOf(agent.address)).to.equal(0n);
    const refused = await s.call("DELETE", `/api/v1/agents/${agent.id}`, { key: ownerKey });
    expectError(refused, "WRONG_STATE");
    expect((refused.body.error as { reason?: string }).reason).to.equal("TASKS_IN_HAND");
    expect(await s.db.selectFrom("hosted_agent_secrets").select("kind").where("agent_id", "=", agent.id).execute()).to.have.length(2);
    expect(expectOk(await s.call<{ agent: { state: string } }>("GET", `/api/v1/agents/${agent.id}`)).agent.state).to.equal("stopped");
    // With the key exported, the owner holds the wallet: deleting goes through.
    expectOk(await s.call("POST", `/api/v1/agents/${agent.id}/export-key`, { key: ownerKey }));
    expectOk(await s.call("DELETE", `/api/v1/agents/${agent.id}`, { key: ownerKey }));
  });

  it("a hosted agent's own token cannot create or list keys, deploy, or act as its owner", async function () {
    const agent = await deployed({ start: true });
    // The runner's token, as the runner makes it (held in its memory only).
    const token = await s.agentToken(agent.id);
    expect(expectOk(await s.call<{ addresses: string[]; via: string }>("GET", "/api/v1/api-keys/whoami", { key: token }))).to.deep.include({
      addresses: [agent.address],
      via: "hostedAgent",
    });
    const refusals: Array<["GET" | "POST", string, unknown?]> = [
      ["POST", "/api/v1/api-keys", { name: "escape" }],
      ["GET", "/api/v1/api-keys"],
      ["POST", "/api/v1/api-keys/revoke-all"],
      ["POST", "/api/v1/agents", body({ feeTxHash: await payFee(owner, s.treasury.address, FEE) })],
      ["GET", "/api/v1/agents/mine"],
      ["POST", `/api/v1/agents/${agent.id}/export-key`],
      ["POST", `/api/v1/agents/${agent.id}/stop`],
    ];
    for (const [method, url, payload] of refusals) {
      const answer = await s.call(method, url, { key: token, ...(payload === undefined ? {} : { body: payload }) });
      expectError(answer, "HOSTED_AGENT_TOKEN_REFUSED");
    }
    expect(await s.db.selectFrom("api_keys").select("id").where("wallet_address", "=", agent.address).execute()).to.deep.equal([]);
    // It talks with its owner: its messages are the agent's.
    expect(
      expectOk(await s.call<{ sender: string }>("POST", `/api/v1/agents/${agent.id}/messages`, { key: token, body: { body: "Done for today." } }))
        .sender,
    ).to.equal("agent");
    expectOk(await s.call("POST", `/api/v1/agents/${agent.id}/messages`, { key: ownerKey, body: { body: "Thanks." } }));
    const messages = expectOk(
      await s.call<{ messages: Array<{ sender: string; body: string }> }>("GET", `/api/v1/agents/${agent.id}/messages`, { key: token }),
    ).messages;
    expect(messages.map((m) => [m.sender, m.body])).to.deep.equal([
      ["agent", "Done for today."],
      ["owner", "Thanks."],
    ]);
    // Stopped, its token is worthless.
    expectOk(await s.call("POST", `/api/v1/agents/${agent.id}/stop`, { key: ownerKey }));
    expectError(await s.call("GET", "/api/v1/api-keys/whoami", { key: token }), "INVALID_TOKEN");
  });

  it("the public listing and one agent never show a secret; /health/bridge reports the sponsor and the verifier", async function () {
    const agent = await deployed({ toolSecrets: { weather: "secret-weather-value" } });
    const listing = await s.call("GET", "/api/v1/agents");
    const one = await s.call("GET", `/api/v1/agents/${agent.id}`);
    for (const answer of [listing, one]) {
      const text = JSON.stringify(answer.body);
      expect(answer.status).to.equal(200);
      for (const secret of ["sk-never-shown", "secret-weather-value"]) expect(text).not.to.include(secret);
      expect(text).not.to.include("ownerPublicKey");
    }
    expect(expectOk(await s.call("GET", "/health/bridge"))).to.deep.equal({
      gasSponsor: { state: "unconfigured", address: null },
      verifierMatches: { arc: true },
    });
  });
});

describe("hosted agents: quotas and configuration", function () {
  this.timeout(60_000);
  let s: TestServer | undefined;
  afterEach(async function () {
    await s?.close();
    s = undefined;
  });

  const body = (signer: HardhatEthersSigner) => ({
    displayName: "Quota agent",
    instructions: "Answer.",
    model: { baseUrl: "https://models.example.com/v1", name: "m" },
    ownerPublicKey: publicKeyFromPrivateKey(privateKeyOf(signer)),
    start: false,
  });

  it("refuses deploys past the account's quota and the hourly rate", async function () {
    s = await startTestServer({ hosted: { maxAgentsPerAccount: 2, deploysPerHour: 3 } });
    const key = await s.apiKeyFor(s.stranger);
    for (let i = 0; i < 2; i++) expectOk(await s.call("POST", "/api/v1/agents", { key, body: body(s.stranger) }));
    expectError(await s.call("POST", "/api/v1/agents", { key, body: body(s.stranger) }), "AGENT_QUOTA_EXCEEDED");
    expectError(await s.call("POST", "/api/v1/agents", { key, body: body(s.stranger) }), "RATE_LIMITED");
  });

  it("is off without a master key, and refuses private model URLs unless allowed", async function () {
    s = await startTestServer({ hosted: { masterKey: undefined } });
    const key = await s.apiKeyFor(s.stranger);
    expectError(await s.call("POST", "/api/v1/agents", { key, body: body(s.stranger) }), "HOSTING_UNAVAILABLE");
    await s.close();
    s = await startTestServer({ hosted: { allowPrivateNetworks: false } });
    const key2 = await s.apiKeyFor(s.stranger);
    const privateUrls = ["http://127.0.0.1:11434/v1", "http://localhost:8000/v1", "http://169.254.169.254/latest", "http://10.1.2.3/v1"];
    // The same addresses spelled as IPv6 (IPv4-mapped): the kernel connects them to the IPv4 address.
    privateUrls.push("http://[::ffff:127.0.0.1]:11434/v1", "http://[::ffff:a9fe:a9fe]/latest", "http://[0:0:0:0:0:ffff:a01:203]/v1");
    for (const baseUrl of privateUrls) {
      const answer = await s.call("POST", "/api/v1/agents", { key: key2, body: { ...body(s.stranger), model: { baseUrl, name: "m" } } });
      expectError(answer, "VALIDATION_FAILED");
      expect(answer.body.error.details?.[0]?.field).to.equal("body.model.baseUrl");
    }
  });
});
