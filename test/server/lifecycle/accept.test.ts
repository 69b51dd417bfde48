/**
 * Taking a task: every accept refusal with its code and status, custody re-wraps, exclusive offers, the accept lock,
 * concurrent accepts, accepting again, and handing a task back.
 */
import { expect } from "chai";
import hre from "hardhat";
import { time } from "@nomicfoundation/hardhat-network-helpers";
import { privateKeyOf, serverFixture, startTestServer, type TestServer, type TestServerOptions } from "../harness";
import { ACCEPT_LOCK_TTL_MS } from "../../../server/marketplace/accept";
import { expectError, expectOk } from "../expect";
import { decryptBrief, publicKeyFromPrivateKey, unwrapBriefKey, wrapBriefKey } from "@market/core/crypto";
import { AMOUNT, brief, CRITERIA, DAY, EscrowStatus, PASSING, steps, type Steps } from "./helpers";

/** The poster's API key, for the tests on the default server. */
const posterServer = serverFixture(async (s) => ({ posterKey: await s.apiKeyFor(s.poster) }));

describe("lifecycle: accept", function () {
  let s: TestServer | undefined;
  let t: Steps;
  let posterKey: string;

  /** The default server from its snapshot; with options, a server of its own. */
  async function boot(options?: TestServerOptions) {
    if (options) {
      s = await startTestServer(options);
      posterKey = await s.apiKeyFor(s.poster);
    } else {
      ({
        server: s,
        seeded: { posterKey },
      } = await posterServer());
    }
    // The API clock follows chain time from the start: offers expire on it. A fresh block first, since the chain's
    // next timestamp may jump ahead (earlier tests moved its clock) and would otherwise end a window at once.
    await hre.network.provider.send("evm_mine", []);
    await s.sync();
    t = steps(s);
    return s;
  }
  afterEach(async function () {
    await s?.close();
    s = undefined;
  });

  const postPublic = (server: TestServer, extra: Record<string, unknown> = {}) =>
    server.post(server.poster, posterKey, server.publicTask(brief(), extra), AMOUNT);
  const assignedOnChain = async (server: TestServer, taskHash: string) => server.escrow.queryFilter(server.escrow.filters.WorkerAssigned(taskHash));

  describe("refusals", function () {
    it("AGENT_NOT_REGISTERED: a wallet with a key but no agent record", async function () {
      const server = await boot();
      const { taskHash } = await postPublic(server);
      const strangerKey = await server.apiKeyFor(server.stranger);
      expectError(await t.accept(strangerKey, taskHash), "AGENT_NOT_REGISTERED");
    });

    it("TASK_NOT_FOUND for an unknown hash; TASK_ID_NOT_SUPPORTED for a numeric id", async function () {
      const server = await boot();
      const agentKey = await server.registerAgent(server.worker);
      expectError(await t.accept(agentKey, hre.ethers.id("never listed")), "TASK_NOT_FOUND");
      expectError(await t.accept(agentKey, "5"), "TASK_ID_NOT_SUPPORTED");
    });

    it("NOT_OPEN: taken by another agent, cancelled, past its deadline", async function () {
      const server = await boot();
      const agentKey = await server.registerAgent(server.worker);
      const otherKey = await server.registerAgent(server.stranger);

      const taken = await postPublic(server);
      expectOk(await t.accept(agentKey, taken.taskHash));
      expectError(await t.accept(otherKey, taken.taskHash), "NOT_OPEN");

      const cancelled = await postPublic(server);
      await t.settle(server.poster, posterKey, cancelled.taskHash, "cancel", "refund");
      expectError(await t.accept(otherKey, cancelled.taskHash), "NOT_OPEN");

      const expired = await postPublic(server);
      await t.travel(DAY);
      expect(await t.status(expired.taskHash)).to.equal("expired");
      expectError(await t.accept(otherKey, expired.taskHash), "NOT_OPEN");
      expect(await assignedOnChain(server, expired.taskHash)).to.have.length(0);
    });

    it("NOT_TARGET_EXECUTOR: the task is pinned to another agent", async function () {
      const server = await boot();
      await server.registerAgent(server.worker);
      const otherKey = await server.registerAgent(server.stranger);
      const { taskHash } = await postPublic(server, { targetExecutor: server.worker.address });
      expectError(await t.accept(otherKey, taskHash), "NOT_TARGET_EXECUTOR");
    });

    it("OWN_TASK: the poster registered as an agent, and a hosted agent of the poster's account", async function () {
      const server = await boot();
      const posterAgentKey = await server.registerAgent(server.poster);
      const { taskHash } = await postPublic(server);
      expectError(await t.accept(posterAgentKey, taskHash), "OWN_TASK");

      // A hosted agent: its own wallet, registered under the poster's account.
      const hostedKey = await server.apiKeyFor(server.newAdmin);
      const account = await server.db
        .selectFrom("account_wallets")
        .select("account_id")
        .where("address", "=", server.poster.address)
        .executeTakeFirstOrThrow();
      const at = Date.now();
      await server.db
        .insertInto("agents")
        .values({
          address: server.newAdmin.address,
          account_id: account.account_id,
          public_key: publicKeyFromPrivateKey(privateKeyOf(server.newAdmin)),
          display_name: "hosted",
          min_reward: null,
          capabilities: "[]",
          supported_chains: JSON.stringify(["arc"]),
          registered_at: at,
          updated_at: at,
        })
        .execute();
      expectError(await t.accept(hostedKey, taskHash), "OWN_TASK");
      expect(await assignedOnChain(server, taskHash)).to.have.length(0);
    });

    it("VERIFIER_CANNOT_EXECUTE: the task's verifier agent tries to take it", async function () {
      const server = await boot();
      const verifierKey = await server.registerAgent(server.agentVerifier);
      const { taskHash } = await postPublic(server, {
        verificationMode: "agent",
        verificationCriteria: undefined,
        verifierAddress: server.agentVerifier.address,
      });
      expectError(await t.accept(verifierKey, taskHash), "VERIFIER_CANNOT_EXECUTE");
    });

    it("NO_PUBLIC_KEY: an agent registered without a public key", async function () {
      const server = await boot();
      const agentKey = await server.registerAgent(server.worker, [], { publicKey: undefined });
      const { taskHash } = await postPublic(server);
      expectError(await t.accept(agentKey, taskHash), "NO_PUBLIC_KEY");
    });

    it("CHAIN_UNSUPPORTED: an agent on base only, and one with no chains recorded (base only)", async function () {
      const server = await boot();
      const baseKey = await server.registerAgent(server.worker, [], { supportedChains: ["base"] });
      const legacyKey = await server.registerAgent(server.stranger, [], { supportedChains: undefined });
      const legacy = await server.db
        .selectFrom("agents")
        .select("supported_chains")
        .where("address", "=", server.stranger.address)
        .executeTakeFirstOrThrow();
      expect(legacy.supported_chains).to.equal(null);
      const { taskHash } = await postPublic(server);
      expectError(await t.accept(baseKey, taskHash), "CHAIN_UNSUPPORTED");
      expectError(await t.accept(legacyKey, taskHash), "CHAIN_UNSUPPORTED");
    });

    it("CAPABILITIES_MISSING: the task requires a tag the agent lacks", async function () {
      const server = await boot();
      const agentKey = await server.registerAgent(server.worker, ["summarization"]);
      const { taskHash } = await postPublic(server, { requiredCapabilities: ["summarization", "translation"] });
      expectError(await t.accept(agentKey, taskHash), "CAPABILITIES_MISSING");
    });

    it("BELOW_MIN_REWARD: an open task and a task pinned to the agent (only rentals ignore the minimum)", async function () {
      const server = await boot();
      const agentKey = await server.registerAgent(server.worker, [], { minReward: AMOUNT.toString() });
      // Posted while the reward met the minimum (posting a pinned task below it is refused), then the agent raised it.
      const pinned = await postPublic(server, { targetExecutor: server.worker.address });
      await server.registerAgent(server.worker, [], { minReward: (AMOUNT + 1n).toString() });
      const open = await postPublic(server);
      expectError(await t.accept(agentKey, open.taskHash), "BELOW_MIN_REWARD");
      expectError(await t.accept(agentKey, pinned.taskHash), "BELOW_MIN_REWARD");

      // At exactly the minimum the agent may take it.
      await server.registerAgent(server.worker, [], { minReward: AMOUNT.toString() });
      expectOk(await t.accept(agentKey, open.taskHash));
    });

    it("NEEDS_WRAP: a private brief not wrapped to the agent, without a custody copy", async function () {
      const server = await boot();
      await server.registerAgent(server.worker);
      const otherKey = await server.registerAgent(server.stranger);
      const { fields } = await server.privateTask(brief("A private brief."), [server.worker], posterKey);
      const { taskHash } = await server.post(server.poster, posterKey, fields, AMOUNT);
      expectError(await t.accept(otherKey, taskHash), "NEEDS_WRAP");
      expect(await assignedOnChain(server, taskHash)).to.have.length(0);
    });

    it("ACCEPT_IN_PROGRESS: another agent holds the accept lock", async function () {
      const server = await boot();
      await server.registerAgent(server.stranger);
      const agentKey = await server.registerAgent(server.worker);
      const { taskHash } = await postPublic(server);
      // The API clock: chain time once synced, or wall time while the chain is behind it (a fixture snapshot taken
      // minutes earlier in a long run).
      const at = Math.max(Date.now(), (await time.latest()) * 1000);
      await server.db
        .insertInto("assignments")
        .values({ task_hash: taskHash, agent_address: server.stranger.address, status: "accepting", outbox_id: null, created_at: at, updated_at: at })
        .execute();
      expectError(await t.accept(agentKey, taskHash), "ACCEPT_IN_PROGRESS");
      // An accept that died before recording its transaction does not hold the task for ever.
      server.advanceClock(ACCEPT_LOCK_TTL_MS);
      expect(expectOk(await t.accept(agentKey, taskHash)).worker).to.equal(server.worker.address);
      expect(await assignedOnChain(server, taskHash)).to.have.length(1);
    });

    it("VERIFIER_KEY_NOT_CONFIGURED: the service has no marketplace verifier key for the chain", async function () {
      const server = await boot({ withoutVerifierKey: true });
      const agentKey = await server.registerAgent(server.worker);
      const { taskHash } = await postPublic(server);
      expectError(await t.accept(agentKey, taskHash), "VERIFIER_KEY_NOT_CONFIGURED");
      expect(await server.db.selectFrom("assignments").selectAll().execute()).to.have.length(0);
    });
  });

  describe("custody copies", function () {
    const custodyKey = hre.ethers.Wallet.createRandom().privateKey;
    const custodyPublicKey = publicKeyFromPrivateKey(custodyKey);

    it("re-wraps the brief key from keyCustodyBlob at accept; the agent opens the brief with its own key", async function () {
      const server = await boot({ custodyKey });
      const agentKey = await server.registerAgent(server.worker);
      const text = brief("A private brief kept in custody.");
      const { fields, aesKey } = await server.privateTask(text, [], posterKey);
      const { taskHash } = await server.post(server.poster, posterKey, { ...fields, keyCustodyBlob: wrapBriefKey(aesKey, custodyPublicKey) }, AMOUNT);

      const settlement = expectOk(await server.call<{ custodyPublicKey: string }>("GET", "/api/v1/health/settlement"));
      expect(settlement.custodyPublicKey).to.equal(custodyPublicKey);
      const accepted = expectOk(await t.accept(agentKey, taskHash));
      expect(accepted.brief.privacy).to.equal("private");
      const key = unwrapBriefKey(accepted.brief.wrappedKey!, privateKeyOf(server.worker));
      expect(Buffer.from(key).equals(Buffer.from(aesKey))).to.equal(true);
      const blob = expectOk(await server.call<{ data: string }>("GET", `/api/v1/storage/${accepted.brief.rootHash}`));
      expect(decryptBrief(new Uint8Array(Buffer.from(blob.data, "base64")), key)).to.equal(text);
    });

    it("NEEDS_WRAP when the custody key was rotated since the post", async function () {
      const server = await boot({ custodyKey });
      const agentKey = await server.registerAgent(server.worker);
      const { fields, aesKey } = await server.privateTask(brief("A private brief for the old custody key."), [], posterKey);
      const { taskHash } = await server.post(server.poster, posterKey, { ...fields, keyCustodyBlob: wrapBriefKey(aesKey, custodyPublicKey) }, AMOUNT);
      // The custody key rotated since: the listing's copy was wrapped to a key the service no longer holds.
      const oldCustody = publicKeyFromPrivateKey(hre.ethers.Wallet.createRandom().privateKey);
      await server.db
        .updateTable("listings")
        .set({ key_custody_blob: wrapBriefKey(aesKey, oldCustody) })
        .where("task_hash", "=", taskHash)
        .execute();
      expectError(await t.accept(agentKey, taskHash), "NEEDS_WRAP");
      expect(await server.db.selectFrom("task_keys").selectAll().where("task_hash", "=", taskHash).execute()).to.have.length(0);
      expect(await server.db.selectFrom("assignments").selectAll().execute()).to.have.length(0);
    });
  });

  describe("exclusive offers", function () {
    const WINDOW_MS = 60_000;

    /** Two eligible agents; the stranger has the higher decayed score and gets the offer. */
    async function offered() {
      const server = await boot({ offerWindowMs: WINDOW_MS });
      const workerKey = await server.registerAgent(server.worker);
      const strangerKey = await server.registerAgent(server.stranger);
      await server.db
        .insertInto("reputation")
        .values({
          address: server.stranger.address,
          reputation: 60,
          tasks_completed: 3,
          failed_rounds: 0,
          disputes: 0,
          disputes_lost: 0,
          earnings: "0",
          raw_score: 30,
          last_settled_at: await time.latest(),
        })
        .execute();
      const { taskHash } = await postPublic(server);
      const offer = await server.db.selectFrom("offers").selectAll().where("task_hash", "=", taskHash).execute();
      expect(offer.map((o) => o.agent_address)).to.deep.equal([server.stranger.address]);
      return { server, workerKey, strangerKey, taskHash };
    }

    it("OFFER_HELD for the lower-ranked agent, with retryAfterMs; open to it once the holder declines", async function () {
      const { workerKey, strangerKey, taskHash } = await offered();
      const held = await t.accept(workerKey, taskHash);
      expectError(held, "OFFER_HELD");
      const retryAfterMs = held.body.error.details?.[0]?.retryAfterMs as number;
      expect(retryAfterMs).to.be.a("number").within(1, WINDOW_MS);

      // Only the holder can decline its window: anyone else has no offer to decline (WRONG_STATE), and it stays held.
      const notHeld = await s!.call("POST", `/api/v1/a2a/tasks/${taskHash}/decline`, { key: workerKey });
      expectError(notHeld, "WRONG_STATE");
      expect((notHeld.body.error as { reason?: string }).reason).to.equal("no_offer");
      expectError(await t.accept(workerKey, taskHash), "OFFER_HELD");
      expect(expectOk(await s!.call<{ declined: boolean }>("POST", `/api/v1/a2a/tasks/${taskHash}/decline`, { key: strangerKey })).declined).to.equal(
        true,
      );
      expectError(await s!.call("POST", `/api/v1/a2a/tasks/${taskHash}/decline`, { key: strangerKey }), "WRONG_STATE");

      expect(expectOk(await t.accept(workerKey, taskHash)).worker).to.equal(s!.worker.address);
    });

    for (const badge of ["earned", "verified"] as const)
      it(`a badge for a required capability (${badge}) outranks a higher decayed score`, async function () {
        const server = await boot({ offerWindowMs: WINDOW_MS });
        const workerKey = await server.registerAgent(server.worker, ["summarization"]);
        const strangerKey = await server.registerAgent(server.stranger, ["summarization"]);
        const at = await time.latest();
        await server.db
          .insertInto("reputation")
          .values({
            address: server.stranger.address,
            reputation: 60,
            tasks_completed: 2,
            failed_rounds: 0,
            disputes: 0,
            disputes_lost: 0,
            earnings: "0",
            raw_score: 20,
            last_settled_at: at,
          })
          .execute();
        // 10 decayed points plus one badge (25) beat 20 decayed points.
        await server.db
          .insertInto("reputation")
          .values({
            address: server.worker.address,
            reputation: 55,
            tasks_completed: 5,
            failed_rounds: 0,
            disputes: 0,
            disputes_lost: 0,
            earnings: "0",
            raw_score: 20,
            last_settled_at: at - 8 * DAY,
          })
          .execute();
        if (badge === "earned")
          await server.db
            .insertInto("capability_stats")
            .values({ address: server.worker.address, tag: "summarization", completions: 5, failures: 0 })
            .execute();
        // Granted by the team (POST /api/v1/admin/badges): it ranks as an earned one does.
        else
          await server.db
            .insertInto("verified_badges")
            .values({ address: server.worker.address, kind: "tag", name: "summarization", granted_at: 1 })
            .execute();

        const { taskHash } = await postPublic(server, { requiredCapabilities: ["summarization"] });
        const offers = await server.db.selectFrom("offers").select(["agent_address", "rank"]).where("task_hash", "=", taskHash).execute();
        expect(offers).to.deep.equal([{ agent_address: server.worker.address, rank: 35 }]);
        expectError(await t.accept(strangerKey, taskHash), "OFFER_HELD");
        expectOk(await t.accept(workerKey, taskHash));

        // Without the capability among the task's requirements the badge counts for nothing.
        const plain = await postPublic(server);
        const plainOffers = await server.db.selectFrom("offers").select("agent_address").where("task_hash", "=", plain.taskHash).execute();
        expect(plainOffers.map((o) => o.agent_address)).to.deep.equal([server.stranger.address]);
      });

    it("the holder may accept inside its window; the other agent may once the window lapses", async function () {
      const { server, workerKey, strangerKey, taskHash } = await offered();
      const second = await postPublic(server);

      // The holder of the second task's offer takes it at once.
      expect(expectOk(await t.accept(strangerKey, second.taskHash)).worker).to.equal(server.stranger.address);

      const held = await t.accept(workerKey, taskHash);
      expectError(held, "OFFER_HELD");
      const retryAfterMs = held.body.error.details?.[0]?.retryAfterMs as number;
      server.advanceClock(retryAfterMs - 5_000);
      expectError(await t.accept(workerKey, taskHash), "OFFER_HELD");
      server.advanceClock(5_000);
      expect(expectOk(await t.accept(workerKey, taskHash)).worker).to.equal(server.worker.address);
    });
  });

  describe("assignment", function () {
    it("two agents accepting at once: exactly one is assigned, with one marketplaceAssign on chain", async function () {
      const server = await boot();
      const workerKey = await server.registerAgent(server.worker);
      const strangerKey = await server.registerAgent(server.stranger);
      const { taskHash } = await postPublic(server);

      const answers = await Promise.all([t.accept(workerKey, taskHash), t.accept(strangerKey, taskHash)]);
      const won = answers.filter((a) => a.status === 200);
      const lost = answers.filter((a) => a.status !== 200);
      expect(won).to.have.length(1);
      expect(lost).to.have.length(1);
      expect(["ACCEPT_IN_PROGRESS", "NOT_OPEN"]).to.include(lost[0]!.body.error.code);
      expectError(lost[0]!, lost[0]!.body.error.code as "ACCEPT_IN_PROGRESS" | "NOT_OPEN");

      const winner = won[0]!.body.data;
      const events = await assignedOnChain(server, taskHash);
      expect(events).to.have.length(1);
      expect(events[0]!.args.worker).to.equal(winner.worker);
      expect((await t.escrowRow(taskHash)).worker).to.equal(winner.worker);
      const sent = await server.db.selectFrom("outbox").select("purpose").where("purpose", "like", "assign:%").execute();
      expect(sent).to.have.length(1);
      const locks = await server.db.selectFrom("assignments").selectAll().execute();
      expect(locks.map((l) => [l.agent_address, l.status])).to.deep.equal([[winner.worker, "assigned"]]);
    });

    it("accepting again as the holder answers the same assignment without another transaction", async function () {
      const server = await boot();
      const agentKey = await server.registerAgent(server.worker);
      const { taskHash } = await postPublic(server);
      const first = expectOk(await t.accept(agentKey, taskHash));
      const again = expectOk(await t.accept(agentKey, taskHash));
      expect(again).to.deep.equal({ ...first, alreadyHeld: true });
      expect(first.assignTx).to.match(/^0x[0-9a-f]{64}$/);
      expect(await assignedOnChain(server, taskHash)).to.have.length(1);
      expect(await server.db.selectFrom("outbox").selectAll().execute()).to.have.length(1);
    });

    it("release: the worker signs releaseTask, the task is open again and another agent takes it", async function () {
      const server = await boot();
      const workerKey = await server.registerAgent(server.worker);
      const strangerKey = await server.registerAgent(server.stranger);
      const { taskHash } = await postPublic(server);
      expectOk(await t.accept(workerKey, taskHash));

      expectError(await t.action(strangerKey, taskHash, "release"), "NOT_EXECUTOR");
      const released = expectOk(await t.action(workerKey, taskHash, "release"));
      expect(released.outcome).to.equal("reopen");
      expect(released.unsignedTx).to.deep.include({ from: server.worker.address, to: server.escrowAddress, value: "0" });
      await t.sign(server.worker, released.unsignedTx);
      await t.expectState(taskHash, "open", EscrowStatus.Funded);

      expect(expectOk(await t.accept(strangerKey, taskHash)).worker).to.equal(server.stranger.address);
      await t.expectState(taskHash, "assigned", EscrowStatus.Assigned);
      expect((await t.escrowRow(taskHash)).worker).to.equal(server.stranger.address);
      expectError(await t.action(workerKey, taskHash, "release"), "NOT_EXECUTOR");
    });

    it("NOT_OPEN: the former worker accepting a task that has ended (verified), with nothing sent", async function () {
      const server = await boot();
      const agentKey = await server.registerAgent(server.worker);
      const { taskHash } = await postPublic(server, { verificationCriteria: CRITERIA });
      expectOk(await t.accept(agentKey, taskHash));
      const evidence = await t.deliverOnChain(server.worker, agentKey, taskHash, PASSING);
      expect(expectOk(await t.finalize(agentKey, taskHash, evidence)).status).to.equal("verified");
      const outbox = await server.db.selectFrom("outbox").selectAll().execute();

      expectError(await t.accept(agentKey, taskHash), "NOT_OPEN");
      expect(await server.db.selectFrom("outbox").selectAll().execute()).to.deep.equal(outbox);
    });

    it("the agent that released a task can accept it again: a new assignment is sent", async function () {
      const server = await boot();
      const agentKey = await server.registerAgent(server.worker);
      const { taskHash } = await postPublic(server);
      expectOk(await t.accept(agentKey, taskHash));
      await t.settle(server.worker, agentKey, taskHash, "release", "reopen");
      await t.expectState(taskHash, "open", EscrowStatus.Funded);

      expect(expectOk(await t.accept(agentKey, taskHash)).worker).to.equal(server.worker.address);
      await t.expectState(taskHash, "assigned", EscrowStatus.Assigned);
      expect(await assignedOnChain(server, taskHash)).to.have.length(2);
      const lock = await server.db.selectFrom("assignments").selectAll().where("task_hash", "=", taskHash).executeTakeFirstOrThrow();
      expect([lock.agent_address, lock.status]).to.deep.equal([server.worker.address, "assigned"]);
    });
  });
});
