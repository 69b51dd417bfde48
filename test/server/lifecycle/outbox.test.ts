/**
 * The verifier key's outbox: concurrent sends get unique consecutive nonces, a refused call costs none, one purpose
 * is sent once, a dropped transaction is broadcast again, a stuck one (or one the node refuses) is replaced with higher
 * fees, a restart broadcasts what was signed but never sent, once, before anything new; a nonce taken by another
 * transaction ends its entry as reverted; a failing entry or another key's entry holds up no other.
 */
import { expect } from "chai";
import hre from "hardhat";
import { Transaction, type Provider, type TransactionRequest } from "ethers";
import { privateKeyOf, startTestServer, type TestServer } from "../harness";
import { expectOk } from "../expect";
import { createChains, type Chain } from "../../../server/chains";
import { createOutbox, OutboxRevert, type OutboxOptions } from "../../../server/outbox";
import { STATE_GAS_MARGIN, withGasMargin } from "../../../sdk/src";
import { AMOUNT, assignCall, brief, fundedTasks, steps, verifierNonce, verifierOutbox } from "./helpers";

const send = (method: string, params: unknown[] = []) => hre.network.provider.send(method, params);

async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 10_000) {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe("lifecycle: the verifier key's outbox", function () {
  let s: TestServer;
  let chain: Chain;
  const outboxes: Array<{ stop(): Promise<void> }> = [];

  beforeEach(async function () {
    s = await startTestServer({ abuse: { assignmentCap: { base: 10, completionsPerSlot: 5, max: 25 } } });
    chain = createChains([s.chainConfig], { provider: () => hre.ethers.provider }).require("arc");
  });
  afterEach(async function () {
    await send("evm_setAutomine", [true]);
    for (const outbox of outboxes.splice(0)) await outbox.stop();
    await s.close();
  });

  function outbox(options: Partial<OutboxOptions> = {}) {
    const created = verifierOutbox(s, chain, options);
    outboxes.push(created);
    return created;
  }

  /** Every entry in the order it was recorded (a queued entry has no nonce or transaction yet). */
  const rows = async () =>
    (await s.db.selectFrom("outbox").selectAll().orderBy("id").execute()).map((r) => ({
      ...r,
      nonce: r.nonce!,
      tx_hash: r.tx_hash!,
      hashes: r.hashes!,
    }));

  function expectConsecutive(nonces: number[], from: number) {
    expect(nonces).to.deep.equal(Array.from({ length: nonces.length }, (_, i) => from + i));
  }

  it("10 concurrent accepts through the API: unique consecutive nonces, every assignment mined", async function () {
    const t = steps(s);
    const agentKey = await s.registerAgent(s.worker);
    const posterKey = await s.apiKeyFor(s.poster);
    const tasks: string[] = [];
    for (let i = 0; i < 10; i++) tasks.push((await s.post(s.poster, posterKey, s.publicTask(brief()), AMOUNT)).taskHash);
    const base = await verifierNonce(s);

    const answers = await Promise.all(tasks.map((taskHash) => t.accept(agentKey, taskHash)));
    for (const answer of answers) expect(expectOk(answer).worker).to.equal(s.worker.address);

    const sent = await rows();
    expect(sent).to.have.length(10);
    expectConsecutive(
      sent.map((r) => r.nonce),
      base,
    );
    expect(new Set(sent.map((r) => r.status))).to.deep.equal(new Set(["mined"]));
    expect(await verifierNonce(s)).to.equal(base + 10);
    for (const taskHash of tasks) expect(await s.escrow.queryFilter(s.escrow.filters.WorkerAssigned(taskHash))).to.have.length(1);
  });

  it("concurrent direct sends: consecutive nonces; a refused call throws OutboxRevert with the custom error and costs no nonce", async function () {
    const tasks = await fundedTasks(s, 10, "outbox");
    const box = outbox();
    const base = await verifierNonce(s);
    const unknown = hre.ethers.id("never funded");

    const results = await Promise.allSettled([
      ...tasks.slice(0, 5).map((hash) => box.send(`assign:test:${hash}`, s.escrowAddress, assignCall(s, hash))),
      box.send(`assign:test:${unknown}`, s.escrowAddress, assignCall(s, unknown)),
      ...tasks.slice(5).map((hash) => box.send(`assign:test:${hash}`, s.escrowAddress, assignCall(s, hash))),
    ]);
    const refused = results[5]!;
    expect(refused.status).to.equal("rejected");
    const reason = (refused as PromiseRejectedResult).reason as OutboxRevert;
    expect(reason).to.be.instanceOf(OutboxRevert);
    expect(reason.purpose).to.equal(`assign:test:${unknown}`);
    expect(reason.revert).to.deep.equal({ name: "TaskNotFound", args: [unknown] });
    expect(reason.txHash).to.equal(undefined);

    const mined = results
      .filter((r) => r.status === "fulfilled")
      .map((r) => (r as PromiseFulfilledResult<{ receipt: { status: number | null } }>).value);
    expect(mined).to.have.length(10);
    for (const m of mined) expect(m.receipt.status).to.equal(1);
    const recorded = await rows();
    expect(recorded.map((r) => r.purpose)).to.not.include(`assign:test:${unknown}`);
    expectConsecutive(
      recorded.map((r) => r.nonce),
      base,
    );
    expect(recorded.every((r) => r.status === "mined")).to.equal(true);
    expect(await verifierNonce(s)).to.equal(base + 10);
    for (const hash of tasks) expect((await s.escrow.getTask(hash)).worker).to.equal(s.worker.address);
  });

  it("one purpose is sent once, however often it is asked for", async function () {
    const [task] = await fundedTasks(s, 1, "outbox");
    const box = outbox();
    const base = await verifierNonce(s);
    const purpose = `assign:test:${task}`;
    const [first, second] = await Promise.all([
      box.send(purpose, s.escrowAddress, assignCall(s, task!)),
      box.send(purpose, s.escrowAddress, assignCall(s, task!)),
    ]);
    expect(second.txHash).to.equal(first.txHash);
    const third = await box.send(purpose, s.escrowAddress, assignCall(s, task!));
    expect(third.txHash).to.equal(first.txHash);
    // Another instance over the same table (a restart) answers the same transaction too.
    expect((await outbox().send(purpose, s.escrowAddress, assignCall(s, task!))).txHash).to.equal(first.txHash);
    expect(await rows()).to.have.length(1);
    expect(await verifierNonce(s)).to.equal(base + 1);
  });

  it("signs a call with at least the state margin above its estimate (a slot emptied before it is mined costs 17,100 more)", async function () {
    const [task] = await fundedTasks(s, 1, "outbox");
    const box = outbox();
    const data = assignCall(s, task!);
    const estimate = await hre.ethers.provider.estimateGas({ from: s.verifier.address, to: s.escrowAddress, data });
    // An assignment needs far less than 200,000 gas, where a fifth more is less than the margin.
    expect(estimate < 200_000n).to.equal(true);
    await box.send(`assign:test:${task}`, s.escrowAddress, data);
    const [entry] = await rows();
    expect(BigInt(entry!.gas_limit!)).to.equal(withGasMargin(estimate));
    expect(BigInt(entry!.gas_limit!) - estimate >= STATE_GAS_MARGIN).to.equal(true);
  });

  it("a dropped transaction is broadcast again and mined", async function () {
    const [task] = await fundedTasks(s, 1, "outbox");
    const box = outbox({ resendAfterMs: 100, bumpAfterMs: 600_000 });
    const base = await verifierNonce(s);
    await send("evm_setAutomine", [false]);
    const sending = box.send("assign:dropped", s.escrowAddress, assignCall(s, task!));
    await waitFor(async () => (await rows())[0]?.status === "sent", "the broadcast");
    const hash = (await rows())[0]!.tx_hash;
    expect(await send("hardhat_dropTransaction", [hash])).to.equal(true);
    expect(await hre.ethers.provider.getTransaction(hash)).to.equal(null);

    await waitFor(async () => (await hre.ethers.provider.getTransaction(hash)) !== null, "the rebroadcast");
    await send("hardhat_mine", ["0x1"]);
    const sent = await sending;
    expect(sent.txHash).to.equal(hash);
    expect(sent.receipt.status).to.equal(1);
    const [row] = await rows();
    expect(row).to.deep.include({ status: "mined", tx_hash: hash, attempts: 1, nonce: base });
    expect(JSON.parse(row!.hashes)).to.deep.equal([hash]);
    expect(await verifierNonce(s)).to.equal(base + 1);
  });

  it("a stuck transaction is replaced with higher fees at the same nonce", async function () {
    const [task] = await fundedTasks(s, 1, "outbox");
    const box = outbox({ bumpAfterMs: 150, resendAfterMs: 600_000 });
    const base = await verifierNonce(s);
    await send("evm_setAutomine", [false]);
    const sending = box.send("assign:stuck", s.escrowAddress, assignCall(s, task!));
    await waitFor(async () => (await rows())[0]?.status === "sent", "the broadcast");
    const first = (await hre.ethers.provider.getTransaction((await rows())[0]!.tx_hash))!;
    await waitFor(async () => JSON.parse((await rows())[0]!.hashes).length >= 2, "a fee bump");
    await send("hardhat_mine", ["0x1"]);
    const sent = await sending;

    const [row] = await rows();
    const hashes = JSON.parse(row!.hashes) as string[];
    expect(hashes[0]).to.equal(first.hash);
    expect(new Set(hashes).size).to.equal(hashes.length);
    expect(hashes).to.include(sent.txHash);
    expect(sent.txHash).to.not.equal(first.hash);
    expect(row).to.deep.include({ status: "mined", tx_hash: sent.txHash, nonce: base });
    const mined = (await hre.ethers.provider.getTransaction(sent.txHash))!;
    expect(first.nonce).to.equal(base);
    expect(mined.nonce).to.equal(base);
    expect(mined.maxFeePerGas! > first.maxFeePerGas!).to.equal(true);
    expect(mined.maxPriorityFeePerGas! > first.maxPriorityFeePerGas!).to.equal(true);
    expect(await hre.ethers.provider.getTransactionReceipt(first.hash)).to.equal(null);
    expect(await verifierNonce(s)).to.equal(base + 1);
    expect((await s.escrow.getTask(task!)).worker).to.equal(s.worker.address);
  });

  it("a signing that fails takes no nonce and loses no request: the request is signed again, at that nonce, before the next", async function () {
    const [refused, next] = await fundedTasks(s, 2, "outbox");
    const wallet = new hre.ethers.Wallet(privateKeyOf(s.verifier), hre.ethers.provider);
    let failures = 1;
    const flaky = new Proxy(wallet, {
      get(target, property) {
        if (property === "signTransaction") {
          return async (tx: TransactionRequest) => {
            if (failures-- > 0) throw new Error("signer unavailable");
            return target.signTransaction(tx);
          };
        }
        const value = Reflect.get(target, property, target) as unknown;
        return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    const errors: object[] = [];
    const box = outbox({ signer: flaky, logger: { warn() {}, error: (obj: object) => errors.push(obj) } });
    const base = await verifierNonce(s);

    const sending = box.send("assign:refused", s.escrowAddress, assignCall(s, refused!), 5_000);
    await waitFor(async () => (await rows()).length === 1, "the first request");
    const second = await box.send("assign:next", s.escrowAddress, assignCall(s, next!), 5_000);
    const first = await sending;
    expect(errors.map((e) => ((e as { err?: Error }).err ?? {}).message)).to.deep.equal(["signer unavailable"]);
    expect([first.receipt.status, second.receipt.status]).to.deep.equal([1, 1]);
    expect((await rows()).map((r) => [r.purpose, r.nonce, r.attempts])).to.deep.equal([
      ["assign:refused", base, 1],
      ["assign:next", base + 1, 1],
    ]);
    expect(await verifierNonce(s)).to.equal(base + 2);
  });

  it("a transaction mined and then taken back by a reorg is followed again when its purpose is asked for", async function () {
    const [task] = await fundedTasks(s, 1, "outbox");
    const box = outbox({ resendAfterMs: 100 });
    const base = await verifierNonce(s);
    const fork = (await send("evm_snapshot")) as string;
    const first = await box.send("assign:reorged", s.escrowAddress, assignCall(s, task!));
    expect((await rows())[0]).to.deep.include({ status: "mined", nonce: base });

    // A longer branch without the block that held it: the receipt is gone, the task is open again.
    await send("evm_revert", [fork]);
    await send("hardhat_mine", ["0x3"]);
    expect(await hre.ethers.provider.getTransactionReceipt(first.txHash)).to.equal(null);
    expect((await s.escrow.getTask(task!)).worker).to.equal(hre.ethers.ZeroAddress);

    const again = await box.send("assign:reorged", s.escrowAddress, assignCall(s, task!), 5_000);
    expect(again.txHash).to.equal(first.txHash);
    expect(again.receipt.status).to.equal(1);
    expect((await s.escrow.getTask(task!)).worker).to.equal(s.worker.address);
    expect(await rows()).to.have.length(1);
    expect((await rows())[0]).to.deep.include({ status: "mined", nonce: base, mined_block: again.receipt.blockNumber });
    expect(await verifierNonce(s)).to.equal(base + 1);
  });

  it("a transaction mined and then taken back by a reorg is sent again by itself, so the next nonce is not stuck behind it", async function () {
    const [first, second] = await fundedTasks(s, 2, "outbox");
    const box = outbox({ resendAfterMs: 100, bumpAfterMs: 300 });
    box.start();
    const base = await verifierNonce(s);
    const fork = (await send("evm_snapshot")) as string;
    const undone = await box.send("assign:undone", s.escrowAddress, assignCall(s, first!));
    await send("evm_revert", [fork]);
    await send("hardhat_mine", ["0x3"]);
    expect(await hre.ethers.provider.getTransactionReceipt(undone.txHash)).to.equal(null);

    // Nobody asks for the first purpose again; the next one still gets through, after it.
    const next = await box.send("assign:next", s.escrowAddress, assignCall(s, second!), 10_000);
    expect(next.receipt.status).to.equal(1);
    expect((await rows()).map((r) => [r.purpose, r.nonce, r.status])).to.deep.equal([
      ["assign:undone", base, "mined"],
      ["assign:next", base + 1, "mined"],
    ]);
    expect((await s.escrow.getTask(first!)).worker).to.equal(s.worker.address);
    expect(await verifierNonce(s)).to.equal(base + 2);
  });

  it("after a restart, a transaction signed but never broadcast is sent once, before the next nonce", async function () {
    const [crashed, next] = await fundedTasks(s, 2, "outbox");
    const base = await verifierNonce(s);

    // The first process signs and records, then dies before any broadcast reaches the node.
    const unreachable = new Proxy(hre.ethers.provider, {
      get(target, property, receiver) {
        if (property === "broadcastTransaction") return async () => Promise.reject(new Error("connect ECONNREFUSED 127.0.0.1:8545"));
        const value = Reflect.get(target, property, receiver) as unknown;
        return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    }) as Provider;
    const before = createOutbox({
      db: s.db,
      chain: { ...chain, provider: unreachable },
      signer: new hre.ethers.Wallet(privateKeyOf(s.verifier), hre.ethers.provider),
      now: Date.now,
      pollMs: 20,
    });
    const lost = before.send("assign:crashed", s.escrowAddress, assignCall(s, crashed!)).catch((error: Error) => error);
    await waitFor(async () => (await rows())[0]?.status === "signed", "the signed entry");
    await before.stop();
    expect(((await lost) as Error).message).to.equal("outbox stopped");
    const [recorded] = await rows();
    expect(recorded).to.deep.include({ status: "signed", nonce: base, purpose: "assign:crashed" });
    expect(await hre.ethers.provider.getTransaction(recorded!.tx_hash)).to.equal(null);
    expect(await verifierNonce(s)).to.equal(base);

    // The new process has a fresh in-memory nonce: it must take the one after the recorded entry.
    const after = outbox();
    const nextSent = await after.send("assign:next", s.escrowAddress, assignCall(s, next!));
    after.start();
    await waitFor(async () => (await rows()).every((r) => r.status === "mined"), "both mined");

    const entries = await rows();
    expect(entries.map((r) => [r.purpose, r.nonce, r.status])).to.deep.equal([
      ["assign:crashed", base, "mined"],
      ["assign:next", base + 1, "mined"],
    ]);
    expect(entries[0]!.tx_hash).to.equal(recorded!.tx_hash);
    expect(entries[1]!.tx_hash).to.equal(nextSent.txHash);
    expect(entries.every((r) => JSON.parse(r.hashes).length === 1)).to.equal(true);
    // Retrying the crashed request waits for the recorded transaction instead of sending another.
    expect((await after.send("assign:crashed", s.escrowAddress, assignCall(s, crashed!))).txHash).to.equal(recorded!.tx_hash);
    // Nothing lost, nothing sent twice: the key's nonce moved once per recorded entry.
    expect(await verifierNonce(s)).to.equal(base + entries.length);
    expect(await rows()).to.have.length(2);
    for (const hash of [crashed!, next!]) expect((await s.escrow.getTask(hash)).worker).to.equal(s.worker.address);
  });

  /** The test chain's provider with some methods replaced. */
  function providerWith(overrides: Partial<Record<keyof Provider, unknown>>): Provider {
    return new Proxy(hre.ethers.provider, {
      get(target, property, receiver) {
        if (property in overrides) return overrides[property as keyof Provider];
        const value = Reflect.get(target, property, receiver) as unknown;
        return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
  }

  it("a nonce taken by another transaction of the key ends the entry as reverted; asking again sends a new one", async function () {
    const [task] = await fundedTasks(s, 1, "outbox");
    const box = outbox({ resendAfterMs: 600_000, bumpAfterMs: 600_000 });
    const base = await verifierNonce(s);
    await send("evm_setAutomine", [false]);
    const sending = box.send("assign:taken", s.escrowAddress, assignCall(s, task!)).catch((error: Error) => error);
    await waitFor(async () => (await rows())[0]?.status === "sent", "the broadcast");
    const ours = (await rows())[0]!.tx_hash;
    expect(await send("hardhat_dropTransaction", [ours])).to.equal(true);

    // Behind the outbox's back: two other transactions of the same key take its nonce and the next.
    const wallet = new hre.ethers.Wallet(privateKeyOf(s.verifier), hre.ethers.provider);
    for (const nonce of [base, base + 1]) await wallet.sendTransaction({ to: s.verifier.address, value: 1n, nonce, gasLimit: 21_000 });
    await send("hardhat_mine", ["0x1"]);
    expect(await verifierNonce(s)).to.equal(base + 2);

    const refused = await sending;
    expect(refused).to.be.instanceOf(OutboxRevert);
    expect((refused as OutboxRevert).message).to.match(/nonce \d+ was used by another transaction/);
    expect(await rows()).to.have.length(1);
    expect((await rows())[0]).to.deep.include({ status: "reverted", nonce: base, mined_block: null });
    expect((await rows())[0]!.error).to.match(/used by another transaction/);
    expect(await hre.ethers.provider.getTransactionReceipt(ours)).to.equal(null);

    // The caller's retry: a new transaction, at the key's next free nonce.
    await send("evm_setAutomine", [true]);
    const again = await box.send("assign:taken", s.escrowAddress, assignCall(s, task!), 5_000);
    expect(again.receipt.status).to.equal(1);
    expect((await rows()).map((r) => [r.nonce, r.status])).to.deep.equal([
      [base, "reverted"],
      [base + 2, "mined"],
    ]);
    expect((await s.escrow.getTask(task!)).worker).to.equal(s.worker.address);
  });

  it("a caller that gives up waiting is forgotten", async function () {
    const [task] = await fundedTasks(s, 1, "outbox");
    const box = outbox();
    await send("evm_setAutomine", [false]);
    for (let i = 0; i < 3; i++) {
      const error = await box.send("assign:slow", s.escrowAddress, assignCall(s, task!), 50).catch((e: Error) => e);
      expect((error as { code?: string }).code).to.equal("TX_PENDING");
    }
    expect(box.waiting()).to.equal(0);
    const pending = box.send("assign:slow", s.escrowAddress, assignCall(s, task!), 5_000);
    expect(box.waiting()).to.equal(0); // signing first
    await waitFor(async () => box.waiting() === 1, "the waiter");
    await send("hardhat_mine", ["0x1"]);
    expect((await pending).receipt.status).to.equal(1);
    expect(box.waiting()).to.equal(0);
    expect(await rows()).to.have.length(1);
  });

  it("a transaction whose check fails holds up none of the others", async function () {
    const [first, second] = await fundedTasks(s, 2, "outbox");
    const broken = new Set<string>();
    const errors: unknown[] = [];
    const box = outbox({
      chain: {
        ...chain,
        provider: providerWith({
          getTransactionReceipt: async (hash: string) => {
            if (broken.has(hash)) throw new Error("receipt lookup failed");
            return hre.ethers.provider.getTransactionReceipt(hash);
          },
        }),
      },
      logger: { warn() {}, error: (obj: object) => errors.push(obj) },
    });
    await send("evm_setAutomine", [false]);
    const stuck = box.send("assign:first", s.escrowAddress, assignCall(s, first!), 2_000).catch((error: Error) => error);
    await waitFor(async () => (await rows())[0]?.status === "sent", "the first broadcast");
    broken.add((await rows())[0]!.tx_hash);
    const fine = box.send("assign:second", s.escrowAddress, assignCall(s, second!), 5_000);
    await waitFor(async () => (await rows())[1]?.status === "sent", "the second broadcast");
    await send("hardhat_mine", ["0x1"]);

    expect((await fine).receipt.status).to.equal(1);
    expect(((await stuck) as { code?: string }).code).to.equal("TX_PENDING");
    expect(errors.length).to.be.greaterThan(0);
    expect((await rows()).map((r) => [r.purpose, r.status])).to.deep.equal([
      ["assign:first", "sent"],
      ["assign:second", "mined"],
    ]);
  });

  it("another key's entries (before a key rotation) are left alone", async function () {
    const [task] = await fundedTasks(s, 1, "outbox");
    const errors: unknown[] = [];
    const box = outbox({ bumpAfterMs: 100, resendAfterMs: 50, logger: { warn() {}, error: (obj: object) => errors.push(obj) } });
    await box.send("assign:current", s.escrowAddress, assignCall(s, task!));

    // An entry of the previous key, open, long due for a fee bump, at a nonce the current key has used.
    const old = hre.ethers.Wallet.createRandom();
    const raw = await old.signTransaction({
      to: s.escrowAddress,
      data: "0x",
      nonce: 0,
      gasLimit: 100_000,
      maxFeePerGas: 1n,
      maxPriorityFeePerGas: 1n,
      chainId: s.chainConfig.chainId,
      type: 2,
    });
    const hash = Transaction.from(raw).hash!;
    const at = Date.now() - 3_600_000;
    const inserted = await s.db
      .insertInto("outbox")
      .values({
        chain: "arc",
        sender: old.address,
        nonce: 0,
        purpose: "assign:old-key",
        to_address: s.escrowAddress,
        data: "0x",
        gas_limit: "100000",
        max_fee: "1",
        priority_fee: "1",
        raw,
        tx_hash: hash,
        hashes: JSON.stringify([hash]),
        status: "sent",
        attempts: 1,
        mined_block: null,
        error: null,
        created_at: at,
        sent_at: at,
        updated_at: at,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    await box.poll();
    await box.poll();
    const after = await s.db.selectFrom("outbox").selectAll().where("id", "=", inserted.id).executeTakeFirstOrThrow();
    expect(after).to.deep.equal(inserted);
    expect(errors).to.deep.equal([]);
  });

  it("a transaction the node keeps refusing is replaced with higher fees", async function () {
    const [task] = await fundedTasks(s, 1, "outbox");
    const refused = new Set<string>();
    const box = outbox({
      bumpAfterMs: 150,
      resendAfterMs: 600_000,
      chain: {
        ...chain,
        provider: providerWith({
          // The node turns down the first transaction it sees (underpriced), every time.
          broadcastTransaction: async (raw: string) => {
            if (refused.size === 0) refused.add(raw);
            if (refused.has(raw)) throw new Error("max fee per gas less than block base fee");
            return hre.ethers.provider.broadcastTransaction(raw);
          },
        }),
      },
    });
    const base = await verifierNonce(s);
    const sent = await box.send("assign:refused-broadcast", s.escrowAddress, assignCall(s, task!), 5_000);

    const [row] = await rows();
    const hashes = JSON.parse(row!.hashes) as string[];
    expect(hashes).to.have.length(2);
    expect(hashes[0]).to.equal(Transaction.from([...refused][0]).hash);
    expect(sent.txHash).to.equal(hashes[1]);
    expect(row).to.deep.include({ status: "mined", nonce: base, attempts: 2, tx_hash: hashes[1] });
    const mined = (await hre.ethers.provider.getTransaction(sent.txHash))!;
    expect(mined.maxFeePerGas! > Transaction.from([...refused][0]).maxFeePerGas!).to.equal(true);
    expect((await s.escrow.getTask(task!)).worker).to.equal(s.worker.address);
  });
});
