import { expect } from "chai";
import { Wallet } from "ethers";
import { WorkerRuntime, needsWrapDelay, planAfterRefusal, type RuntimeEvent } from "../../sdk/src/runtime";
import { retryAfterSeconds } from "../../sdk/src/http";
import { FakeClock } from "../support/clock";

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** A fake API: one open task whose accept answers `acceptCode`; records when accept and bid were called. */
function fakeApi(clock: FakeClock, wallet: string, acceptCode: string) {
  const accepts: number[] = [];
  const bids: number[] = [];
  const task = {
    meta: {
      chain: "arc",
      taskHash: `0x${"ab".repeat(32)}`,
      reward: { amount: "1000", unit: { symbol: "USDC", decimals: 6 } },
      requiredCapabilities: [],
    },
    state: { taskId: `0x${"ab".repeat(32)}`, status: "open", rounds: 0 },
  };
  const ok = (data: unknown) => new Response(JSON.stringify({ success: true, data }), { status: 200 });
  const fakeFetch = (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(String(input));
    const method = init?.method ?? "GET";
    if (url.pathname === "/api/v1/api-keys/whoami") return ok({ addresses: [wallet] });
    if (url.pathname === "/api/v1/a2a/register") return ok({ profile: { address: wallet, supportedChains: ["arc"], capabilities: [] } });
    if (url.pathname === "/api/v1/a2a/tasks" && method === "GET") return ok({ tasks: [task], total: 1 });
    if (url.pathname.endsWith("/accept")) {
      accepts.push(clock.now());
      return new Response(JSON.stringify({ success: false, error: { code: acceptCode, message: acceptCode } }), { status: 403 });
    }
    if (url.pathname.endsWith("/bid")) {
      bids.push(clock.now());
      return ok({ taskHash: task.state.taskId, wrapped: false });
    }
    return new Response(JSON.stringify({ success: false, error: { code: "NOT_FOUND", message: url.pathname } }), { status: 404 });
  }) as typeof globalThis.fetch;
  return { fetch: fakeFetch, accepts, bids };
}

async function runtimeWith(code: string) {
  const clock = new FakeClock();
  const wallet = Wallet.createRandom();
  const api = fakeApi(clock, wallet.address, code);
  const events: RuntimeEvent[] = [];
  const runtime = new WorkerRuntime({
    apiKey: "sk_test",
    baseUrl: "http://api.invalid",
    privateKey: wallet.privateKey,
    rpcUrls: { arc: "http://rpc.invalid" },
    // A scripted API and no chain: the gas check (a real RPC) has nothing to ask.
    checkGas: false,
    fetch: api.fetch,
    clock,
    browseIntervalMs: 7 * DAY, // browsing again never interferes with the schedule under test
    executeTask: async () => ({ output: "unused" }),
  }).on((e) => events.push(e));
  await runtime.start();
  return { runtime, clock, api, events };
}

describe("WorkerRuntime retry schedule (fake clock)", function () {
  it("needsWrapDelay: 5 s for the first 10 minutes, then doubling from 10 minutes up to a day", function () {
    expect(needsWrapDelay(0, 0, 0)).to.equal(5 * SECOND);
    expect(needsWrapDelay(0, 10 * MINUTE - 1, 0)).to.equal(5 * SECOND);
    expect(needsWrapDelay(0, 10 * MINUTE, 0)).to.equal(10 * MINUTE);
    expect(needsWrapDelay(0, 10 * MINUTE, 1)).to.equal(20 * MINUTE);
    expect(needsWrapDelay(0, 10 * MINUTE, 7)).to.equal(1280 * MINUTE);
    expect(needsWrapDelay(0, 10 * MINUTE, 8)).to.equal(DAY);
    expect(needsWrapDelay(0, 10 * MINUTE, 30)).to.equal(DAY);
  });

  it("retries NEEDS_WRAP every 5 s for 10 minutes without holding a slot, bids once, then backs off up to a day", async function () {
    const { runtime, clock, api, events } = await runtimeWith("NEEDS_WRAP");
    await clock.advanceTo(3 * DAY);
    await runtime.stop();
    const fast = api.accepts.filter((t) => t < 10 * MINUTE);
    expect(fast).to.have.length(120);
    expect(fast.every((t, i) => t === i * 5 * SECOND)).to.equal(true);
    const slowGaps = api.accepts.filter((t) => t >= 10 * MINUTE).map((t, i, all) => (i === 0 ? t - fast.at(-1)! : t - all[i - 1]!));
    expect(slowGaps.slice(0, 10)).to.deep.equal([
      5 * SECOND, // the attempt at 10:00 is the first outside the fast window
      10 * MINUTE,
      20 * MINUTE,
      40 * MINUTE,
      80 * MINUTE,
      160 * MINUTE,
      320 * MINUTE,
      640 * MINUTE,
      1280 * MINUTE,
      DAY,
    ]);
    expect(api.bids).to.deep.equal([0]);
    expect(runtime.activeExecutions).to.equal(0);
    expect(events.filter((e) => e.type === "task_failed")).to.have.length(1);
  });

  it("skips a BELOW_MIN_REWARD task for a day", async function () {
    const { runtime, clock, api } = await runtimeWith("BELOW_MIN_REWARD");
    await clock.advanceTo(DAY - 1);
    expect(api.accepts).to.deep.equal([0]);
    await clock.advanceTo(DAY);
    expect(api.accepts).to.deep.equal([0, DAY]);
    await runtime.stop();
  });

  it("drops a task that is not for this agent (NOT_OPEN) for good", async function () {
    const { runtime, clock, api, events } = await runtimeWith("NOT_OPEN");
    await clock.advanceTo(DAY);
    await runtime.stop();
    expect(api.accepts).to.deep.equal([0]);
    expect(events.find((e) => e.type === "task_failed")).to.deep.include({ error: { code: "NOT_OPEN", message: "NOT_OPEN" } });
  });
});

describe("planAfterRefusal", function () {
  it("tries a transient refusal again at the next browse instead of dropping the task for the run", function () {
    for (const code of ["INTERNAL_ERROR", "NOT_READY", "STORAGE_FAILED", "TX_NOT_FOUND", "HTTP_502", "ACCEPT_IN_PROGRESS"]) {
      expect(planAfterRefusal(code, 0, undefined), code).to.deep.equal({ kind: "next-browse" });
    }
    for (const code of ["NOT_OPEN", "NOT_TARGET_EXECUTOR", "CHAIN_UNSUPPORTED", "HTTP_404"]) {
      expect(planAfterRefusal(code, 0, undefined), code).to.deep.equal({ kind: "drop" });
    }
  });

  it("asks again directly after a lost answer or an unconfirmed assignment: the task may already be held and no longer browsable", function () {
    for (const code of ["NETWORK_ERROR", "TX_PENDING"]) {
      expect(planAfterRefusal(code, 0, undefined), code).to.deep.equal({ kind: "retry", afterMs: 5_000 });
    }
  });
});

describe("retryAfterSeconds", function () {
  it("reads delay-seconds and HTTP dates, between 1 and 60 seconds", function () {
    expect(retryAfterSeconds("7")).to.equal(7);
    expect(retryAfterSeconds(null)).to.equal(1);
    expect(retryAfterSeconds("0")).to.equal(1);
    expect(retryAfterSeconds("3600")).to.equal(60);
    expect(retryAfterSeconds(new Date(Date.now() + 20_500).toUTCString())).to.be.within(20, 21);
    expect(retryAfterSeconds("not a date")).to.equal(1);
  });
});
