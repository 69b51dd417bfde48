/**
 * Verification off the event loop (docs/security.md, issue 14 item 3): 20 wallets call the advisory verify route over
 * loopback with maximal outputs while the API's event-loop delay is measured; the rule engine runs in the pool's
 * threads, so the p99 stays under 50 ms. Bounded: 60 calls, then it stops.
 */
import { expect } from "chai";
import hre from "hardhat";
import { monitorEventLoopDelay } from "node:perf_hooks";
import type { AddressInfo } from "node:net";
import type { HardhatEthersSigner } from "@nomicfoundation/hardhat-ethers/signers";
import { startTestServer, type TestServer } from "../harness";
import { expectError, expectOk } from "../expect";
import { AMOUNT, brief, steps } from "../lifecycle/helpers";
import { MAX_OUTPUT_CHARS, type VerifyAnswer } from "@market/core/api";
import { ADVISORY_VERIFY_PER_IP_PER_MINUTE, createVerifierPool } from "../../../server/verification";
import { MarketError } from "@market/core/errors";

const WALLETS = 20;
const CALLS_PER_WALLET = 3;

/** 500,000 characters of prose: every rule scans all of it. */
const MAXIMAL = "Prince Hamlet, the Dane, weighs revenge against doubt. ".repeat(MAX_OUTPUT_CHARS).slice(0, MAX_OUTPUT_CHARS);

describe("hardening: verification off the event loop", function () {
  let s: TestServer | undefined;
  afterEach(async function () {
    await s?.close();
    s = undefined;
  });

  /** Tasks judged by `agent` verifiers: one fresh wallet each, all delivered by the worker with a maximal output. */
  async function seed(server: TestServer, count: number) {
    const t = steps(server);
    const posterKey = await server.apiKeyFor(server.poster);
    const agentKey = await server.registerAgent(server.worker, ["summarization"]);
    const verifiers: Array<{ key: string; taskHash: string }> = [];
    for (let i = 0; i < count; i++) {
      const wallet = hre.ethers.Wallet.createRandom();
      const key = await server.apiKeyFor(wallet as unknown as HardhatEthersSigner);
      const fields = server.publicTask(brief(), { verificationMode: "agent", verifierAddress: wallet.address, verificationCriteria: undefined });
      const { taskHash } = await server.post(server.poster, posterKey, fields, AMOUNT);
      expectOk(await t.accept(agentKey, taskHash));
      await t.deliverOnChain(server.worker, agentKey, taskHash, MAXIMAL);
      await server.sync();
      verifiers.push({ key, taskHash });
    }
    return verifiers;
  }

  it(`event-loop delay p99 under 50 ms while ${WALLETS} wallets verify maximal outputs over loopback`, async function () {
    this.timeout(300_000);
    s = await startTestServer({ abuse: { assignmentCap: { base: WALLETS, completionsPerSlot: 5, max: WALLETS }, acceptsPerMinute: 1_000 } });
    const verifiers = await seed(s, WALLETS);
    await s.app.listen({ host: "127.0.0.1", port: 0 });
    const { port } = s.app.server.address() as AddressInfo;

    const histogram = monitorEventLoopDelay({ resolution: 5 });
    histogram.enable();
    const started = Date.now();
    const answers = await Promise.all(
      verifiers.flatMap(({ key, taskHash }, wallet) =>
        Array.from({ length: CALLS_PER_WALLET }, async (_, call) => {
          // Criteria of its own per call, so no cached verdict answers it.
          const verificationCriteria = {
            min_length: 100,
            contains_keywords: ["hamlet", `Ophelia${wallet}x${call}`],
            regex_pattern: `Horatio\\s+${wallet}\\d+`,
          };
          const response = await fetch(`http://127.0.0.1:${port}/api/v1/verification/verify`, {
            method: "POST",
            headers: { "content-type": "application/json", "x-api-key": key },
            body: JSON.stringify({ taskHash, verificationCriteria }),
          });
          return { status: response.status, body: (await response.json()) as { data: VerifyAnswer } };
        }),
      ),
    );
    histogram.disable();
    const elapsed = Date.now() - started;
    const p99 = histogram.percentile(99) / 1e6;
    console.log(
      `      verify: ${answers.length} calls in ${elapsed} ms; event-loop delay p99 ${p99.toFixed(1)} ms, max ${(histogram.max / 1e6).toFixed(1)} ms`,
    );
    for (const answer of answers) {
      expect(answer.status, JSON.stringify(answer.body).slice(0, 300)).to.equal(200);
      expect(answer.body.data).to.deep.include({ settled: false });
      expect(answer.body.data.verificationResult.passed).to.equal(false);
      expect(answer.body.data.verificationResult.score).to.equal(33);
    }
    expect(p99, "event-loop delay p99 (ms)").to.be.below(50);
  });

  it("the advisory route is limited per client IP as well as per wallet; a repeated (task, round) is answered alike", async function () {
    s = await startTestServer();
    const { key, taskHash } = (await seed(s, 1))[0]!;
    const first = expectOk(await s.call<VerifyAnswer>("POST", "/api/v1/verification/verify", { key, body: { taskHash } }));
    const again = expectOk(await s.call<VerifyAnswer>("POST", "/api/v1/verification/verify", { key, body: { taskHash } }));
    expect(again).to.deep.equal(first);
    // Other wallets from the same IP share the IP's window: fresh keys, each under its own wallet limit.
    let limited;
    for (let i = 0; i < ADVISORY_VERIFY_PER_IP_PER_MINUTE && !limited; i++) {
      const wallet = hre.ethers.Wallet.createRandom();
      const strangerKey = await s.apiKeyFor(wallet as unknown as HardhatEthersSigner);
      const answer = await s.call("POST", "/api/v1/verification/verify", { key: i % 2 === 0 ? key : strangerKey, body: { taskHash } });
      if (answer.status === 429) limited = answer;
      else if (i % 2 === 1) expectError(answer, "NOT_TASK_PARTY");
    }
    expect(limited, "the IP's limit").to.not.equal(undefined);
  });

  it("the pool refuses with VERIFIER_BUSY past its per-call budget and when its queue is full, and keeps serving", async function () {
    const pool = createVerifierPool({ size: 1, maxQueued: 1, budgetMs: 1 });
    try {
      const over = await pool.evaluate(MAXIMAL, { contains_keywords: ["absent"] }).catch((error: unknown) => error);
      expect(over).to.be.instanceOf(MarketError).and.have.property("code", "VERIFIER_BUSY");
    } finally {
      await pool.close();
    }
    const small = createVerifierPool({ size: 1, maxQueued: 1 });
    try {
      // Started: one call runs, one waits, the third finds the queue full.
      expect((await small.evaluate("warm up the thread", {})).passed).to.equal(true);
      const runs = [small.evaluate("a long enough answer", { min_length: 5 }), small.evaluate("x", { min_length: 5 }), small.evaluate("y", {})];
      const settled = await Promise.allSettled(runs);
      expect(settled[0]).to.deep.include({ status: "fulfilled" });
      expect(settled[1]).to.deep.include({ status: "fulfilled" });
      expect(settled[2]!.status).to.equal("rejected");
      expect((settled[2] as PromiseRejectedResult).reason).to.have.property("code", "VERIFIER_BUSY");
      expect((await small.evaluate("fine answer here", { min_length: 5 })).score).to.equal(100);
    } finally {
      await small.close();
    }
  });
});
