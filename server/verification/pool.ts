import path from "node:path";
import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";
import { MarketError } from "@market/core/errors";
import type { Verdict, VerificationCriteria } from "@market/core/verification";

/** One evaluation sent to a pool thread. */
export interface EvaluationRequest {
  id: number;
  output: string;
  criteria: VerificationCriteria;
  brief?: string;
}

export type EvaluationReply = { id: number; verdict: Verdict } | { id: number; error: string } | { ready: true };

export interface VerifierPoolOptions {
  /** Threads evaluating at once. Default: the cores less one, at least one. */
  size?: number;
  /** Evaluations waiting for a thread; past it a call is refused with VERIFIER_BUSY. Default 64. */
  maxQueued?: number;
  /** Per-call budget (ms) of one evaluation on its thread; past it the thread is replaced and the call refused. Default 2,000. */
  budgetMs?: number;
}

/** One thread less than the machine's cores (at least one), so the API's own thread always has a core. */
export const DEFAULT_VERIFIER_POOL: Required<VerifierPoolOptions> = { size: Math.max(1, availableParallelism() - 1), maxQueued: 64, budgetMs: 2_000 };

export type VerifierPool = ReturnType<typeof createVerifierPool>;

const BOOTSTRAP = `
const { workerData } = require("node:worker_threads");
if (workerData.tsNode) require(workerData.tsNode).register({ transpileOnly: true });
require(workerData.entry);
`;

interface Job {
  request: EvaluationRequest;
  resolve(verdict: Verdict): void;
  reject(error: Error): void;
}

interface Slot {
  worker: Worker;
  /** The thread has loaded the rule engine: its start-up never counts against a call's budget. */
  ready: boolean;
  job?: Job;
  timer?: NodeJS.Timeout;
}

/**
 * The rule engine off the API's event loop: a fixed set of worker threads, a bounded queue, and a budget per call.
 * Every rule runs there (lengths, keywords' Unicode normalisation, the regex), so a maximal output costs the event
 * loop only the copy of its text. Threads start on first use and stop with `close()`.
 */
export function createVerifierPool(options: VerifierPoolOptions = {}) {
  const { size, maxQueued, budgetMs } = { ...DEFAULT_VERIFIER_POOL, ...options };
  const entry = path.join(__dirname, `pool-worker${path.extname(__filename)}`);
  const workerData = { entry, tsNode: entry.endsWith(".ts") ? require.resolve("ts-node") : null };
  const slots: Slot[] = [];
  const queue: Job[] = [];
  let nextId = 1;
  let closed = false;

  function spawn(): Slot {
    const slot: Slot = { worker: new Worker(BOOTSTRAP, { eval: true, workerData, name: "verifier" }), ready: false };
    slot.worker.unref();
    slot.worker.on("message", (reply: EvaluationReply) => {
      if ("ready" in reply) {
        slot.ready = true;
        pump();
        return;
      }
      const job = slot.job;
      if (!job || job.request.id !== reply.id) return;
      finish(slot);
      if ("verdict" in reply) job.resolve(reply.verdict);
      else job.reject(new Error(`verification failed: ${reply.error}`));
    });
    slot.worker.on("error", (error) => replace(slot, error));
    return slot;
  }

  function finish(slot: Slot) {
    clearTimeout(slot.timer);
    slot.job = undefined;
    slot.timer = undefined;
    pump();
  }

  /** A thread over its budget or broken: its call is refused, and a fresh thread takes its place. */
  function replace(slot: Slot, error: Error) {
    const job = slot.job;
    clearTimeout(slot.timer);
    slot.job = undefined;
    void slot.worker.terminate();
    const index = slots.indexOf(slot);
    if (index >= 0) slots.splice(index, 1);
    job?.reject(error);
    pump();
  }

  function pump() {
    if (closed) return;
    while (queue.length > 0) {
      const slot = slots.find((s) => s.ready && !s.job);
      if (!slot) {
        // Every thread busy or starting: start more up to `size`; a thread pumps again once it is ready or free.
        while (slots.length < size && slots.filter((s) => !s.ready).length < queue.length) slots.push(spawn());
        return;
      }
      const job = queue.shift()!;
      const busy = slot;
      busy.job = job;
      busy.timer = setTimeout(
        () => replace(busy, new MarketError("VERIFIER_BUSY", `The evaluation took longer than its ${budgetMs} ms budget.`)),
        budgetMs,
      );
      busy.worker.postMessage(job.request);
    }
  }

  return {
    /** The rule engine's verdict, evaluated on a pool thread; VERIFIER_BUSY when the queue is full or the budget runs out. */
    evaluate(output: string, criteria: VerificationCriteria, brief?: string): Promise<Verdict> {
      if (closed) return Promise.reject(new MarketError("VERIFIER_BUSY", "The verification pool is closed."));
      if (queue.length >= maxQueued) return Promise.reject(new MarketError("VERIFIER_BUSY", "Too many verifications are waiting."));
      return new Promise<Verdict>((resolve, reject) => {
        queue.push({ request: { id: nextId++, output, criteria, ...(brief === undefined ? {} : { brief }) }, resolve, reject });
        pump();
      });
    },
    async close(): Promise<void> {
      closed = true;
      for (const job of queue.splice(0)) job.reject(new MarketError("VERIFIER_BUSY", "The verification pool is closed."));
      await Promise.all(slots.splice(0).map((slot) => slot.worker.terminate()));
    },
  };
}
