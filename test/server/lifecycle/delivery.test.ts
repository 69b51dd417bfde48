/**
 * Delivering a result: deliver, relay the evidence, rebroadcast it, finalize. Every refusal with its code and status,
 * the relay checks of the signed transaction, and the happy path of a relayed, dropped and rebroadcast evidence.
 */
import { expect } from "chai";
import hre from "hardhat";
import { Transaction } from "ethers";
import { privateKeyOf, type TestServer } from "../harness";
import { expectError, expectOk } from "../expect";
import { resultHash } from "@market/core/crypto";
import { DAY, Ending, EscrowStatus, FAILING, partiesAndStrangerServer, PASSING, steps, type Steps } from "./helpers";

describe("lifecycle: delivery", function () {
  let s: TestServer;
  let t: Steps;
  let agentKey: string;
  let posterKey: string;
  let strangerKey: string;

  beforeEach(async function () {
    ({
      server: s,
      seeded: { agentKey, posterKey, strangerKey },
    } = await partiesAndStrangerServer());
    t = steps(s);
  });
  afterEach(async function () {
    await s.close();
  });

  const post = () => t.postPublic(posterKey);
  const relay = (key: string, taskHash: string, signedTx: string) =>
    s.call<{ txHash: string }>("POST", `/api/v1/a2a/tasks/${taskHash}/evidence`, { key, body: { signedTx } });
  const rebroadcast = (key: string, taskHash: string) => s.call<{ txHash: string }>("POST", `/api/v1/a2a/tasks/${taskHash}/rebroadcast`, { key });
  const deliverAnswer = (key: string, taskHash: string, output = PASSING) =>
    s.call("POST", `/api/v1/a2a/tasks/${taskHash}/deliver`, { key, body: { output } });

  async function accepted() {
    const { taskHash } = await post();
    expectOk(await t.accept(agentKey, taskHash));
    return taskHash;
  }

  it("NOT_EXECUTOR: before any assignment, and for an agent other than the assigned one", async function () {
    const { taskHash } = await post();
    expectError(await deliverAnswer(agentKey, taskHash), "NOT_EXECUTOR");
    expectError(await t.finalize(agentKey, taskHash), "NOT_EXECUTOR");

    expectOk(await t.accept(agentKey, taskHash));
    const delivered = await t.deliver(agentKey, taskHash, PASSING);
    expectError(await deliverAnswer(strangerKey, taskHash), "NOT_EXECUTOR");
    expectError(await relay(strangerKey, taskHash, await t.signRaw(s.worker, delivered.unsignedTx)), "NOT_EXECUTOR");
    expectError(await rebroadcast(strangerKey, taskHash), "NOT_EXECUTOR");
    expectError(await t.finalize(strangerKey, taskHash), "NOT_EXECUTOR");
    expectError(await t.finalize(posterKey, taskHash), "NOT_EXECUTOR");
  });

  it("WRONG_STATE: finalize, relay or rebroadcast with nothing delivered; deliver after the task was verified", async function () {
    const taskHash = await accepted();
    const nothing = await t.finalize(agentKey, taskHash);
    expectError(nothing, "WRONG_STATE");
    expect((nothing.body.error as { reason?: string }).reason).to.equal("assigned");
    const stray = await t.signRaw(s.worker, {
      to: s.escrowAddress,
      data: s.escrow.interface.encodeFunctionData("submitEvidence", [taskHash, resultHash(PASSING)]),
    });
    expectError(await relay(agentKey, taskHash, stray), "WRONG_STATE");
    expectError(await rebroadcast(agentKey, taskHash), "WRONG_STATE");

    expect((await t.deliverAndFinalize(s.worker, agentKey, taskHash, PASSING)).status).to.equal("verified");
    const after = await deliverAnswer(agentKey, taskHash, `${PASSING} Again.`);
    expectError(after, "WRONG_STATE");
    expect((after.body.error as { reason?: string }).reason).to.equal("verified");
    await t.expectState(taskHash, "verified", EscrowStatus.Verified, Ending.VerificationPassed);
  });

  it("DEADLINE_PASSED: delivering after the deadline", async function () {
    const taskHash = await accepted();
    await t.travel(DAY);
    expectError(await deliverAnswer(agentKey, taskHash), "DEADLINE_PASSED");
    expect(await s.db.selectFrom("deliveries").selectAll().execute()).to.have.length(0);
  });

  it("NO_ATTEMPTS_LEFT: a fourth delivery after three failed rounds", async function () {
    const taskHash = await accepted();
    for (let round = 1; round <= 3; round++) {
      expect((await t.deliverAndFinalize(s.worker, agentKey, taskHash, `${FAILING} ${round}`)).status).to.equal("failed");
    }
    expectError(await deliverAnswer(agentKey, taskHash), "NO_ATTEMPTS_LEFT");
  });

  it("EVIDENCE_NOT_CONFIRMED: finalizing before the evidence transaction is sent", async function () {
    const taskHash = await accepted();
    const delivered = await t.deliver(agentKey, taskHash, PASSING);
    expect(delivered.round).to.equal(1);
    expect(delivered.resultHash).to.equal(resultHash(PASSING));
    expectError(await t.finalize(agentKey, taskHash), "EVIDENCE_NOT_CONFIRMED");
    expectError(await t.finalize(agentKey, taskHash, hre.ethers.id("no such transaction")), "EVIDENCE_NOT_CONFIRMED");
    await t.expectState(taskHash, "assigned", EscrowStatus.Assigned);

    // Once sent, the same delivery finalizes.
    await t.sign(s.worker, delivered.unsignedTx);
    expect(expectOk(await t.finalize(agentKey, taskHash)).status).to.equal("verified");
  });

  it("EVIDENCE_MISMATCH: a relayed transaction that is not exactly submitEvidence of the delivered output from the worker", async function () {
    const taskHash = await accepted();
    const delivered = await t.deliver(agentKey, taskHash, PASSING);
    const otherHash = {
      to: s.escrowAddress,
      data: s.escrow.interface.encodeFunctionData("submitEvidence", [taskHash, resultHash("another output")]),
    };

    expectError(await relay(agentKey, taskHash, await t.signRaw(s.worker, otherHash)), "EVIDENCE_MISMATCH");
    expectError(await relay(agentKey, taskHash, await t.signRaw(s.stranger, delivered.unsignedTx)), "EVIDENCE_MISMATCH");
    const wallet = new hre.ethers.Wallet(privateKeyOf(s.worker), hre.ethers.provider);
    const populated = await wallet.populateTransaction({ to: delivered.unsignedTx.to, data: delivered.unsignedTx.data, gasLimit: 300_000n });
    expectError(await relay(agentKey, taskHash, await wallet.signTransaction({ ...populated, chainId: 1n })), "EVIDENCE_MISMATCH");
    expectError(await relay(agentKey, taskHash, await t.signRaw(s.worker, { ...delivered.unsignedTx, to: s.token })), "EVIDENCE_MISMATCH");
    expectError(await relay(agentKey, taskHash, "0x1234"), "EVIDENCE_MISMATCH");

    // Nothing of that reached the chain.
    await s.sync();
    await t.expectState(taskHash, "assigned", EscrowStatus.Assigned);
    const stored = await s.db.selectFrom("deliveries").select(["evidence_tx", "evidence_raw"]).executeTakeFirstOrThrow();
    expect(stored).to.deep.equal({ evidence_tx: null, evidence_raw: null });
  });

  it("EVIDENCE_MISMATCH: evidence on chain for another output than the delivered one", async function () {
    const taskHash = await accepted();
    const first = await t.deliver(agentKey, taskHash, FAILING);
    await t.deliver(agentKey, taskHash, PASSING);
    // The worker sends the first delivery's transaction, though the second replaced it.
    const txHash = await t.sign(s.worker, first.unsignedTx);
    expectError(await t.finalize(agentKey, taskHash, txHash), "EVIDENCE_MISMATCH");
    await t.expectState(taskHash, "submitted", EscrowStatus.Submitted);
  });

  it("relays the worker's signed evidence, rebroadcasts it after the pool dropped it, and finalizes", async function () {
    const taskHash = await accepted();
    const delivered = await t.deliver(agentKey, taskHash, PASSING);
    expect(delivered.unsignedTx).to.deep.include({ from: s.worker.address, to: s.escrowAddress, value: "0" });
    const signedTx = await t.signRaw(s.worker, delivered.unsignedTx);
    const hash = Transaction.from(signedTx).hash!;

    await hre.network.provider.send("evm_setAutomine", [false]);
    try {
      expect(expectOk(await relay(agentKey, taskHash, signedTx)).txHash).to.equal(hash);
      expect(await hre.network.provider.send("hardhat_dropTransaction", [hash])).to.equal(true);
      expect(await hre.ethers.provider.getTransaction(hash)).to.equal(null);

      expect(expectOk(await rebroadcast(agentKey, taskHash)).txHash).to.equal(hash);
      expect(await hre.ethers.provider.getTransaction(hash)).to.not.equal(null);
      await hre.network.provider.send("hardhat_mine", ["0x1"]);
    } finally {
      await hre.network.provider.send("evm_setAutomine", [true]);
    }
    expect((await hre.ethers.provider.getTransactionReceipt(hash))?.status).to.equal(1);
    await s.sync();
    // Mined: rebroadcasting answers the same hash and sends nothing.
    expect(expectOk(await rebroadcast(agentKey, taskHash)).txHash).to.equal(hash);

    const finalized = expectOk(await t.finalize(agentKey, taskHash));
    expect(finalized).to.deep.include({ status: "verified", round: 1 });
    const stored = await s.db.selectFrom("deliveries").select(["evidence_tx", "evidence_raw"]).executeTakeFirstOrThrow();
    expect(stored).to.deep.equal({ evidence_tx: hash, evidence_raw: signedTx });
  });

  it("a worker that released the task leaves nothing behind: the next worker neither reads nor is paid for its stored output", async function () {
    const taskHash = await accepted();
    await t.deliver(agentKey, taskHash, PASSING);
    await t.settle(s.worker, agentKey, taskHash, "release", "reopen");
    expectOk(await t.accept(strangerKey, taskHash));

    const view = async (key: string) =>
      expectOk(await s.call<{ state: { resultData?: { output?: string } } }>("GET", `/api/v1/tasks/${taskHash}`, { key }));
    expect((await view(strangerKey)).state.resultData).to.equal(undefined);
    expect((await view(posterKey)).state.resultData).to.equal(undefined);
    expectError(await t.finalize(strangerKey, taskHash), "WRONG_STATE");

    // Evidence of the released worker's result, sent by the new worker: there is no delivery of its own to judge.
    const before = await s.usdc.balanceOf(s.stranger.address);
    const evidence = await s.escrow.connect(s.stranger).submitEvidence(taskHash, resultHash(PASSING));
    await evidence.wait();
    await s.sync();
    expectError(await t.finalize(strangerKey, taskHash, evidence.hash), "WRONG_STATE");
    expect(await s.usdc.balanceOf(s.stranger.address)).to.equal(before);
  });

  it("a worker that released the task: the next worker's own delivery of the same round replaces it and is judged", async function () {
    const taskHash = await accepted();
    await t.deliver(agentKey, taskHash, FAILING);
    await t.settle(s.worker, agentKey, taskHash, "release", "reopen");
    expectOk(await t.accept(strangerKey, taskHash));

    const txHash = await t.deliverOnChain(s.stranger, strangerKey, taskHash, PASSING);
    expect(expectOk(await t.finalize(strangerKey, taskHash, txHash))).to.deep.include({ status: "verified", round: 1 });
    const rows = await s.db.selectFrom("deliveries").select(["round", "agent_address", "output"]).execute();
    expect(rows).to.deep.equal([{ round: 1, agent_address: s.stranger.address, output: PASSING }]);
  });

  describe("a node that does not answer or refuses", function () {
    const provider = hre.ethers.provider as unknown as Record<string, unknown>;
    const down = () => Promise.reject(Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:8545"), { code: "NETWORK_ERROR" }));
    /** Runs `work` with the provider's `method` failing as a node that does not answer. */
    async function withNodeDown<T>(method: string, work: () => Promise<T>): Promise<T> {
      const original = provider[method];
      provider[method] = down;
      try {
        return await work();
      } finally {
        provider[method] = original;
      }
    }

    it("CHAIN_UNAVAILABLE (503) for accept, relay and rebroadcast, with nothing changed; each works once the node answers", async function () {
      const { taskHash } = await post();
      expectError(await withNodeDown("getFeeData", () => t.accept(agentKey, taskHash)), "CHAIN_UNAVAILABLE", 503);
      expect(await s.db.selectFrom("outbox").selectAll().execute()).to.have.length(0);
      expectOk(await t.accept(agentKey, taskHash));

      const signedTx = await t.signRaw(s.worker, (await t.deliver(agentKey, taskHash, PASSING)).unsignedTx);
      expectError(await withNodeDown("broadcastTransaction", () => relay(agentKey, taskHash, signedTx)), "CHAIN_UNAVAILABLE", 503);
      expect((await s.db.selectFrom("deliveries").select("evidence_tx").executeTakeFirstOrThrow()).evidence_tx).to.equal(null);
      expectOk(await relay(agentKey, taskHash, signedTx));

      expectError(await withNodeDown("getTransactionReceipt", () => rebroadcast(agentKey, taskHash)), "CHAIN_UNAVAILABLE", 503);
      expect(expectOk(await rebroadcast(agentKey, taskHash)).txHash).to.equal(Transaction.from(signedTx).hash);
    });

    it("TX_REJECTED (400) when the node refuses the signed evidence (too little gas), nothing recorded", async function () {
      const taskHash = await accepted();
      const delivered = await t.deliver(agentKey, taskHash, PASSING);
      const starved = await t.signRaw(s.worker, delivered.unsignedTx, { gasLimit: 21_000n });
      expectError(await relay(agentKey, taskHash, starved), "TX_REJECTED", 400);
      expect((await s.db.selectFrom("deliveries").select("evidence_tx").executeTakeFirstOrThrow()).evidence_tx).to.equal(null);
    });
  });

  it("a redelivery before the evidence replaces the output of the round", async function () {
    const taskHash = await accepted();
    const first = await t.deliver(agentKey, taskHash, FAILING);
    const second = await t.deliver(agentKey, taskHash, PASSING);
    expect([first.round, second.round]).to.deep.equal([1, 1]);
    expect(second.resultHash).to.equal(resultHash(PASSING));
    expect(second.unsignedTx.data).to.not.equal(first.unsignedTx.data);

    const txHash = await t.sign(s.worker, second.unsignedTx);
    const finalized = expectOk(await t.finalize(agentKey, taskHash, txHash));
    expect(finalized).to.deep.include({ status: "verified", round: 1 });
    const rows = await s.db.selectFrom("deliveries").select(["round", "output", "result_hash"]).execute();
    expect(rows).to.deep.equal([{ round: 1, output: PASSING, result_hash: resultHash(PASSING) }]);
  });
});
