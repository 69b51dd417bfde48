import { sweepFeesToTreasury } from "../support/fees";
import { expect } from "chai";
import { stackFixture, type Stack } from "../support/stack";
import { privateKeyOf } from "../server/harness";
import { MarketClient } from "../../sdk/src/client";
import { WorkerRuntime, type RuntimeEvent, type TaskContext } from "../../sdk/src/runtime";
import { ApiError } from "../../sdk/src/errors";

/** Resolves when `check` holds, polling. */
async function until(check: () => boolean | Promise<boolean>, timeoutMs = 30_000, what = "condition") {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** API keys of the poster and the worker (the runtime registers the worker itself). */
const seededStack = stackFixture(async (s) => ({ posterKey: await s.apiKeyFor(s.poster), workerKey: await s.apiKeyFor(s.worker) }));

describe("WorkerRuntime end to end", function () {
  this.timeout(120_000);
  let s: Stack;
  let keys: { posterKey: string; workerKey: string };
  beforeEach(async function () {
    ({ stack: s, seeded: keys } = await seededStack());
  });
  afterEach(async function () {
    await s.close();
  });

  async function runtimeFor(executeTask: (context: TaskContext) => Promise<{ output: string }>, capabilities = ["summarization"]) {
    const options = await s.runtimeOptions(s.worker, keys.workerKey);
    const events: RuntimeEvent[] = [];
    const runtime = new WorkerRuntime({
      ...options,
      capabilities,
      displayName: "test worker",
      maxConcurrentTasks: 2,
      browseIntervalMs: 100,
      executeTask,
    }).on((event) => {
      events.push(event);
      if (process.env.DEBUG_RUNTIME)
        console.log(JSON.stringify(event, (_k, v) => (typeof v === "bigint" ? v.toString() : v instanceof Error ? v.stack : v)));
    });
    return { runtime, events };
  }

  it("reacts to a listing on the event stream, long before its next browse", async function () {
    const options = await s.runtimeOptions(s.worker, keys.workerKey);
    const events: RuntimeEvent[] = [];
    const runtime = new WorkerRuntime({
      ...options,
      capabilities: ["summarization"],
      browseIntervalMs: 600_000,
      executeTask: async () => ({ output: "A careful summary of the brief, with the facts it asks for and nothing else." }),
    }).on((event) => events.push(event));
    await runtime.start();
    // The first browse (at start) found nothing; the next is ten minutes away.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const poster = new MarketClient(await s.clientOptions(s.poster, keys.posterKey));
    const listedAt = Date.now();
    await poster.postTasks([
      { instructions: "Summarise the public history of the Kiel canal.", amountRaw: 3_000_000n, privacy: "public", capabilities: ["summarization"] },
    ]);
    await until(() => events.some((e) => e.type === "task_assigned"), 20_000, "the task taken");
    const tookMs = Date.now() - listedAt;
    await until(() => events.some((e) => e.type === "task_finalized"), 30_000, "the task delivered");
    await runtime.stop();
    expect(tookMs).to.be.below(20_000);
  });

  it("works a task its poster assigned to it on chain as the stream's task.assigned arrives, long before its next browse", async function () {
    const options = await s.runtimeOptions(s.worker, keys.workerKey);
    const events: RuntimeEvent[] = [];
    const runtime = new WorkerRuntime({
      ...options,
      capabilities: ["summarization"],
      browseIntervalMs: 600_000,
      executeTask: async () => ({ output: "A careful summary of the brief, with the facts it asks for and nothing else." }),
    }).on((event) => events.push(event));
    await runtime.start();
    try {
      // A task this runtime would never take from a browse (another capability), given to it by its poster.
      const poster = new MarketClient(await s.clientOptions(s.poster, keys.posterKey));
      const { results } = await poster.postTasks([
        {
          instructions: "Translate the public notice about the Kiel canal.",
          amountRaw: 3_000_000n,
          privacy: "public",
          capabilities: ["translation"],
        },
      ]);
      const taskHash = results[0]!.taskHash!;
      await s.sync();
      await (await s.escrow.connect(s.poster).assignWorker(taskHash, s.worker.address)).wait();
      const assignedAt = Date.now();
      await until(() => events.some((e) => e.type === "task_finalized" && e.taskId === taskHash), 20_000, "the assigned task delivered");
      expect(Date.now() - assignedAt).to.be.below(20_000);
      expect(events.filter((e) => e.type === "task_assigned").map((e) => (e as { taskId: string }).taskId)).to.deep.equal([taskHash]);
      expect(events.filter((e) => e.type === "task_failed" || e.type === "error")).to.deep.equal([]);
    } finally {
      await runtime.stop();
    }
  });

  it("takes public and private tasks posted through the SDK, delivers, passes verification and is paid", async function () {
    const seen: TaskContext[] = [];
    const { runtime, events } = await runtimeFor(async (context) => {
      seen.push(context);
      return { output: `Summary of the brief (${context.instructions.length} characters): it asks for a careful summary with facts.` };
    });
    const profile = await runtime.start();
    expect(profile.address).to.equal(s.worker.address);
    expect(profile.supportedChains).to.deep.equal(["arc"]);
    expect(runtime.declaredChains).to.deep.equal(["arc"]);
    expect(events[0]).to.deep.include({ type: "registered" });

    const poster = new MarketClient(await s.clientOptions(s.poster, keys.posterKey));
    const before = {
      worker: await s.usdc.balanceOf(s.worker.address),
      treasury: await s.usdc.balanceOf(s.treasury.address),
      poster: await s.usdc.balanceOf(s.poster.address),
    };
    const result = await poster.postTasks([
      { instructions: "Summarise the public history of the Suez canal.", amountRaw: 3_000_000n, privacy: "public", capabilities: ["summarization"] },
      { instructions: "Summarise the private board minutes: revenue rose 4%.", amountRaw: 5_000_001n, capabilities: ["summarization"] },
    ]);
    expect(result.posted).to.equal(2);

    await until(() => events.filter((e) => e.type === "task_finalized").length === 2, 30_000, "two finalized tasks");
    await runtime.stop();
    expect(runtime.activeExecutions).to.equal(0);
    expect(seen.map((c) => c.instructions).sort()).to.deep.equal([
      "Summarise the private board minutes: revenue rose 4%.",
      "Summarise the public history of the Suez canal.",
    ]);
    for (const e of events.filter((x) => x.type === "task_finalized")) {
      expect(e).to.deep.include({ finalize: { status: "verified", verificationResult: { passed: true, reasons: [] } } });
    }
    // Fee 10%, rounded down: 300,000 of 3,000,000 and 500,000 of 5,000,001, kept in the escrow until the treasury sweeps.
    expect(await sweepFeesToTreasury(s)).to.equal(300_000n + 500_000n);
    expect(await s.usdc.balanceOf(s.worker.address)).to.equal(before.worker + 2_700_000n + 4_500_001n);
    expect(await s.usdc.balanceOf(s.treasury.address)).to.equal(before.treasury + 300_000n + 500_000n);
    expect(await s.usdc.balanceOf(s.poster.address)).to.equal(before.poster - 8_000_001n);
  });

  it("delivers again after a failed round, with the reasons, and passes", async function () {
    const rounds: Array<{ round: number; reasons?: string[] }> = [];
    const { runtime, events } = await runtimeFor(async (context) => {
      rounds.push({ round: context.round, reasons: context.previousAttempt?.reasons });
      return { output: context.round === 1 ? "I can't help with that." : "The report covers three findings about supply chains in detail." };
    });
    await runtime.start();
    const poster = new MarketClient(await s.clientOptions(s.poster, keys.posterKey));
    const posted = await poster.postTask({
      instructions: "Summarise the supply-chain report for the board.",
      amountRaw: 1_000_000n,
      privacy: "public",
      capabilities: ["summarization"],
    });
    await until(() => events.some((e) => e.type === "task_finalized" && e.finalize.verificationResult?.passed), 30_000, "finalized and passed");
    await runtime.stop();
    expect(rounds.map((r) => r.round)).to.deep.equal([1, 2]);
    expect(rounds[1]!.reasons?.join(" ")).to.match(/refusal/i);
    // Each finalized delivery is reported: the failed round (passed false), then the one that passed.
    const finalized = events.filter((e) => e.type === "task_finalized");
    expect(finalized.map((e) => [e.taskId, e.finalize.status, e.finalize.verificationResult?.passed])).to.deep.equal([
      [posted.taskHash, "failed", false],
      [posted.taskHash, "verified", true],
    ]);
    expect(finalized[0]!.finalize.verificationResult!.reasons.join(" ")).to.equal(rounds[1]!.reasons!.join(" "));
    expect(events.filter((e) => e.type === "task_failed")).to.deep.equal([]);
    const reputation = (await s.call<{ reputation: number }>("GET", `/api/v1/reputation/${s.worker.address}`)).body.data;
    expect(reputation.reputation).to.equal(41); // 50 - 10 for the failed round + 1 for the settled task
  });

  it("stop() during a round finishes the task in hand: a failed round is still delivered again", async function () {
    const rounds: number[] = [];
    let stopped: Promise<unknown> | undefined;
    const { runtime, events } = await runtimeFor(async (context) => {
      rounds.push(context.round);
      if (context.round === 1) {
        stopped = runtime.stop();
        return { output: "I can't help with that." };
      }
      return { output: "The report covers three findings about supply chains in detail." };
    });
    await runtime.start();
    const poster = new MarketClient(await s.clientOptions(s.poster, keys.posterKey));
    await poster.postTask({
      instructions: "Summarise the supply-chain report for the board.",
      amountRaw: 1_000_000n,
      privacy: "public",
      capabilities: ["summarization"],
    });
    await until(() => stopped !== undefined, 30_000, "the first round");
    await stopped;
    expect(rounds).to.deep.equal([1, 2]);
    expect(events.filter((e) => e.type === "task_failed")).to.deep.equal([]);
    const finalized = events.filter((e) => e.type === "task_finalized");
    expect(finalized.map((e) => e.finalize.verificationResult?.passed)).to.deep.equal([false, true]);
    expect(finalized[1]).to.deep.include({ finalize: { status: "verified", verificationResult: { passed: true, reasons: [] } } });
  });

  it("reports each failed round of a task as finalized (passed false), never as task_failed", async function () {
    const { runtime, events } = await runtimeFor(async () => ({ output: "TODO" }));
    await runtime.start();
    const poster = new MarketClient(await s.clientOptions(s.poster, keys.posterKey));
    const posted = await poster.postTask({
      instructions: "Summarise the minutes.",
      amountRaw: 1_000_000n,
      privacy: "public",
      capabilities: ["summarization"],
    });
    await until(() => events.filter((e) => e.type === "task_finalized").length === 3, 30_000, "three finalized rounds");
    await runtime.stop();
    const finalized = events.filter((e) => e.type === "task_finalized");
    for (const e of finalized) {
      expect(e.taskId).to.equal(posted.taskHash);
      expect(e.finalize.status).to.equal("failed");
      expect(e.finalize.verificationResult?.passed).to.equal(false);
      expect(e.finalize.verificationResult?.reasons).to.have.length.above(0);
    }
    expect(events.filter((e) => e.type === "task_failed")).to.deep.equal([]);
    const task = await poster.getTask(posted.taskHash!);
    expect(task.state.status).to.equal("failed");
    expect(task.state.rounds).to.equal(3);
  });

  it("a manual task: waits for the poster's verdict without a slot, delivers again after a rejection with its reasons, and is paid", async function () {
    const rounds: Array<{ round: number; reasons?: string[] }> = [];
    const { runtime, events } = await runtimeFor(async (context) => {
      rounds.push({ round: context.round, reasons: context.previousAttempt?.reasons });
      return {
        output:
          context.round === 1 ? "A first draft of the summary, short on detail." : "The revised summary names all three findings and their owners.",
      };
    });
    await runtime.start();
    const poster = new MarketClient(await s.clientOptions(s.poster, keys.posterKey));
    const posted = await poster.postTask({
      instructions: "Summarise the audit for the board; the poster judges it.",
      amountRaw: 1_000_000n,
      privacy: "public",
      verificationMode: "manual",
      capabilities: ["summarization"],
    });
    const taskHash = posted.taskHash!;
    const finalized = () => events.filter((e) => e.type === "task_finalized").map((e) => [e.finalize.status, e.finalize.verificationResult?.passed]);
    await until(() => finalized().length === 1, 30_000, "the first delivery");
    expect(finalized()).to.deep.equal([["awaiting_verification", undefined]]);
    expect(runtime.activeExecutions).to.equal(0, "a task waiting for its verdict holds no slot");

    expect((await poster.reviewResult({ taskHash, approve: false, reasons: ["Name the owner of each finding."] })).status).to.equal("failed");
    await until(() => finalized().length === 3, 30_000, "the rejection and the second delivery");
    expect(rounds).to.deep.equal([
      { round: 1, reasons: undefined },
      { round: 2, reasons: ["Name the owner of each finding."] },
    ]);
    const before = await s.usdc.balanceOf(s.worker.address);
    await poster.reviewResult({ taskHash, approve: true });
    await until(() => finalized().length === 4, 30_000, "the approval");
    await runtime.stop();
    expect(finalized()).to.deep.equal([
      ["awaiting_verification", undefined],
      ["failed", false],
      ["awaiting_verification", undefined],
      ["verified", true],
    ]);
    expect(events.filter((e) => e.type === "task_failed")).to.deep.equal([]);
    expect(await s.usdc.balanceOf(s.worker.address)).to.equal(before + 900_000n); // 10% fee
  });

  it("refills a slot as soon as it frees: 21 half-second tasks in 2 slots take well under 20 s with the default 15 s browse interval", async function () {
    const options = await s.runtimeOptions(s.worker, keys.workerKey);
    const poster = new MarketClient(await s.clientOptions(s.poster, keys.posterKey));
    const result = await poster.postTasks(
      Array.from({ length: 21 }, (_, i) => ({
        instructions: `Refill ${i}: summarise this short note.`,
        amountRaw: 1_000_000n,
        privacy: "public" as const,
        capabilities: ["summarization"],
      })),
    );
    expect(result.posted).to.equal(21);
    let running = 0;
    let mostAtOnce = 0;
    const finalized = new Set<string>();
    const runtime = new WorkerRuntime({
      ...options,
      capabilities: ["summarization"],
      maxConcurrentTasks: 2,
      executeTask: async ({ instructions }) => {
        mostAtOnce = Math.max(mostAtOnce, ++running);
        await new Promise((resolve) => setTimeout(resolve, 500));
        running--;
        return { output: `Summary of "${instructions}": a short note, summarised.` };
      },
    }).on((event) => {
      if (event.type === "task_finalized" && event.finalize.verificationResult?.passed) finalized.add(event.taskId);
    });
    const started = Date.now();
    await runtime.start();
    try {
      // On the 15 s tick alone, 11 rounds of two would take over 150 s.
      await until(() => finalized.size === 21, 20_000, "21 tasks finalized within 20 s");
    } finally {
      await runtime.stop();
    }
    expect(Date.now() - started).to.be.below(20_000);
    expect(mostAtOnce).to.equal(2);
    for (const r of result.results) expect((await poster.getTask(r.taskHash!)).state.status).to.equal("verified");
  });

  it("a slot that frees while a browse is under way takes its next candidate at once, beside the accepts in flight", async function () {
    const options = await s.runtimeOptions(s.worker, keys.workerKey);
    const poster = new MarketClient(await s.clientOptions(s.poster, keys.posterKey));
    const result = await poster.postTasks(
      Array.from({ length: 16 }, (_, i) => ({
        instructions: `Lanes ${i}: summarise this short note.`,
        amountRaw: 1_000_000n,
        privacy: "public" as const,
        capabilities: ["summarization"],
      })),
    );
    expect(result.posted).to.equal(16);
    // The accepts the runtime has sent and not had answered, as its HTTP calls show them (the real API answers).
    let accepting = 0;
    const inFlight: number[] = [];
    const observing: typeof fetch = async (input, init) => {
      const accept = String(input).endsWith("/accept");
      if (accept) inFlight.push(++accepting);
      try {
        return await fetch(input, init);
      } finally {
        if (accept) accepting--;
      }
    };
    let started = 0;
    const finalized = new Set<string>();
    const runtime = new WorkerRuntime({
      ...options,
      capabilities: ["summarization"],
      maxConcurrentTasks: 4,
      fetch: observing,
      // Staggered lengths: the slots free one at a time, each while other accepts are under way.
      executeTask: async ({ instructions }) => {
        await new Promise((resolve) => setTimeout(resolve, 100 + (started++ % 4) * 200));
        return { output: `Summary of "${instructions}": a short note, summarised.` };
      },
    }).on((event) => {
      if (event.type === "task_finalized" && event.finalize.verificationResult?.passed) finalized.add(event.taskId);
    });
    await runtime.start();
    try {
      await until(() => finalized.size === 16, 60_000, "16 tasks finalized");
    } finally {
      await runtime.stop();
    }
    // After the first browse's four accepts, freed slots still accept side by side (one lane alone accepted one at a time).
    expect(Math.max(...inFlight.slice(4))).to.be.at.least(2);
  });

  it("refuses a key of another wallet (OWNER_MISMATCH) and registers nothing", async function () {
    const options = await s.runtimeOptions(s.worker, keys.workerKey);
    const runtime = new WorkerRuntime({
      ...options,
      privateKey: privateKeyOf(s.stranger),
      executeTask: async () => ({ output: "x" }),
    });
    const error = await runtime.start().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).to.be.instanceOf(ApiError);
    expect((error as ApiError).code).to.equal("OWNER_MISMATCH");
    expect((error as ApiError).status).to.equal(409);
    expect(await s.db.selectFrom("agents").selectAll().execute()).to.deep.equal([]);
  });

  it("restarts with existingPrivateKey without registering again", async function () {
    const { runtime } = await runtimeFor(async () => ({ output: "unused output text" }));
    await runtime.start();
    await runtime.stop();
    const registeredAt = (await s.db.selectFrom("agents").select("updated_at").executeTakeFirstOrThrow()).updated_at;
    const { privateKey, ...options } = await s.runtimeOptions(s.worker, keys.workerKey);
    const again = new WorkerRuntime({
      ...options,
      existingPrivateKey: privateKey,
      executeTask: async () => ({ output: "x" }),
    });
    const profile = await again.start();
    await again.stop();
    expect(profile.address).to.equal(s.worker.address);
    expect((await s.db.selectFrom("agents").select("updated_at").executeTakeFirstOrThrow()).updated_at).to.equal(registeredAt);
  });

  it("bids on a private task not wrapped to it and keeps no slot while it retries", async function () {
    // The agent registers after the task is posted, so the brief is wrapped to another agent only.
    const other = new MarketClient(await s.clientOptions(s.stranger));
    await other.createAgent({ privateKey: privateKeyOf(s.stranger), supportedChains: ["arc"], capabilities: ["summarization"] });
    const poster = new MarketClient(await s.clientOptions(s.poster, keys.posterKey));
    const posted = await poster.postTask({ instructions: "Private brief for bidders.", amountRaw: 1_000_000n, capabilities: ["summarization"] });
    const { runtime, events } = await runtimeFor(async () => ({ output: "A summary long enough to pass the rules easily." }));
    await runtime.start();
    await until(async () => (await s.db.selectFrom("bids").selectAll().execute()).length === 1, 10_000, "a bid");
    // The bid is stored before its answer reaches the runtime, which then reports the refusal.
    await until(() => events.some((e) => e.type === "task_failed" && e.error.code === "NEEDS_WRAP"), 10_000, "the NEEDS_WRAP report");
    expect(runtime.activeExecutions).to.equal(0);
    expect(runtime.statuses()).to.deep.equal({ [posted.taskHash!]: "bidding" });
    const posterKey = (await s.clientOptions(s.poster, keys.posterKey)).apiKey;
    const { bids } = (
      await s.call<{ bids: Array<{ agent: string; publicKey: string }> }>("GET", `/api/v1/a2a/tasks/${posted.taskHash}/bids`, { key: posterKey })
    ).body.data;
    expect(bids.map((b) => b.agent)).to.deep.equal([s.worker.address]);
    await runtime.stop();
  });
});
