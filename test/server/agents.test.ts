/**
 * Agent registration and the executor directory: identity from authentication, the public key checked against the
 * wallet, full replacement on re-registration with counters kept, and the capability and chain filters.
 */
import { expect } from "chai";
import { Wallet } from "ethers";
import type { HardhatEthersSigner } from "@nomicfoundation/hardhat-ethers/signers";
import { privateKeyOf, startTestServer, type Answer, type TestServer } from "./harness";
import type { AgentProfile } from "../../server/agents";
import { publicKeyFromPrivateKey } from "@market/core/crypto";

function expectError(answer: Answer, status: number, code: string) {
  expect(answer.body.error?.code, JSON.stringify(answer.body)).to.equal(code);
  expect(answer.status).to.equal(status);
}

const publicKeyOf = (signer: HardhatEthersSigner) => publicKeyFromPrivateKey(privateKeyOf(signer));

describe("server: agents", function () {
  let s: TestServer;
  beforeEach(async function () {
    s = await startTestServer();
  });
  afterEach(async function () {
    await s.close();
  });

  const register = (key: string, body: Record<string, unknown>) => s.call<{ profile: AgentProfile }>("POST", "/api/v1/a2a/register", { key, body });
  const executors = (query = "") => s.call<{ executors: AgentProfile[]; total: number }>("GET", `/api/v1/a2a/executors${query}`);
  const agentCount = async () => (await s.db.selectFrom("agents").selectAll().execute()).length;
  /** Earned counters, as the reputation projection would have written them. */
  const setCounters = (address: string, c: { reputation: number; tasksCompleted: number; earnings: string }) =>
    s.db
      .insertInto("reputation")
      .values({
        address,
        reputation: c.reputation,
        tasks_completed: c.tasksCompleted,
        earnings: c.earnings,
        failed_rounds: 0,
        disputes: 0,
        disputes_lost: 0,
        raw_score: 0,
        last_settled_at: null,
      })
      .onConflict((oc) => oc.column("address").doUpdateSet({ reputation: c.reputation, tasks_completed: c.tasksCompleted, earnings: c.earnings }))
      .execute();

  describe("POST /api/v1/a2a/register", function () {
    it("registers the key's wallet with its profile; reputation starts at 50", async function () {
      const key = await s.apiKeyFor(s.worker);
      const answer = await register(key, {
        publicKey: `0x${publicKeyOf(s.worker)}`,
        capabilities: ["translation", " WEB_RESEARCH ", "translation"],
        supportedChains: ["arc", "base"],
        displayName: "Worker One",
        minReward: "2500000",
      });
      expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
      const profile = answer.body.data.profile;
      expect(profile).to.deep.include({
        address: s.worker.address,
        publicKey: publicKeyOf(s.worker),
        displayName: "Worker One",
        capabilities: ["translation", "web_research"],
        supportedChains: ["arc", "base"],
        minReward: "2500000",
        reputation: 50,
        tasksCompleted: 0,
        earnings: "0",
      });
      expect(profile.publicKey).to.match(/^04[0-9a-f]{128}$/);
      expect(profile.registeredAt).to.be.closeTo(Date.now(), 60_000);
      const tags = await s.db.selectFrom("agent_capabilities").select("tag").where("agent_address", "=", s.worker.address).orderBy("tag").execute();
      expect(tags.map((t) => t.tag)).to.deep.equal(["translation", "web_research"]);
    });

    it("takes the address from authentication, never from the body (a session works too)", async function () {
      const key = await s.apiKeyFor(s.worker);
      const withAddress = await register(key, { address: s.stranger.address, capabilities: [] });
      expectError(withAddress, 400, "VALIDATION_FAILED");
      expect(withAddress.body.error.details?.[0]?.field).to.equal("body.address");
      expect(await agentCount()).to.equal(0);

      const nonce = await s.call<{ message: string }>("POST", "/api/v1/auth/nonce", { body: { address: s.stranger.address } });
      const session = await s.call<{ token: string }>("POST", "/api/v1/auth/verify", {
        body: { message: nonce.body.data.message, signature: await s.stranger.signMessage(nonce.body.data.message) },
      });
      const viaSession = await s.call<{ profile: AgentProfile }>("POST", "/api/v1/a2a/register", {
        body: { capabilities: ["testing"] },
        headers: { authorization: `Bearer ${session.body.data.token}` },
      });
      expect(viaSession.status).to.equal(200);
      expect(viaSession.body.data.profile.address).to.equal(s.stranger.address);
      expectError(await s.call("POST", "/api/v1/a2a/register", { body: {} }), 401, "AUTH_REQUIRED");
    });

    it("records a public key that is not the wallet's own as given (clients raise OWNER_MISMATCH before sending)", async function () {
      // Spec: without a private key the SDK generates a wallet and registers its key under the API key's wallet, so
      // the server cannot insist on the wallet's own key; `createAgent({ privateKey })` refuses a mismatch itself.
      const key = await s.apiKeyFor(s.worker);
      const readerKey = publicKeyFromPrivateKey(Wallet.createRandom().privateKey);
      const answer = await register(key, { publicKey: readerKey, capabilities: ["testing"] });
      expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
      expect(answer.body.data.profile).to.include({ address: s.worker.address, publicKey: readerKey });
      expect(await agentCount()).to.equal(1);
    });

    it("INVALID_PUBLIC_KEY for a well-shaped key that is not a curve point; VALIDATION_FAILED for other shapes", async function () {
      const key = await s.apiKeyFor(s.worker);
      for (const publicKey of [`04${"00".repeat(64)}`, `04${"ff".repeat(64)}`, `04${"12".repeat(64)}`]) {
        expectError(await register(key, { publicKey }), 400, "INVALID_PUBLIC_KEY");
      }
      for (const publicKey of [publicKeyOf(s.worker).slice(2), `02${publicKeyOf(s.worker).slice(2, 66)}`, `${publicKeyOf(s.worker)}00`, "", 42]) {
        const answer = await register(key, { publicKey });
        expectError(answer, 400, "VALIDATION_FAILED");
        expect(answer.body.error.details?.[0]?.field).to.equal("body.publicKey");
      }
      expect(await agentCount()).to.equal(0);
    });

    it("VALIDATION_FAILED for a malformed capability tag, an unknown chain or an out-of-range minReward, naming the field", async function () {
      const key = await s.apiKeyFor(s.worker);
      const tag = await register(key, { capabilities: ["web_research", "tele portation"] });
      expectError(tag, 400, "VALIDATION_FAILED");
      expect(tag.body.error.details?.[0]?.field).to.equal("body.capabilities");
      expect(tag.body.error.message).to.include("tele portation");
      const chain = await register(key, { supportedChains: ["arc", "solana"] });
      expectError(chain, 400, "VALIDATION_FAILED");
      expect(chain.body.error.details?.[0]?.field).to.equal("body.supportedChains.1");
      for (const minReward of ["-1", "1.5", "1e6", 1000, "9".repeat(78)]) {
        const answer = await register(key, { minReward });
        expectError(answer, 400, "VALIDATION_FAILED");
        expect(answer.body.error.details?.[0]?.field).to.equal("body.minReward");
      }
      expect(await agentCount()).to.equal(0);
    });

    it("accepts a well-formed tag outside the 20 known ones, lower-cased, and finds the agent by it", async function () {
      const key = await s.apiKeyFor(s.worker);
      const answer = await register(key, {
        publicKey: publicKeyOf(s.worker),
        capabilities: ["web_research", "Legal_Review"],
        supportedChains: ["arc"],
      });
      expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
      const found = await s.call<{ executors: Array<{ address: string; capabilities: string[] }> }>(
        "GET",
        "/api/v1/a2a/executors?chain=arc&capabilities=legal_review",
      );
      expect(found.status).to.equal(200);
      expect(found.body.data.executors.map((e) => e.address)).to.deep.equal([s.worker.address]);
      expect(found.body.data.executors[0]!.capabilities).to.include("legal_review");
    });

    it("registering again replaces every field (omitted ones cleared) and keeps the counters", async function () {
      const key = await s.apiKeyFor(s.worker);
      const first = await register(key, {
        publicKey: publicKeyOf(s.worker),
        capabilities: ["web_research", "translation"],
        supportedChains: ["arc"],
        displayName: "First",
        minReward: "1000",
      });
      expect(first.status).to.equal(200);
      await setCounters(s.worker.address, { reputation: 77, tasksCompleted: 5, earnings: "123456789" });

      s.advanceClock(5_000);
      const otherKey = await s.apiKeyFor(s.worker, "second key");
      const again = await register(otherKey, { capabilities: ["summarization"] });
      expect(again.status).to.equal(200);
      expect(again.body.data.profile).to.deep.equal({
        address: s.worker.address,
        publicKey: null,
        displayName: null,
        capabilities: ["summarization"],
        supportedChains: null,
        minReward: null,
        reputation: 77,
        tasksCompleted: 5,
        earnings: "123456789",
        registeredAt: first.body.data.profile.registeredAt,
      });
      const tags = await s.db.selectFrom("agent_capabilities").select("tag").where("agent_address", "=", s.worker.address).execute();
      expect(tags.map((t) => t.tag)).to.deep.equal(["summarization"]);
      const row = await s.db.selectFrom("agents").selectAll().where("address", "=", s.worker.address).executeTakeFirstOrThrow();
      expect(row.updated_at).to.be.above(row.registered_at);
      expect(await agentCount()).to.equal(1);

      // And the directory shows the replaced record.
      const listed = await s.call<{ profile: AgentProfile }>("GET", `/api/v1/a2a/executors/${s.worker.address}`);
      expect(listed.body.data.profile).to.deep.equal(again.body.data.profile);
    });
  });

  describe("GET /api/v1/a2a/executors", function () {
    /** worker: arc with key; stranger: no chains recorded (base only) with key; agentVerifier: arc, no key; admin: 0g with key. */
    beforeEach(async function () {
      const rows: Array<[HardhatEthersSigner, Record<string, unknown>]> = [
        [s.worker, { publicKey: publicKeyOf(s.worker), capabilities: ["web_research", "translation"], supportedChains: ["arc"] }],
        [s.stranger, { publicKey: publicKeyOf(s.stranger), capabilities: ["web_research"] }],
        [s.agentVerifier, { capabilities: ["translation", "web_research"], supportedChains: ["arc", "base"] }],
        [s.admin, { publicKey: publicKeyOf(s.admin), capabilities: ["code_review"], supportedChains: ["0g"] }],
      ];
      for (const [signer, body] of rows) expect((await register(await s.apiKeyFor(signer), body)).status).to.equal(200);
      await setCounters(s.admin.address, { reputation: 90, tasksCompleted: 3, earnings: "0" });
    });
    const addressesOf = (answer: Answer<{ executors: AgentProfile[]; total: number }>) => {
      expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
      expect(answer.body.data.total).to.equal(answer.body.data.executors.length);
      return answer.body.data.executors.map((e) => e.address);
    };

    it("lists every agent without filters, best reputation first", async function () {
      const all = addressesOf(await executors());
      expect(all).to.have.length(4);
      expect(all[0]).to.equal(s.admin.address);
      expect(addressesOf(await executors("?limit=2"))).to.have.length(2);
    });

    it("capabilities: only agents holding every tag", async function () {
      expect(addressesOf(await executors("?capabilities=web_research"))).to.have.members([
        s.worker.address,
        s.stranger.address,
        s.agentVerifier.address,
      ]);
      expect(addressesOf(await executors("?capabilities=web_research,translation"))).to.have.members([s.worker.address, s.agentVerifier.address]);
      expect(addressesOf(await executors("?capabilities=TRANSLATION,%20web_research"))).to.have.members([s.worker.address, s.agentVerifier.address]);
      expect(addressesOf(await executors("?capabilities=code_review,translation"))).to.deep.equal([]);
      expect(addressesOf(await executors("?capabilities="))).to.have.length(4);
    });

    it("chain: agents with a public key on that chain; no chains recorded counts as base only", async function () {
      expect(addressesOf(await executors("?chain=arc"))).to.deep.equal([s.worker.address]);
      expect(addressesOf(await executors("?chain=base"))).to.deep.equal([s.stranger.address]);
      expect(addressesOf(await executors("?chain=0g"))).to.deep.equal([s.admin.address]);
      expect(addressesOf(await executors("?chain=arc&capabilities=translation"))).to.deep.equal([s.worker.address]);
      expect(addressesOf(await executors("?chain=base&capabilities=web_research"))).to.deep.equal([s.stranger.address]);
      expect(addressesOf(await executors("?chain=arc&capabilities=code_review"))).to.deep.equal([]);
    });

    it("refuses malformed tags, unknown chains and parameters (VALIDATION_FAILED naming the query field)", async function () {
      for (const [query, field] of [
        ["?capabilities=tele%20portation", "query.capabilities"],
        ["?chain=solana", "query.chain"],
        ["?chain=ARC", "query.chain"],
        ["?limit=-1", "query.limit"],
        ["?limit=many", "query.limit"],
        ["?owner=me", "query.owner"],
      ]) {
        const answer = await executors(query);
        expectError(answer, 400, "VALIDATION_FAILED");
        expect(answer.body.error.details?.[0]?.field, query).to.equal(field);
      }
    });
  });

  describe("GET /api/v1/a2a/executors/:address", function () {
    it("answers one agent by address in any valid spelling", async function () {
      await s.registerAgent(s.worker, ["testing"]);
      for (const spelling of [s.worker.address, s.worker.address.toLowerCase(), `0x${s.worker.address.slice(2).toUpperCase()}`]) {
        const answer = await s.call<{ profile: AgentProfile }>("GET", `/api/v1/a2a/executors/${spelling}`);
        expect(answer.status, spelling).to.equal(200);
        expect(answer.body.data.profile.address).to.equal(s.worker.address);
        expect(answer.body.data.profile.capabilities).to.deep.equal(["testing"]);
      }
    });

    it("INVALID_ADDRESS (400) for a malformed address, EXECUTOR_NOT_FOUND (404) for an unregistered one", async function () {
      await s.registerAgent(s.worker);
      const flipped = `0x${[...s.worker.address.slice(2)].map((c) => (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase())).join("")}`;
      for (const bad of ["0x123", "worker", `${s.worker.address}00`, s.worker.address.slice(2), flipped, "0x" + "z".repeat(40), "%00"]) {
        expectError(await s.call("GET", `/api/v1/a2a/executors/${bad}`), 400, "INVALID_ADDRESS");
      }
      expectError(await s.call("GET", `/api/v1/a2a/executors/${s.stranger.address}`), 404, "EXECUTOR_NOT_FOUND");
      expectError(await s.call("GET", `/api/v1/a2a/executors/${Wallet.createRandom().address}`), 404, "EXECUTOR_NOT_FOUND");
    });
  });
});
