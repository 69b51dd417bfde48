/**
 * Sealing private briefs on worker threads (sdk/src/posting/seal-threads.ts, issue 30): what a thread seals opens with
 * core/crypto and each reader's key, a brief sent before a thread is ready waits for one, a malformed key is refused
 * with core/crypto's error, a stopped thread fails only its briefs and is replaced, threads that cannot start leave
 * the sealing to the calling thread, idle threads stop, and the engine's default in Node is the threads.
 */
import * as fs from "node:fs";
import * as threads from "node:worker_threads";
import { expect } from "chai";
import { Wallet } from "ethers";
import { CryptoError, decryptBrief, publicKeyFromPrivateKey, unwrapBriefKey } from "@market/core/crypto";
import { inlineSealer, type BriefSealer } from "../../sdk/src/posting/seal";
import { createThreadSealer, defaultSealer, type ThreadSealer } from "../../sdk/src/posting/seal-threads";

const readers = Array.from({ length: 3 }, () => Wallet.createRandom());
const readerKeys = readers.map((w) => publicKeyFromPrivateKey(w.privateKey));

async function until(what: string, ready: () => boolean, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!ready()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Every reader opens the brief's key from its wrap, and the key opens the brief. */
function expectOpens(sealed: Awaited<ReturnType<BriefSealer["seal"]>>, brief: string) {
  expect(sealed.wrappedKeys).to.have.length(readers.length);
  for (const [i, reader] of readers.entries()) {
    const key = unwrapBriefKey(sealed.wrappedKeys[i]!, reader.privateKey);
    expect(Buffer.from(key).equals(Buffer.from(sealed.key))).to.equal(true);
  }
  expect(decryptBrief(sealed.ciphertext, sealed.key)).to.equal(brief);
}

describe("sdk: sealing briefs on worker threads", function () {
  this.timeout(60_000);
  let sealer: ThreadSealer;

  before(() => {
    sealer = createThreadSealer({ threads, fs }, { cores: 2, idleMs: 60_000 })!;
    expect(sealer, "threads can load core/crypto from the sources").to.not.equal(undefined);
  });
  after(() => sealer.close());

  it("seals a brief sent before any thread is ready on the first one ready, then on the threads; every brief opens", async () => {
    expect(sealer.readyThreads).to.equal(0);
    const first = await sealer.seal("the first brief", readerKeys);
    expectOpens(first, "the first brief");
    expect(sealer.sealed).to.deep.equal({ onThreads: 1, here: 0 });
    await until("two ready threads", () => sealer.readyThreads === 2);
    const briefs = Array.from({ length: 12 }, (_, i) => `brief ${i}: données, 数据, 🚢`);
    const sealed = await Promise.all(briefs.map((brief) => sealer.seal(brief, readerKeys)));
    for (const [i, one] of sealed.entries()) expectOpens(one, briefs[i]!);
    expect(sealer.sealed).to.deep.equal({ onThreads: 13, here: 0 });
    // A fresh key and IV per brief, as in the calling thread.
    expect(new Set(sealed.map((s) => Buffer.from(s.key).toString("hex"))).size).to.equal(12);
    expect(new Set(sealed.map((s) => Buffer.from(s.ciphertext).toString("hex"))).size).to.equal(12);
  });

  it("refuses a malformed public key with core/crypto's error, and keeps sealing", async () => {
    await until("a ready thread", () => sealer.readyThreads > 0);
    const refused = await sealer.seal("brief", [readerKeys[0]!, "04deadbeef"]).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).to.be.instanceOf(CryptoError);
    expect((refused as CryptoError).code).to.equal("INVALID_PUBLIC_KEY");
    expect(sealer.sealed.onThreads).to.equal(13);
    expectOpens(await sealer.seal("still sealing", readerKeys), "still sealing");
  });

  it("fails the briefs in hand when its threads stop, and starts them again for the next", async () => {
    await until("a ready thread", () => sealer.readyThreads > 0);
    const inHand = Array.from({ length: 6 }, (_, i) =>
      sealer.seal(`in hand ${i}`, readerKeys).then(
        () => "sealed",
        (e: Error) => e.message,
      ),
    );
    await sealer.close();
    const outcomes = await Promise.all(inHand);
    expect(outcomes.filter((o) => o !== "sealed").every((o) => /stopped/.test(o))).to.equal(true);
    expect(outcomes.some((o) => o !== "sealed")).to.equal(true);
    expect(sealer.readyThreads).to.equal(0);
    expectOpens(await sealer.seal("after a stop", readerKeys), "after a stop");
    await until("threads started again", () => sealer.readyThreads === 2);
    const before = sealer.sealed.onThreads;
    expectOpens(await sealer.seal("on a new thread", readerKeys), "on a new thread");
    expect(sealer.sealed.onThreads).to.equal(before + 1);
  });

  it("starts its threads when warmed, and stops them after a spell without briefs", async () => {
    const idle = createThreadSealer({ threads, fs }, { cores: 1, idleMs: 200 })!;
    try {
      idle.warm(); // starts the thread without a brief
      await until("a ready thread", () => idle.readyThreads === 1);
      await idle.seal("on the thread", readerKeys);
      expect(idle.sealed.onThreads).to.equal(1);
      await until("the idle thread stopped", () => idle.readyThreads === 0, 5_000);
    } finally {
      await idle.close();
    }
  });

  it("seals in the calling thread the briefs waiting for threads that cannot start, and every brief after", async () => {
    // Real threads that fail as they start (as where a thread cannot load core/crypto).
    class FailingWorker extends threads.Worker {
      constructor(_code: string, options: threads.WorkerOptions) {
        super("throw new Error('cannot start here')", { ...options, eval: true });
      }
    }
    const failing = createThreadSealer({ threads: { ...threads, Worker: FailingWorker }, fs }, { cores: 2, idleMs: 60_000 })!;
    try {
      const waiting = await Promise.all(["waiting 1", "waiting 2", "waiting 3"].map((brief) => failing.seal(brief, readerKeys)));
      for (const [i, one] of waiting.entries()) expectOpens(one, `waiting ${i + 1}`);
      expectOpens(await failing.seal("after", readerKeys), "after");
      expect(failing.sealed).to.deep.equal({ onThreads: 0, here: 4 });
      expect(failing.readyThreads).to.equal(0);
    } finally {
      await failing.close();
    }
  });

  it("is the engine's default in Node; the calling thread seals where there are no threads", () => {
    const chosen = defaultSealer();
    expect(chosen).to.not.equal(inlineSealer);
    expect(chosen).to.have.property("readyThreads");
    expect(defaultSealer()).to.equal(chosen);
  });
});
