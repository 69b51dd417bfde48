/**
 * WorkerRuntime's slots and lifecycle against a scripted API: an accept in flight holds a slot, stop() finishes
 * the work in flight and leaves no timer behind, and with the system clock the runtime keeps its process alive.
 */
import { expect } from "chai";
import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { Wallet } from "ethers";
import { WorkerRuntime, type RuntimeEvent, type TaskContext, type WorkerRuntimeOptions } from "../../sdk/src/runtime";
import { FakeClock, settle } from "../support/clock";
import { ensureCliBuilt } from "../support/cli";

const ROOT = path.resolve(__dirname, "../..");
const A = `0x${"aa".repeat(32)}`;
const B = `0x${"bb".repeat(32)}`;

function deferred<T>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

const ok = (data: unknown) => new Response(JSON.stringify({ success: true, data }), { status: 200 });
const refusal = (code: string, status = 403) => new Response(JSON.stringify({ success: false, error: { code, message: code } }), { status });

function listed(taskId: string, reward: string) {
  return {
    meta: {
      chain: "arc",
      taskHash: taskId,
      privacy: "public",
      reward: { amount: reward, unit: { symbol: "USDC", decimals: 6 } },
      requiredCapabilities: [],
    },
    state: { taskId, status: "open", rounds: 0 },
  };
}

function assigned(taskId: string, worker: string) {
  return ok({
    taskHash: taskId,
    chain: "arc",
    escrowAddress: worker,
    worker,
    deadline: 4_102_444_800_000, // 2100: the fake clock starts at 0
    rounds: 0,
    brief: { privacy: "public", publicBrief: `brief ${taskId}` },
    verification: { mode: "auto" },
  });
}

/** A scripted API: `browse` lists the open tasks, `accept` answers each accept; anything else is refused. */
function scriptedApi(options: { whoami: string; browse: () => unknown[]; accept: (taskId: string) => Response | Promise<Response> }) {
  return (async (input: string | URL | Request, init?: RequestInit) => {
    const { pathname } = new URL(String(input));
    if (pathname === "/api/v1/api-keys/whoami") return ok({ addresses: [options.whoami] });
    if (pathname === "/api/v1/a2a/register") return ok({ profile: { address: options.whoami, supportedChains: ["arc"], capabilities: [] } });
    if (pathname.startsWith("/api/v1/a2a/executors/"))
      return ok({ profile: { address: options.whoami, supportedChains: ["arc"], capabilities: [] } });
    if (pathname === "/api/v1/a2a/tasks" && (init?.method ?? "GET") === "GET") return ok({ tasks: options.browse(), total: 0 });
    if (pathname === "/api/v1/a2a/tasks/assigned") return ok({ tasks: [] });
    const accept = /^\/api\/v1\/a2a\/tasks\/(0x[0-9a-f]{64})\/accept$/.exec(pathname);
    if (accept) return options.accept(accept[1]!);
    if (pathname.endsWith("/bid")) return ok({ taskHash: pathname.split("/")[5], wrapped: false });
    return refusal("GONE", 410); // getTask while delivering: the delivery fails and the slot is freed
  }) as typeof fetch;
}

/** stop() with a fake clock: advances it until stop() answers, at most `timeoutMs` past now. */
async function stopWithin(clock: FakeClock, runtime: WorkerRuntime, timeoutMs: number) {
  let report: Awaited<ReturnType<WorkerRuntime["stop"]>> | undefined;
  const stopped = runtime.stop({ timeoutMs }).then((r) => (report = r));
  await clock.advanceTo(clock.now() + timeoutMs);
  await stopped;
  return report!;
}

function runtimeWith(options: {
  clock: FakeClock;
  wallet: { privateKey: string };
  fetch: typeof fetch;
  executeTask: (context: TaskContext) => Promise<{ output: string }>;
  browseIntervalMs?: number;
  extra?: Partial<WorkerRuntimeOptions>;
}) {
  return new WorkerRuntime({
    ...options.extra,
    apiKey: "sk_test",
    baseUrl: "http://api.invalid",
    privateKey: options.wallet.privateKey,
    rpcUrls: { arc: "http://rpc.invalid" },
    // A scripted API and no chain: the gas check (a real RPC) has nothing to ask.
    checkGas: false,
    fetch: options.fetch,
    clock: options.clock,
    maxConcurrentTasks: 1,
    browseIntervalMs: options.browseIntervalMs ?? 7 * 24 * 3600_000,
    executeTask: options.executeTask,
  });
}

describe("WorkerRuntime slots and lifecycle", function () {
  it("an accept in flight holds its slot: a retry that fires meanwhile waits (maxConcurrentTasks is never exceeded)", async function () {
    const clock = new FakeClock();
    const wallet = Wallet.createRandom();
    const acceptA = deferred<Response>();
    const hold = deferred<void>();
    let browses = 0;
    let bAccepts = 0;
    let running = 0;
    let mostRunning = 0;
    const runtime = runtimeWith({
      clock,
      wallet,
      browseIntervalMs: 4_000,
      // First browse: only B (refused NEEDS_WRAP, retried every 5 s). Later: A too, whose accept takes a while.
      fetch: scriptedApi({
        whoami: wallet.address,
        browse: () => (browses++ === 0 ? [listed(B, "2000")] : [listed(A, "1000"), listed(B, "2000")]),
        accept: (taskId) => (taskId === A ? acceptA.promise : bAccepts++ === 0 ? refusal("NEEDS_WRAP") : assigned(B, wallet.address)),
      }),
      executeTask: async () => {
        mostRunning = Math.max(mostRunning, ++running);
        await hold.promise;
        running--;
        return { output: "done" };
      },
    });
    await runtime.start();
    await clock.advanceTo(4_000); // the second browse: A's accept is in flight
    await clock.advanceTo(5_000); // B's retry is due while A's accept holds the only slot
    acceptA.resolve(assigned(A, wallet.address));
    await clock.advanceTo(30_000);
    expect(mostRunning).to.equal(1);
    expect(runtime.activeExecutions).to.equal(1);
    hold.resolve();
    await runtime.stop();
  });

  it("stop() waits for an accept in flight and finishes the task it wins", async function () {
    const clock = new FakeClock();
    const wallet = Wallet.createRandom();
    const acceptA = deferred<Response>();
    const order: string[] = [];
    const runtime = runtimeWith({
      clock,
      wallet,
      fetch: scriptedApi({ whoami: wallet.address, browse: () => [listed(A, "1000")], accept: () => acceptA.promise }),
      executeTask: async () => {
        order.push("executed");
        return { output: "done" };
      },
    });
    await runtime.start();
    await clock.advanceTo(1);
    const stopped = runtime.stop().then(() => order.push("stopped"));
    await settle();
    acceptA.resolve(assigned(A, wallet.address));
    await stopped;
    await settle();
    expect(order).to.deep.equal(["executed", "stopped"]);
    expect(runtime.activeExecutions).to.equal(0);
  });

  it("a refusal answered after stop() schedules no retry: no timer is left", async function () {
    const clock = new FakeClock();
    const wallet = Wallet.createRandom();
    const acceptA = deferred<Response>();
    const runtime = runtimeWith({
      clock,
      wallet,
      fetch: scriptedApi({ whoami: wallet.address, browse: () => [listed(A, "1000")], accept: () => acceptA.promise }),
      executeTask: async () => ({ output: "unused" }),
    });
    await runtime.start();
    await clock.advanceTo(1);
    const stopped = runtime.stop();
    acceptA.resolve(refusal("BELOW_MIN_REWARD"));
    await stopped;
    await settle();
    expect(clock.pendingTimers).to.equal(0);
  });

  it("a task bid on and then dropped (taken by another agent) is no longer reported as bidding", async function () {
    const clock = new FakeClock();
    const wallet = Wallet.createRandom();
    let accepts = 0;
    const runtime = runtimeWith({
      clock,
      wallet,
      fetch: scriptedApi({
        whoami: wallet.address,
        browse: () => [listed(A, "1000")],
        accept: () => refusal(accepts++ === 0 ? "NEEDS_WRAP" : "NOT_OPEN"),
      }),
      executeTask: async () => ({ output: "unused" }),
    });
    await runtime.start();
    await clock.advanceTo(1);
    expect(runtime.statuses()).to.deep.equal({ [A]: "bidding" });
    await clock.advanceTo(10_000);
    expect(accepts).to.equal(2);
    expect(runtime.statuses()).to.deep.equal({});
    await runtime.stop();
  });

  it("takes the API key's wallet in any letter case (whoami answering lowercase)", async function () {
    const wallet = Wallet.createRandom();
    const fetch = scriptedApi({ whoami: wallet.address.toLowerCase(), browse: () => [], accept: () => refusal("NOT_OPEN") });
    const registering = runtimeWith({ clock: new FakeClock(), wallet, fetch, executeTask: async () => ({ output: "unused" }) });
    expect((await registering.start()).address.toLowerCase()).to.equal(wallet.address.toLowerCase());
    await registering.stop();
    const restarting = new WorkerRuntime({
      apiKey: "sk_test",
      baseUrl: "http://api.invalid",
      existingPrivateKey: wallet.privateKey,
      rpcUrls: { arc: "http://rpc.invalid" },
      fetch,
      clock: new FakeClock(),
      executeTask: async () => ({ output: "unused" }),
    });
    await restarting.start();
    await restarting.stop();
  });

  it("with the system clock, keeps its process alive while it runs and lets it exit after stop()", async function () {
    this.timeout(60_000);
    ensureCliBuilt();
    const script = `
      const { WorkerRuntime } = require(${JSON.stringify(path.join(ROOT, "sdk/dist/sdk/src/index.js"))});
      const { Wallet } = require("ethers");
      const wallet = Wallet.createRandom();
      let browses = 0;
      const ok = (data) => new Response(JSON.stringify({ success: true, data }), { status: 200 });
      const runtime = new WorkerRuntime({
        apiKey: "sk_test", baseUrl: "http://api.invalid", privateKey: wallet.privateKey, rpcUrls: { arc: "http://rpc.invalid" },
        browseIntervalMs: 20, executeTask: async () => ({ output: "unused" }),
        fetch: async (input) => {
          const path = new URL(String(input)).pathname;
          if (path === "/api/v1/api-keys/whoami") return ok({ addresses: [wallet.address] });
          if (path === "/api/v1/a2a/register") return ok({ profile: { address: wallet.address, supportedChains: ["arc"], capabilities: [] } });
          if (++browses === 3) void runtime.stop();
          return ok({ tasks: [], total: 0 });
        },
      });
      process.on("exit", () => console.log("browses " + browses));
      void runtime.start();`;
    const { stdout } = await promisify(execFile)(process.execPath, ["-e", script], { cwd: ROOT, timeout: 20_000 });
    expect(stdout.trim()).to.equal("browses 3");
  });

  describe("executeTask failures, timeouts and a bounded stop()", function () {
    /** A runtime holding task A (its delivery is refused by the scripted API: GONE), with its events. */
    function holding(executeTask: (context: TaskContext) => Promise<{ output: string }>, extra: Partial<WorkerRuntimeOptions> = {}) {
      const clock = new FakeClock();
      const wallet = Wallet.createRandom();
      let browses = 0;
      const events: RuntimeEvent[] = [];
      const runtime = runtimeWith({
        clock,
        wallet,
        browseIntervalMs: 60_000,
        fetch: scriptedApi({
          whoami: wallet.address,
          browse: () => (browses++ === 0 ? [listed(A, "1000")] : [listed(B, "1000")]),
          accept: (taskId) => assigned(taskId, wallet.address),
        }),
        executeTask,
        extra: { releaseFailed: false, ...extra },
      }).on((e) => events.push(e));
      return { clock, runtime, events };
    }

    it("tries executeTask again after a throw, backing off 2 s then 4 s, and delivers the third try's output", async function () {
      const tries: Array<{ attempt: number; at: number }> = [];
      const { clock, runtime, events } = holding(async (context) => {
        if (context.taskId === A) tries.push({ attempt: context.attempt, at: clock.now() });
        if (context.attempt < 3) throw new Error(`model unavailable (${context.attempt})`);
        return { output: "a useful answer" };
      });
      await runtime.start();
      await clock.advanceTo(10_000);
      expect(tries).to.deep.equal([
        { attempt: 1, at: 0 },
        { attempt: 2, at: 2_000 },
        { attempt: 3, at: 6_000 },
      ]);
      // The third try's output went to delivery (which this scripted API refuses): no EXECUTION_FAILED.
      const failed = events.filter((e) => e.type === "task_failed" && e.taskId === A);
      expect(failed.map((e) => e.type === "task_failed" && e.error.code)).to.deep.equal(["GONE"]);
      await runtime.stop();
    });

    it("a try past taskTimeoutMs is aborted and counts as failed; after executeAttempts tries the task is given up and its slot taken again", async function () {
      const signals: AbortSignal[] = [];
      const started: string[] = [];
      const { clock, runtime, events } = holding(
        (context) => {
          started.push(`${context.taskId === A ? "A" : "B"}${context.attempt}`);
          signals.push(context.signal);
          return new Promise(() => {}); // hangs, ignoring its signal
        },
        { taskTimeoutMs: 5_000, executeAttempts: 2, retryDelayMs: 1_000 },
      );
      await runtime.start();
      await clock.advanceTo(5_999);
      expect(started).to.deep.equal(["A1"]);
      expect(signals[0]!.aborted).to.equal(true);
      expect((signals[0]!.reason as { code?: string }).code).to.equal("TASK_TIMEOUT");
      await clock.advanceTo(11_000); // the second try (at 6 s) times out at 11 s: A is given up, B taken at once
      const failed = events.find((e) => e.type === "task_failed");
      expect(failed).to.deep.include({ type: "task_failed", taskId: A });
      expect(failed && failed.type === "task_failed" && failed.error.code).to.equal("TASK_TIMEOUT");
      expect(failed && failed.type === "task_failed" && failed.error.message).to.match(/failed 2 time\(s\).*taskTimeoutMs \(5000 ms\)/);
      expect(started).to.deep.equal(["A1", "A2", "B1"]);
      expect(runtime.statuses()).to.deep.equal({ [B]: "working" });
      const report = await stopWithin(clock, runtime, 1_000);
      expect(report.left).to.deep.equal([{ taskId: B, status: "working" }]);
    });

    it("stop() returns within its timeout, aborts the task in hand, says what it left, and delivers nothing for it later", async function () {
      let finish!: (value: { output: string }) => void;
      let signal: AbortSignal | undefined;
      const { clock, runtime, events } = holding((context) => {
        signal = context.signal;
        return new Promise((resolve) => (finish = resolve));
      });
      await runtime.start();
      await clock.advanceTo(1);
      expect(runtime.statuses()).to.deep.equal({ [A]: "working" });
      const report = await stopWithin(clock, runtime, 2_000);
      expect(report).to.deep.equal({ left: [{ taskId: A, status: "working" }], awaitingVerdict: [] });
      expect(signal!.aborted).to.equal(true);
      expect(runtime.activeExecutions).to.equal(0);
      finish({ output: "too late" });
      await settle();
      const failed = events.filter((e) => e.type === "task_failed");
      expect(failed.map((e) => e.type === "task_failed" && e.error.message)).to.deep.equal([
        "executeTask failed 1 time(s); the last: stop() stopped waiting for this task; a restart resumes it.",
      ]);
      expect(clock.pendingTimers).to.equal(0);
    });

    it("stop() during the back-off between tries ends the tries at once (no release): the task stays held for a restart", async function () {
      const { clock, runtime, events } = holding(async () => {
        throw new Error("model down");
      });
      await runtime.start();
      await clock.advanceTo(1); // the first try failed; the second is due at 2 s
      const report = await stopWithin(clock, runtime, 10);
      expect(report.left).to.deep.equal([]);
      const failed = events.filter((e) => e.type === "task_failed");
      expect(failed).to.have.length(1);
      expect(failed[0]).to.deep.include({ taskId: A });
      expect(failed[0]).to.not.have.property("released");
      expect(clock.pendingTimers).to.equal(0);
    });
  });

  it("says clearly that a private key is needed (not OWNER_MISMATCH)", function () {
    expect(() => new WorkerRuntime({ apiKey: "sk_test", rpcUrls: { arc: "http://rpc.invalid" }, executeTask: async () => ({ output: "x" }) }))
      .to.throw(/needs privateKey/)
      .with.property("code", "PRIVATE_KEY_REQUIRED");
  });
});
