/**
 * Workers that recover (issue 15, items 1, 2 and 4), end to end on the local stack: `GET /api/v1/a2a/tasks/assigned`,
 * a restarted WorkerRuntime resuming what its wallet holds, executeTask failures tried again and then handed back,
 * stop() bounded, `registered` once, and the reward in raw units and decimal.
 */
import { expect } from "chai";
import { stackFixture, type Stack } from "../support/stack";
import { MarketClient } from "../../sdk/src/client";
import { WorkerRuntime, type RuntimeEvent, type TaskContext, type WorkerRuntimeOptions } from "../../sdk/src/runtime";
import type { AssignedTasksAnswer } from "@market/core/api";

async function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 30_000) {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** API keys of the poster and the worker (the runtime registers the worker itself), and the stranger's. */
const seededStack = stackFixture(async (s) => ({
  posterKey: await s.apiKeyFor(s.poster),
  workerKey: await s.apiKeyFor(s.worker),
  strangerKey: await s.apiKeyFor(s.stranger),
}));

describe("Workers that recover", function () {
  this.timeout(120_000);
  let s: Stack;
  let keys: { posterKey: string; workerKey: string; strangerKey: string };
  let poster: MarketClient;
  beforeEach(async function () {
    ({ stack: s, seeded: keys } = await seededStack());
    poster = new MarketClient(await s.clientOptions(s.poster, keys.posterKey));
  });
  afterEach(async function () {
    await s.close();
  });

  async function runtimeFor(executeTask: (context: TaskContext) => Promise<{ output: string }>, extra: Partial<WorkerRuntimeOptions> = {}) {
    const options = await s.runtimeOptions(s.worker, keys.workerKey);
    const events: RuntimeEvent[] = [];
    const runtime = new WorkerRuntime({
      ...options,
      capabilities: ["summarization"],
      maxConcurrentTasks: 2,
      browseIntervalMs: 100,
      executeTask,
      ...extra,
    }).on((event) => events.push(event));
    return { runtime, events };
  }

  const publicTask = (instructions: string, extra: Partial<Parameters<MarketClient["postTask"]>[0]> = {}) =>
    poster.postTask({ instructions, amountRaw: 2_500_000n, privacy: "public", capabilities: ["summarization"], ...extra });

  const finalized = (events: RuntimeEvent[], taskHash: string) =>
    events.flatMap((e) => (e.type === "task_finalized" && e.taskId === taskHash ? [[e.finalize.status, e.finalize.verificationResult?.passed]] : []));

  it("GET /api/v1/a2a/tasks/assigned lists the key's wallet's tasks as worker, with state and rounds left; another wallet sees none", async function () {
    const worker = new MarketClient(await s.clientOptions(s.worker, keys.workerKey));
    await worker.createAgent({
      privateKey: (await s.clientOptions(s.worker)).executor.privateKey,
      supportedChains: ["arc"],
      capabilities: ["summarization"],
    });
    const first = await publicTask("Summarise the first memo about harbour logistics.");
    const second = await publicTask("Summarise the second memo about rail freight.", { verificationMode: "manual" });
    await s.sync();
    const accepted = await worker.acceptTask(first.taskHash!);
    await worker.acceptTask(second.taskHash!);
    // One time unit on the wire: the escrow's deadline (block-time seconds) answered as Unix milliseconds.
    const onChainDeadline = Number((await s.escrow.getTask(first.taskHash!)).deadline);
    expect(accepted.deadline).to.equal(onChainDeadline * 1000);
    expect((await poster.getTask(first.taskHash!)).meta.deadline).to.equal(onChainDeadline * 1000);
    await worker.deliverResult({ taskHash: second.taskHash!, output: "The second memo argues rail freight needs new sidings." });
    await s.sync();

    const { tasks } = (await s.call<AssignedTasksAnswer>("GET", "/api/v1/a2a/tasks/assigned", { key: keys.workerKey })).body.data;
    expect(tasks.map((t) => [t.meta.taskHash, t.state.status, t.state.rounds, t.roundsLeft])).to.have.deep.members([
      [first.taskHash, "assigned", 0, 3],
      [second.taskHash, "awaiting_verification", 1, 2],
    ]);
    expect(tasks.find((t) => t.meta.taskHash === second.taskHash)!.state.resultData?.output).to.match(/new sidings/);
    expect((await worker.assignedTasks()).tasks).to.have.length(2);

    // The poster and a stranger hold none of them; without a key the route is refused.
    for (const key of [keys.posterKey, keys.strangerKey]) {
      expect((await s.call<AssignedTasksAnswer>("GET", "/api/v1/a2a/tasks/assigned", { key })).body.data.tasks).to.deep.equal([]);
    }
    const anonymous = await s.call<unknown>("GET", "/api/v1/a2a/tasks/assigned");
    expect(anonymous.status).to.equal(401);
    expect(anonymous.body).to.deep.nested.include({ "error.code": "AUTH_REQUIRED" });
    expect((await s.call("GET", "/api/v1/a2a/tasks/held", { key: keys.workerKey })).status).to.equal(404, "one route: /assigned");
  });

  it("a runtime stopped after delivering, restarted, follows the verdict; a round rejected while it was stopped is delivered again", async function () {
    const rounds: Array<{ taskId: string; round: number; reasons?: string[] }> = [];
    const execute = async (context: TaskContext) => {
      rounds.push({ taskId: context.taskId, round: context.round, reasons: context.previousAttempt?.reasons });
      return { output: `Round ${context.round}: a summary of the audit naming each finding and its owner.` };
    };
    const first = await runtimeFor(execute);
    await first.runtime.start();
    const approved = await publicTask("Summarise the audit for the board (approved later).", { verificationMode: "manual" });
    const rejected = await publicTask("Summarise the audit for the council (rejected while stopped).", { verificationMode: "manual" });
    await until(
      () => finalized(first.events, approved.taskHash!).length === 1 && finalized(first.events, rejected.taskHash!).length === 1,
      "both delivered",
    );
    expect(await first.runtime.stop()).to.deep.equal({
      left: [],
      awaitingVerdict: [approved.taskHash, rejected.taskHash].sort() as string[],
    });

    // While no runtime runs: one rejection.
    await poster.reviewResult({ taskHash: rejected.taskHash!, approve: false, reasons: ["Name the council's deadline."] });

    const second = await runtimeFor(execute);
    await second.runtime.start();
    await until(() => finalized(second.events, rejected.taskHash!).length === 2, "the rejected task followed and delivered again");
    expect(finalized(second.events, rejected.taskHash!)).to.deep.equal([
      ["failed", false],
      ["awaiting_verification", undefined],
    ]);
    expect(rounds.filter((r) => r.taskId === rejected.taskHash)).to.deep.equal([
      { taskId: rejected.taskHash, round: 1, reasons: undefined },
      { taskId: rejected.taskHash, round: 2, reasons: ["Name the council's deadline."] },
    ]);

    const before = await s.usdc.balanceOf(s.worker.address);
    await poster.reviewResult({ taskHash: approved.taskHash!, approve: true });
    await until(() => finalized(second.events, approved.taskHash!).length === 1, "the approval followed after the restart");
    expect(finalized(second.events, approved.taskHash!)).to.deep.equal([["verified", true]]);
    expect(await s.usdc.balanceOf(s.worker.address)).to.equal(before + 2_250_000n); // 10% fee
    await second.runtime.stop();
    expect(rounds.filter((r) => r.taskId === approved.taskHash)).to.have.length(1, "delivered once");
    // A restart registers nothing new: `registered` came once, from the first start.
    expect(first.events.filter((e) => e.type === "registered")).to.have.length(1);
    expect(second.events.filter((e) => e.type === "registered")).to.deep.equal([]);
  });

  it("a runtime stopped before delivering (stop() gives up on a hung task) delivers it once after a restart", async function () {
    let hungSignal: AbortSignal | undefined;
    let release!: () => void;
    const first = await runtimeFor(
      (context) =>
        new Promise((resolve) => {
          hungSignal = context.signal;
          release = () => resolve({ output: "A late answer from the runtime that was stopped, never to be delivered." });
        }),
    );
    await first.runtime.start();
    const posted = await publicTask("Summarise the minutes of the harbour board.");
    await until(() => first.runtime.statuses()[posted.taskHash!] === "working", "the task in hand");
    const started = Date.now();
    const report = await first.runtime.stop({ timeoutMs: 300 });
    expect(Date.now() - started).to.be.below(5_000);
    expect(report.left).to.deep.equal([{ taskId: posted.taskHash, status: "working" }]);
    expect(hungSignal!.aborted).to.equal(true);
    release(); // the stopped runtime's executeTask answers late: nothing is delivered for it
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await poster.getTask(posted.taskHash!)).state).to.deep.include({ status: "assigned", rounds: 0 });

    const outputs: string[] = [];
    const second = await runtimeFor(async (context) => {
      const output = `Summary (${context.round}): the harbour board approved two new berths.`;
      outputs.push(output);
      return { output };
    });
    await second.runtime.start();
    await until(() => finalized(second.events, posted.taskHash!).length === 1, "delivered after the restart");
    await second.runtime.stop();
    expect(finalized(second.events, posted.taskHash!)).to.deep.equal([["verified", true]]);
    expect(outputs).to.have.length(1);
    const task = await poster.getTask(posted.taskHash!);
    expect(task.state).to.deep.include({ status: "verified", rounds: 1 });
    expect(await s.db.selectFrom("deliveries").select("output").where("task_hash", "=", posted.taskHash!).execute()).to.deep.equal([
      { output: outputs[0] },
    ]);
  });

  it("executeTask that keeps throwing is tried executeAttempts times with back-off, then released (open again) and reported task_failed", async function () {
    const tries: number[] = [];
    const { runtime, events } = await runtimeFor(
      async (context) => {
        tries.push(Date.now());
        throw new Error(`the model is down (try ${context.attempt})`);
      },
      { retryDelayMs: 200, executeAttempts: 3 },
    );
    await runtime.start();
    const posted = await publicTask("Summarise the quarterly report on ferries.");
    await until(() => events.some((e) => e.type === "task_failed"), "the task given up");
    const failed = events.find((e) => e.type === "task_failed")!;
    expect(failed).to.deep.include({ type: "task_failed", taskId: posted.taskHash, released: true });
    expect(failed.type === "task_failed" && failed.error).to.deep.equal({
      code: "EXECUTION_FAILED",
      message: "executeTask failed 3 time(s); the last: the model is down (try 3)",
    });
    expect(tries).to.have.length(3);
    expect(tries[1]! - tries[0]!).to.be.at.least(200);
    expect(tries[2]! - tries[1]!).to.be.at.least(400);
    await s.sync();
    const task = await poster.getTask(posted.taskHash!);
    expect(task.state.status).to.equal("open");
    expect(task.state.worker).to.equal(undefined);
    // Never taken again by this runtime, though it stays open.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(tries).to.have.length(3);
    expect(runtime.activeExecutions).to.equal(0);
    await runtime.stop();
  });

  it("a hung executeTask times out (taskTimeoutMs), frees its slot and is released; TaskContext carries the reward raw and decimal", async function () {
    const contexts: TaskContext[] = [];
    const { runtime, events } = await runtimeFor(
      (context) => {
        contexts.push(context);
        return new Promise(() => {});
      },
      { taskTimeoutMs: 300, executeAttempts: 2, retryDelayMs: 50, maxConcurrentTasks: 1 },
    );
    await runtime.start();
    const posted = await publicTask("Summarise the ferry timetable changes.");
    await until(() => events.some((e) => e.type === "task_failed"), "the hung task given up");
    expect(events.find((e) => e.type === "task_failed")).to.deep.include({ taskId: posted.taskHash, released: true });
    const failed = events.find((e) => e.type === "task_failed");
    expect(failed?.type === "task_failed" && failed.error.code).to.equal("TASK_TIMEOUT");
    expect(contexts.map((c) => [c.attempt, c.signal.aborted])).to.deep.equal([
      [1, true],
      [2, true],
    ]);
    expect(contexts[0]!.reward).to.deep.equal({ amount: "2500000", amountRaw: 2_500_000n, decimal: "2.5", symbol: "USDC", decimals: 6 });
    expect(runtime.activeExecutions).to.equal(0);
    // The slot is free: the next task is taken.
    const next = await publicTask("Summarise the ferry fare changes.");
    await until(() => contexts.some((c) => c.taskId === next.taskHash), "the next task taken");
    const report = await runtime.stop({ timeoutMs: 100 });
    expect(report.left).to.deep.equal([{ taskId: next.taskHash, status: "working" }]);
  });

  it("registers again (and says registered) only when the registration differs from the options", async function () {
    const first = await runtimeFor(async () => ({ output: "unused" }));
    await first.runtime.start();
    await first.runtime.stop();
    await first.runtime.start(); // the same runtime restarted
    await first.runtime.stop();
    expect(first.events.filter((e) => e.type === "registered")).to.have.length(1);
    const changed = await runtimeFor(async () => ({ output: "unused" }), { capabilities: ["summarization", "translation"] });
    await changed.runtime.start();
    await changed.runtime.stop();
    const registered = changed.events.filter((e) => e.type === "registered");
    expect(registered).to.have.length(1);
    expect(registered[0]!.type === "registered" && registered[0]!.profile.capabilities).to.deep.equal(["summarization", "translation"]);
  });
});
