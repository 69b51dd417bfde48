/**
 * Services over the API, without a running model: the owner lists, changes and deletes a hosted agent's services;
 * the public sees the active ones with the spec's fields; every bad field, every wrong caller and the quotas are refused
 * with their codes; and every listing check of a rental refuses with its code, when the funding is built (nothing
 * paid) and at the listing after funding (the poster cancels for an exact refund).
 */
import { expect } from "chai";
import hre from "hardhat";
import { Wallet } from "ethers";
import { serverFixture, type TestServer } from "../server/harness";
import { expectError, expectOk } from "../server/expect";
import { publicTaskHash } from "@market/core/crypto";
import { BlocklistToken__factory } from "../../typechain-types";
import type { BuiltTask, ServiceList, ServiceView } from "@market/core/api";
import type { ErrorCode } from "@market/core/errors";

const PRICE = 1_500_000n;

const seededServer = serverFixture(async (s) => {
  const ownerKey = await s.apiKeyFor(s.stranger);
  const posterKey = await s.apiKeyFor(s.poster);
  await s.registerAgent(s.worker, []);
  const agent = await s.deployHostedAgent(s.stranger, ownerKey, {
    displayName: "Contract reader",
    instructions: "Read contracts and list their risks.",
  });
  return { ownerKey, posterKey, agent };
});

describe("services: routes and rental listing checks", function () {
  this.timeout(120_000);
  let s: TestServer;
  let ownerKey: string;
  let posterKey: string;
  let agent: { id: number; address: string };

  beforeEach(async function () {
    const { server, seeded } = await seededServer();
    s = server;
    ({ ownerKey, posterKey, agent } = seeded);
  });
  afterEach(async function () {
    await s.close();
  });

  const servicesUrl = (agentId = agent.id) => `/api/v1/agents/${agentId}/services`;
  const create = (body: Record<string, unknown>, key = ownerKey, agentId = agent.id) =>
    s.call<{ service: ServiceView }>("POST", servicesUrl(agentId), { key, body });
  const createOk = async (body: Record<string, unknown> = {}) =>
    expectOk(await create({ name: "Contract risk review", priceRaw: PRICE.toString(), serviceType: "api", ...body })).service;
  const patch = (serviceId: number, body: Record<string, unknown>, key = ownerKey) =>
    s.call<{ service: ServiceView }>("PATCH", `${servicesUrl()}/${serviceId}`, { key, body });

  /**
   * Started (no runner runs here: the state is recorded), with its own token as its runner would hold it, registering
   * as starting does.
   */
  async function registerHostedAgent(extra: Record<string, unknown> = {}) {
    expectOk(await s.call("POST", `/api/v1/agents/${agent.id}/start`, { key: ownerKey }));
    const token = await s.agentToken(agent.id);
    const register = (body: Record<string, unknown>) => s.call("POST", "/api/v1/a2a/register", { key: token, body });
    expectOk(
      await register({ publicKey: Wallet.createRandom().signingKey.publicKey, supportedChains: ["arc"], displayName: "Contract reader", ...extra }),
    );
    return { token, register };
  }

  it("the owner lists, changes and deletes services; the public sees the active ones with the spec's fields", async function () {
    const service = await createOk({ description: "I read a contract and list its five largest risks.\nPlain text." });
    expect(service).to.deep.equal({
      id: service.id,
      agent_id: agent.id,
      agent_address: agent.address,
      name: "Contract risk review",
      description: "I read a contract and list its five largest risks.\nPlain text.",
      price_raw: PRICE.toString(),
      service_type: "api",
      active: true,
      sold_count: 0,
      agent_name: "Contract reader",
      // Never started: not registered yet.
      agent_public_key: null,
      agent_supported_chains: null,
      created_at: service.created_at,
      updated_at: service.updated_at,
    });
    const hidden = await createOk({ name: "  Draft service  ", serviceType: "a2a", active: false });
    expect(hidden).to.deep.include({ name: "Draft service", active: false, description: "" });

    // The public list: active only, newest first, with total; filtered by agent.
    const list = expectOk(await s.call<ServiceList>("GET", "/api/v1/marketplace/services"));
    expect(list.services.map((x) => x.id)).to.deep.equal([service.id]);
    expect(list.total).to.equal(1);
    const mine = expectOk(await s.call<ServiceList>("GET", `/api/v1/marketplace/services?agent=${agent.address.toLowerCase()}`));
    expect(mine.services.map((x) => x.id)).to.deep.equal([service.id]);
    const none = expectOk(await s.call<ServiceList>("GET", `/api/v1/marketplace/services?agent=${s.worker.address}`));
    expect(none).to.deep.equal({ services: [], total: 0 });
    expectError(await s.call("GET", "/api/v1/marketplace/services?agent=0x1234"), "INVALID_ADDRESS");
    // One service, an inactive one too.
    expect(expectOk(await s.call<{ service: ServiceView }>("GET", `/api/v1/marketplace/services/${hidden.id}`)).service.active).to.equal(false);
    // The owner's list: inactive ones included.
    const owned = expectOk(await s.call<ServiceList>("GET", servicesUrl(), { key: ownerKey }));
    expect(owned.services.map((x) => [x.id, x.active])).to.deep.equal([
      [service.id, true],
      [hidden.id, false],
    ]);

    // Once the agent registers (it does at start), its key and chains show.
    await registerHostedAgent();
    const registered = expectOk(await s.call<{ service: ServiceView }>("GET", `/api/v1/marketplace/services/${service.id}`)).service;
    expect(registered.agent_public_key).to.match(/^04[0-9a-f]{128}$/);
    expect(registered.agent_supported_chains).to.deep.equal(["arc"]);

    // Changes: any field; the answer is the service as it is now.
    s.advanceClock(1_000);
    const changed = expectOk(await patch(service.id, { priceRaw: "2000000", active: false, serviceType: "a2a" })).service;
    expect(changed).to.deep.include({ price_raw: "2000000", active: false, service_type: "a2a", name: "Contract risk review" });
    expect(changed.updated_at).to.be.greaterThan(service.updated_at);
    expect(expectOk(await s.call<ServiceList>("GET", "/api/v1/marketplace/services")).total).to.equal(0);
    expectOk(await patch(hidden.id, { active: true }));

    // Deleted: shown nowhere, changed no more; the row stays for the rentals it sold.
    expect(expectOk(await s.call("DELETE", `${servicesUrl()}/${hidden.id}`, { key: ownerKey }))).to.deep.equal({ id: hidden.id, deleted: true });
    expectError(await s.call("GET", `/api/v1/marketplace/services/${hidden.id}`), "SERVICE_NOT_FOUND");
    expectError(await patch(hidden.id, { active: true }), "SERVICE_NOT_FOUND");
    expectError(await s.call("DELETE", `${servicesUrl()}/${hidden.id}`, { key: ownerKey }), "SERVICE_NOT_FOUND");
    expect(expectOk(await s.call<ServiceList>("GET", servicesUrl(), { key: ownerKey })).services.map((x) => x.id)).to.deep.equal([service.id]);
    expect((await s.db.selectFrom("services").select("deleted_at").where("id", "=", hidden.id).executeTakeFirstOrThrow()).deleted_at).to.be.a(
      "number",
    );
    expectError(await s.call("GET", "/api/v1/marketplace/services/999999"), "SERVICE_NOT_FOUND");
  });

  it("refuses bad fields with VALIDATION_FAILED naming the field, and stores nothing", async function () {
    const base = { name: "Contract risk review", priceRaw: "1000", serviceType: "api" };
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ["a name of 4 characters", { ...base, name: "Four" }, "body.name"],
      ["a name of 61 characters", { ...base, name: "n".repeat(61) }, "body.name"],
      ["a name on two lines", { ...base, name: "Contract\nreview" }, "body.name"],
      ["a name with a control character", { ...base, name: "Contract\u0007review" }, "body.name"],
      ["a description of 2,001 characters", { ...base, description: "d".repeat(2_001) }, "body.description"],
      ["a description with a control character", { ...base, description: "Plain\u001btext" }, "body.description"],
      ["a price of 0", { ...base, priceRaw: "0" }, "body.priceRaw"],
      ["a price the escrow cannot hold", { ...base, priceRaw: (1n << 96n).toString() }, "body.priceRaw"],
      ["a price that is not a whole number", { ...base, priceRaw: "1.5" }, "body.priceRaw"],
      ["a type other than api or a2a", { ...base, serviceType: "rpc" }, "body.serviceType"],
      ["no name", { priceRaw: "1000", serviceType: "api" }, "body.name"],
      ["an unknown field", { ...base, target: s.worker.address }, "body"],
    ];
    for (const [what, body, field] of cases) {
      const answer = await create(body);
      expectError(answer, "VALIDATION_FAILED");
      expect(answer.body.error.details?.[0]?.field, what).to.match(new RegExp(`^${field.replace(".", "\\.")}`));
    }
    // Exactly at the limits: accepted (characters, not UTF-16 units: 60 emoji are 60 characters).
    await createOk({ name: "Fives" });
    await createOk({ name: "😀".repeat(60), description: "é".repeat(2_000) });
    const service = await createOk();
    expectError(await patch(service.id, {}), "VALIDATION_FAILED");
    expectError(await patch(service.id, { priceRaw: "0" }), "VALIDATION_FAILED");
    expect(await s.db.selectFrom("services").select("id").execute()).to.have.length(3);
    expect(expectOk(await s.call<{ service: ServiceView }>("GET", `/api/v1/marketplace/services/${service.id}`)).service.price_raw).to.equal(
      PRICE.toString(),
    );
  });

  it("answers another account NOT_AGENT_OWNER, no key AUTH_REQUIRED, the agent's own token HOSTED_AGENT_TOKEN_REFUSED, and unknown ids", async function () {
    const service = await createOk();
    const { token } = await registerHostedAgent();
    const routes: Array<["GET" | "POST" | "PATCH" | "DELETE", string, unknown?]> = [
      ["GET", servicesUrl()],
      ["POST", servicesUrl(), { name: "Another service", priceRaw: "10", serviceType: "api" }],
      ["PATCH", `${servicesUrl()}/${service.id}`, { priceRaw: "1" }],
      ["DELETE", `${servicesUrl()}/${service.id}`],
    ];
    for (const [method, url, body] of routes) {
      const payload = body === undefined ? {} : { body };
      expectError(await s.call(method, url, { key: posterKey, ...payload }), "NOT_AGENT_OWNER");
      expectError(await s.call(method, url, payload), "AUTH_REQUIRED");
      expectError(await s.call(method, url, { key: token, ...payload }), "HOSTED_AGENT_TOKEN_REFUSED");
      expectError(await s.call(method, url.replace(`/agents/${agent.id}/`, "/agents/999/"), { key: ownerKey, ...payload }), "HOSTED_AGENT_NOT_FOUND");
    }
    // A service of another agent under this agent's path: not found there.
    const other = await s.deployHostedAgent(s.stranger, ownerKey, { displayName: "Second agent" });
    expectError(
      await s.call("PATCH", `/api/v1/agents/${other.id}/services/${service.id}`, { key: ownerKey, body: { priceRaw: "1" } }),
      "SERVICE_NOT_FOUND",
    );
    // Nothing changed.
    const now = expectOk(await s.call<{ service: ServiceView }>("GET", `/api/v1/marketplace/services/${service.id}`)).service;
    expect(now).to.deep.include({ price_raw: PRICE.toString(), active: true });
    expect(await s.db.selectFrom("services").select("id").execute()).to.have.length(1);
  });

  it("caps services per agent (SERVICE_QUOTA_EXCEEDED) and changes per account per hour (RATE_LIMITED)", async function () {
    const ids: number[] = [];
    for (let i = 0; i < 20; i++) ids.push((await createOk({ name: `Service number ${i}` })).id);
    expectError(await create({ name: "One too many", priceRaw: "1", serviceType: "api" }), "SERVICE_QUOTA_EXCEEDED");
    // Deleting one frees a place.
    expectOk(await s.call("DELETE", `${servicesUrl()}/${ids[0]}`, { key: ownerKey }));
    const replacement = await createOk({ name: "Replacement service" });
    // 23 writes so far (21 creates tried, 1 delete, 1 create): 37 more are allowed this hour, then RATE_LIMITED.
    for (let i = 0; i < 37; i++) expectOk(await patch(replacement.id, { priceRaw: String(1000 + i) }));
    const limited = await patch(replacement.id, { priceRaw: "5" });
    expectError(limited, "RATE_LIMITED");
    expect(expectOk(await s.call<{ service: ServiceView }>("GET", `/api/v1/marketplace/services/${replacement.id}`)).service.price_raw).to.equal(
      "1036",
    );
    // Reads are not writes; an hour later writes are allowed again.
    expectOk(await s.call("GET", servicesUrl(), { key: ownerKey }));
    s.advanceClock(60 * 60_000 + 1_000);
    expectOk(await patch(replacement.id, { priceRaw: "5" }));
  });

  describe("rental listing checks", function () {
    const brief = "Review the attached service agreement and list its risks.";
    const rental = (serviceId: number, extra: Record<string, unknown> = {}) => ({
      taskHash: publicTaskHash(brief),
      privacy: "public",
      publicBrief: brief,
      verificationMode: "auto",
      verificationCriteria: { min_length: 20 },
      targetExecutorType: "agent",
      targetExecutor: agent.address,
      serviceId,
      ...extra,
    });
    const build = (fields: Record<string, unknown>, amount = PRICE) =>
      s.call<BuiltTask>("POST", "/api/v1/tasks", { key: posterKey, body: { ...fields, amount: amount.toString(), duration: 3600 } });
    const list = (fields: Record<string, unknown>, txHash: string) =>
      s.call("POST", "/api/v1/a2a/tasks/index", { key: posterKey, body: { ...fields, txHash } });

    it("refuses, when the funding is built, each rental the listing would refuse, with its code; nothing is paid", async function () {
      const service = await createOk();
      const start = await s.usdc.balanceOf(s.poster.address);
      expectError(await build(rental(service.id, { targetExecutor: undefined })), "SERVICE_REQUIRES_TARGET");
      // Before the agent ever started it is registered nowhere: a rental of it could never be taken.
      expectError(await build(rental(service.id)), "TARGET_CHAIN_UNSUPPORTED");

      const { register } = await registerHostedAgent({ minReward: (PRICE * 10n).toString() });
      const deleted = await createOk({ name: "Deleted service" });
      expectOk(await s.call("DELETE", `${servicesUrl()}/${deleted.id}`, { key: ownerKey }));
      const inactive = await createOk({ name: "Inactive service", active: false });
      const worker = await s.call("GET", `/api/v1/a2a/executors/${s.worker.address}`);
      expect(worker.status).to.equal(200);
      const cases: Array<[string, Record<string, unknown>, ErrorCode, bigint?]> = [
        ["an unknown service", rental(987_654), "SERVICE_NOT_FOUND"],
        ["a deleted service", rental(deleted.id), "SERVICE_NOT_FOUND"],
        ["another agent's service", rental(service.id, { targetExecutor: s.worker.address }), "SERVICE_AGENT_MISMATCH"],
        ["a deactivated service", rental(inactive.id), "SERVICE_NOT_ACTIVE"],
        ["an escrow below the price", rental(service.id), "UNDERPAID", PRICE - 1n],
        ["a token other than the settlement token", rental(service.id, { token: s.stranger.address }), "TOKEN_NOT_SETTLEMENT"],
      ];
      for (const [what, fields, code, amount] of cases) {
        const answer = await build(fields, amount);
        expect(answer.body.error?.code, what).to.equal(code);
        expectError(answer, code);
      }
      // A rental is auto-verified with exactly the rental criteria, for one hour: a poster judging it (manual), naming
      // its verifier (agent) or asking more could fail it at will, read the output and take the price back.
      const terms: Array<[string, Record<string, unknown>, string[], number?]> = [
        [
          "manual verification",
          rental(service.id, { verificationMode: "manual", verificationCriteria: undefined }),
          ["body.verificationMode", "body.verificationCriteria"],
        ],
        [
          "the poster's own verifier",
          rental(service.id, { verificationMode: "agent", verifierAddress: s.worker.address }),
          ["body.verificationMode"],
        ],
        [
          "stricter criteria",
          rental(service.id, { verificationCriteria: { min_length: 20, contains_keywords: ["zebra-unicorn"] } }),
          ["body.verificationCriteria"],
        ],
        ["a longer minimum", rental(service.id, { verificationCriteria: { min_length: 200 } }), ["body.verificationCriteria"]],
        ["a longer deadline", rental(service.id), ["body.duration"], 7_200],
      ];
      for (const [what, fields, fieldsNamed, duration] of terms) {
        const answer = await s.call<BuiltTask>("POST", "/api/v1/tasks", {
          key: posterKey,
          body: { ...fields, amount: PRICE.toString(), duration: duration ?? 3600 },
        });
        expectError(answer, "RENTAL_TERMS_MISMATCH");
        expect(
          answer.body.error.details?.map((d) => d.field),
          what,
        ).to.deep.equal(fieldsNamed);
      }
      // The price or more is accepted, and the agent's minReward (ten times the price) does not apply to a rental...
      expectOk(await build(rental(service.id)));
      expectOk(await build(rental(service.id), PRICE + 1n));
      // ...while it does to a task merely pinned to it.
      expectError(await build(rental(service.id, { serviceId: undefined })), "BELOW_MIN_REWARD");
      // An agent registered only on another chain.
      expectOk(await register({ publicKey: Wallet.createRandom().signingKey.publicKey, supportedChains: ["base"] }));
      expectError(await build(rental(service.id)), "TARGET_CHAIN_UNSUPPORTED");
      expect(await s.usdc.balanceOf(s.poster.address)).to.equal(start);
    });

    it("refuses the listing after funding when the service or its agent changed meanwhile; the poster cancels for an exact refund", async function () {
      const service = await createOk();
      const { register } = await registerHostedAgent();
      const escrowBefore = await s.usdc.balanceOf(s.escrowAddress);
      const posterBefore = await s.usdc.balanceOf(s.poster.address);

      /** Builds and funds a rental while the service takes it, changes things, then lists it: refused with `code`, then cancelled. */
      async function refusedAfterFunding(text: string, change: () => Promise<unknown>, code: ErrorCode, undo?: () => Promise<unknown>) {
        const fields = { ...rental(service.id), taskHash: publicTaskHash(text), publicBrief: text };
        const built = expectOk(await build(fields));
        const txHash = await s.sendAll(s.poster, built.transactions);
        await change();
        expectError(await list(fields, txHash), code);
        await s.sync();
        expectError(await s.call("GET", `/api/v1/tasks/${built.taskHash}`, { key: posterKey }), "TASK_NOT_FOUND");
        const held = await s.usdc.balanceOf(s.poster.address);
        await (await s.escrow.connect(s.poster).cancelTask(built.taskHash)).wait();
        expect(await s.usdc.balanceOf(s.poster.address)).to.equal(held + PRICE, `${code}: the whole price back`);
        await undo?.();
      }

      await refusedAfterFunding(
        "Rental one: deactivated meanwhile.",
        () => patch(service.id, { active: false }),
        "SERVICE_NOT_ACTIVE",
        () => patch(service.id, { active: true }),
      );
      await refusedAfterFunding(
        "Rental two: repriced meanwhile.",
        () => patch(service.id, { priceRaw: (PRICE + 1n).toString() }),
        "UNDERPAID",
        () => patch(service.id, { priceRaw: PRICE.toString() }),
      );
      await refusedAfterFunding(
        "Rental three: its agent left arc meanwhile.",
        () => register({ publicKey: Wallet.createRandom().signingKey.publicKey, supportedChains: ["base"] }),
        "TARGET_CHAIN_UNSUPPORTED",
        () => register({ publicKey: Wallet.createRandom().signingKey.publicKey, supportedChains: ["arc"] }),
      );
      await refusedAfterFunding(
        "Rental four: deleted meanwhile.",
        () => s.call("DELETE", `${servicesUrl()}/${service.id}`, { key: ownerKey }),
        "SERVICE_NOT_FOUND",
      );

      // A rental funded in another allowed token: the escrow token must be the settlement token.
      const other = await createOk({ name: "Token check service" });
      const token = await new BlocklistToken__factory(s.admin).deploy();
      await (await s.escrow.connect(s.admin).setAllowedToken(await token.getAddress(), true)).wait();
      await (await token.mint(s.poster.address, PRICE)).wait();
      await (await token.connect(s.poster).approve(s.escrowAddress, PRICE)).wait();
      const fields = { ...rental(other.id), taskHash: publicTaskHash("Rental five: another token."), publicBrief: "Rental five: another token." };
      const funded = await s.escrow.connect(s.poster).createTask(fields.taskHash, await token.getAddress(), PRICE, 3_600n, hre.ethers.ZeroAddress);
      await funded.wait();
      expectError(await list(fields, funded.hash), "TOKEN_NOT_SETTLEMENT");

      // A rental funded straight on chain (no build) as another kind of task: judged by its poster, or for two hours.
      for (const [text, changed, duration] of [
        ["Rental seven: judged by its poster.", { verificationMode: "manual", verificationCriteria: undefined }, 3_600n],
        ["Rental eight: two hours.", {}, 7_200n],
      ] as const) {
        const direct = { ...rental(other.id), taskHash: publicTaskHash(text), publicBrief: text, ...changed };
        await (await s.usdc.connect(s.poster).approve(s.escrowAddress, PRICE)).wait();
        const sent = await s.escrow.connect(s.poster).createTask(direct.taskHash, s.token, PRICE, duration, hre.ethers.ZeroAddress);
        await sent.wait();
        expectError(await list(direct, sent.hash), "RENTAL_TERMS_MISMATCH");
        const held = await s.usdc.balanceOf(s.poster.address);
        await (await s.escrow.connect(s.poster).cancelTask(direct.taskHash)).wait();
        expect(await s.usdc.balanceOf(s.poster.address)).to.equal(held + PRICE, `${text}: the whole price back`);
      }

      // A rental listed at the price stays listed whatever the service does later (pinned), and lists again as it was.
      const kept = { ...rental(other.id), taskHash: publicTaskHash("Rental six: kept."), publicBrief: "Rental six: kept." };
      const built = expectOk(await build(kept));
      const txHash = await s.sendAll(s.poster, built.transactions);
      expect(expectOk(await list(kept, txHash))).to.deep.equal({ taskHash: built.taskHash, status: "listed" });
      expectOk(await patch(other.id, { priceRaw: (PRICE * 2n).toString(), active: false }));
      expect(expectOk(await list(kept, txHash))).to.deep.equal({ taskHash: built.taskHash, status: "already_listed" });
      await s.sync();
      const view = expectOk(
        await s.call<{ meta: { serviceId?: number; targetExecutor?: string; reward: { amount: string } } }>("GET", `/api/v1/tasks/${built.taskHash}`),
      );
      expect(view.meta).to.deep.include({ serviceId: other.id, targetExecutor: agent.address });
      expect(view.meta.reward.amount).to.equal(PRICE.toString());

      // Everything refused came back; only the listed rental is in escrow.
      expect(await s.usdc.balanceOf(s.poster.address)).to.equal(posterBefore - PRICE);
      expect(await s.usdc.balanceOf(s.escrowAddress)).to.equal(escrowBefore + PRICE);
    });
  });
});
