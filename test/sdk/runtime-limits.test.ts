/**
 * WorkerRuntime against the service's anti-hoarding limits (docs/security.md): a new agent's assignment cap and its
 * accepts per minute. Refused accepts count against the accepts per minute, so a runtime with more slots than its cap
 * must not send an accept per free slot at every refill, nor any accept while the service asks it to wait.
 */
import { expect } from "chai";
import { stackFixture, type Stack } from "../support/stack";
import { MarketClient } from "../../sdk/src/client";
import { WorkerRuntime } from "../../sdk/src/runtime";

async function until(check: () => boolean, timeoutMs: number, what: string) {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const seed = async (s: Parameters<Parameters<typeof stackFixture>[0]>[0]) => ({
  posterKey: await s.apiKeyFor(s.poster),
  workerKey: await s.apiKeyFor(s.worker),
});
const cappedStack = stackFixture(seed, { abuse: { assignmentCap: { base: 2, completionsPerSlot: 1_000, max: 2 }, acceptsPerMinute: 20 } });
const slowStack = stackFixture(seed, { abuse: { assignmentCap: { base: 20, completionsPerSlot: 5, max: 20 }, acceptsPerMinute: 3 } });

/** The accept answers the runtime gets, by code ("assigned" for a success), as its HTTP calls show them. */
function watchAccepts() {
  const answers: Array<{ at: number; code: string; details?: Array<Record<string, unknown>> }> = [];
  const observing: typeof fetch = async (input, init) => {
    const response = await fetch(input, init);
    if (String(input).endsWith("/accept")) {
      const body = (await response.clone().json()) as { success: boolean; error?: { code: string; details?: Array<Record<string, unknown>> } };
      answers.push({ at: Date.now(), code: body.success ? "assigned" : body.error!.code, details: body.error?.details });
    }
    return response;
  };
  return { answers, observing };
}

async function post(s: Stack, posterKey: string, count: number, tag: string) {
  const poster = new MarketClient(await s.clientOptions(s.poster, posterKey));
  const result = await poster.postTasks(
    Array.from({ length: count }, (_, i) => ({
      instructions: `${tag} ${i}: summarise this short note.`,
      amountRaw: 1_000_000n,
      privacy: "public" as const,
      capabilities: ["summarization"],
    })),
  );
  expect(result.posted).to.equal(count);
}

async function runtimeOf(s: Stack, workerKey: string, observing: typeof fetch, executeMs: number) {
  const options = await s.runtimeOptions(s.worker, workerKey);
  const finalized = new Set<string>();
  const runtime = new WorkerRuntime({
    ...options,
    capabilities: ["summarization"],
    maxConcurrentTasks: 6,
    fetch: observing,
    executeTask: async ({ instructions }) => {
      await new Promise((resolve) => setTimeout(resolve, executeMs));
      return { output: `Summary of "${instructions}": a short note, summarised.` };
    },
  }).on((event) => {
    if (event.type === "task_finalized" && event.finalize.verificationResult?.passed) finalized.add(event.taskId);
  });
  return { runtime, finalized };
}

describe("WorkerRuntime and the service's limits", function () {
  this.timeout(120_000);

  it("holds no more tasks than the assignment cap the service named: one refusal per slot beyond it at the start, then none", async function () {
    const { stack: s, seeded } = await cappedStack();
    try {
      await post(s, seeded.posterKey, 8, "Capped");
      const { answers, observing } = watchAccepts();
      const { runtime, finalized } = await runtimeOf(s, seeded.workerKey, observing, 150);
      await runtime.start();
      try {
        await until(() => finalized.size === 8, 60_000, "8 tasks finalized");
      } finally {
        await runtime.stop();
      }
      const refused = answers.filter((a) => a.code === "ASSIGNMENT_CAP_REACHED");
      expect(refused[0]?.details?.[0]).to.include({ cap: 2 });
      // The first browse's six accepts meet a cap of two; afterwards at most one try beyond it per 30 s.
      expect(refused.length).to.be.at.most(5);
      expect(answers.filter((a) => a.code === "RATE_LIMITED")).to.deep.equal([]);
      expect(answers.filter((a) => a.code === "assigned")).to.have.length(8);
    } finally {
      await s.close();
    }
  });

  it("sends no accept while the service asks it to wait after RATE_LIMITED", async function () {
    const { stack: s, seeded } = await slowStack();
    try {
      await post(s, seeded.posterKey, 6, "Slow");
      const { answers, observing } = watchAccepts();
      const { runtime, finalized } = await runtimeOf(s, seeded.workerKey, observing, 50);
      await runtime.start();
      try {
        // Three accepts a minute: the first browse's six accepts get three tasks and three refusals.
        await until(() => finalized.size === 3, 30_000, "3 tasks finalized");
        await new Promise((resolve) => setTimeout(resolve, 2_000)); // the freed slots would refill here
      } finally {
        await runtime.stop();
      }
      const limited = answers.filter((a) => a.code === "RATE_LIMITED");
      expect(limited.length).to.be.at.least(1);
      const wait = Number(limited[0]!.details?.[0]?.retryAfterSeconds) * 1000;
      expect(wait).to.be.above(2_000);
      // Nothing after the first refusal, within the wait the service named.
      const first = limited[0]!.at;
      expect(answers.filter((a) => a.at > first + 500 && a.at < first + wait)).to.deep.equal([]);
      expect(answers.filter((a) => a.code === "assigned")).to.have.length(3);
    } finally {
      await s.close();
    }
  });
});
