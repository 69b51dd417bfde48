import path from "node:path";
import { setFlagsFromString } from "node:v8";
import { Worker } from "node:worker_threads";
import type { ChainConfig } from "../config";
import type { BlockRangeOptions } from "./log-range";
import type { IndexerLogger, RangeProgress } from "./sync";

/**
 * The indexer thread's V8 limits: a young generation of 64 MB. A range's decoded logs and rows live across the awaits
 * of its fetch and store; with V8's default they outlive young collections and are promoted, and a catch-up then runs
 * full collections of the old generation every few ranges (five or six per 23,000 events in bench/indexer.ts, with
 * concurrent marking on the other threads). Fewer are promoted with this (39-45k events/s against 34-41k); the full
 * collections left after a quiet spell are what INDEXER_V8_FLAGS is for. It costs up to 64 MB of memory while the
 * thread is busy.
 */
export const INDEXER_RESOURCE_LIMITS = { maxYoungGenerationSizeMb: 64 } as const;

/**
 * V8 settings of a process that runs indexer threads (`INDEXER_V8_TUNING`, default on; startServer applies them before
 * its first indexer thread starts). They are the process's, not one thread's (V8 has no such setting per isolate):
 *   - `--heap-growing-percent=300`: after a full collection a heap may grow to four times its live objects before the
 *     next one. After a quiet spell V8's own limit was 1.3 to 1.5 times them (--trace-gc), and the next catch-up ran a
 *     full collection of the old generation every few ranges (five to seven per 23,600 events in bench/indexer.ts,
 *     with concurrent marking on the other core);
 *   - `--no-memory-reducer` (threads started after this): an idle heap is not shrunk by the collections V8 schedules
 *     after a burst, which leave it that low limit.
 * bench/indexer.ts's catch-ups replayed alone after 45 s of idleness each: 37-38k events/s without them, 46.6k and
 * 55.7k with (back to back, without the quiet spell, 50-60k either way). The cost is memory: each heap of the process
 * (the API's too) holds up to four times its live objects between full collections, and idle threads keep theirs.
 */
export const INDEXER_V8_FLAGS = ["--heap-growing-percent=300", "--no-memory-reducer"] as const;
let v8FlagsApplied = false;

/** Sets INDEXER_V8_FLAGS for this process (once; later calls do nothing). */
export function applyIndexerV8Flags(): void {
  if (v8FlagsApplied) return;
  for (const flag of INDEXER_V8_FLAGS) setFlagsFromString(flag);
  v8FlagsApplied = true;
}

/** Whether this process runs with INDEXER_V8_FLAGS. */
export function indexerV8FlagsApplied(): boolean {
  return v8FlagsApplied;
}

export interface IndexerWorkerOptions {
  /** PostgreSQL connection string; when absent, the SQLite file at `sqlitePath` (WAL mode, its own connection). */
  databaseUrl?: string;
  /** SQLite file; `:memory:` cannot be shared with a worker, run the indexer in-process for that. */
  sqlitePath: string;
  chain: ChainConfig;
  pollIntervalMs: number;
  /** Follow the chain's new heads over its node's WebSocket (heads.ts), polling as the fallback. Default false. */
  subscribe?: boolean;
  blockRange?: BlockRangeOptions;
  /**
   * The read models to feed, loaded inside the thread (functions cannot cross it): a module's absolute path (a .ts
   * path under ts-node; `require.resolve` of it is the simplest) and the name of its export that returns the
   * `Projection[]`. Default: the escrow task projection alone.
   */
  projections?: ProjectionsModule;
  /** Receives the worker's log lines. */
  logger?: IndexerLogger;
  /** Failed syncs (the worker retries them) and an unexpected end of the thread. */
  onError?: (error: Error) => void;
  /** Every committed range. */
  onProgress?: (progress: RangeProgress) => void;
}

export interface IndexerWorker {
  readonly worker: Worker;
  /** Settles with the thread's exit code once it has ended, however it ended. */
  readonly exited: Promise<number>;
  /** Stops after the current transaction commits, closes the worker's database and provider, waits for the thread. */
  stop(): Promise<void>;
}

export interface ProjectionsModule {
  module: string;
  export: string;
}

/** What the parent hands the thread (structured-cloned): the options that are data, and how to load the entry. */
export type IndexerWorkerData = Pick<
  IndexerWorkerOptions,
  "databaseUrl" | "sqlitePath" | "chain" | "pollIntervalMs" | "subscribe" | "blockRange" | "projections"
> & {
  entry: string;
  tsNode: string | null;
};

/** Messages from the thread. */
export type IndexerWorkerMessage =
  | { type: "progress"; progress: RangeProgress }
  | { type: "error"; error: { name: string; message: string; stack?: string } }
  | { type: "log"; level: keyof IndexerLogger; obj: object; msg: string };

const STOP_TIMEOUT_MS = 10_000;
const RESTART_DELAY_MS = 1_000;
const MAX_RESTART_DELAY_MS = 30_000;

/**
 * Bootstraps the entry file; under ts-node (the entry is .ts) the thread registers ts-node first, since a worker does
 * not inherit the parent's require hooks.
 */
const BOOTSTRAP = `
const { workerData } = require("node:worker_threads");
if (workerData.tsNode) require(workerData.tsNode).register({ transpileOnly: true });
require(workerData.entry);
`;

/**
 * Runs the indexer of one chain in a worker thread with its own database connection and JSON-RPC provider, so a
 * large catch-up never holds up the API's event loop. The database must already be migrated.
 */
export function startIndexerWorker(options: IndexerWorkerOptions): IndexerWorker {
  const entry = path.join(__dirname, `worker-entry${path.extname(__filename)}`);
  const data: IndexerWorkerData = {
    entry,
    tsNode: entry.endsWith(".ts") ? require.resolve("ts-node") : null,
    databaseUrl: options.databaseUrl,
    sqlitePath: options.sqlitePath,
    chain: options.chain,
    pollIntervalMs: options.pollIntervalMs,
    subscribe: options.subscribe,
    blockRange: options.blockRange,
    projections: options.projections,
  };
  const worker = new Worker(BOOTSTRAP, {
    eval: true,
    workerData: data,
    name: `indexer-${options.chain.name}`,
    resourceLimits: INDEXER_RESOURCE_LIMITS,
  });
  let stopping = false;

  worker.on("message", (message: IndexerWorkerMessage) => {
    if (message.type === "progress") options.onProgress?.(message.progress);
    else if (message.type === "error") options.onError?.(Object.assign(new Error(message.error.message), message.error));
    else options.logger?.[message.level](message.obj, message.msg);
  });
  worker.on("error", (error) => options.onError?.(error));
  const exited = new Promise<number>((resolve) => {
    worker.once("exit", (code) => {
      if (!stopping) options.onError?.(new Error(`indexer worker of ${options.chain.name} exited unexpectedly (code ${code})`));
      resolve(code);
    });
  });

  return {
    worker,
    exited,
    async stop() {
      stopping = true;
      worker.postMessage({ type: "stop" });
      const timer = setTimeout(() => void worker.terminate(), STOP_TIMEOUT_MS);
      await exited;
      clearTimeout(timer);
    },
  };
}

export interface SupervisedIndexerWorkerOptions extends IndexerWorkerOptions {
  /** Pause before a thread that ended unexpectedly is started again, doubling after each such end. Default 1 s. */
  restartDelayMs?: number;
  /** Longest pause; a thread that ran at least this long starts the doubling over. Default 30 s. */
  maxRestartDelayMs?: number;
}

export interface SupervisedIndexerWorker {
  /** The running thread; undefined while waiting to start the next one, and after stop(). */
  readonly current: IndexerWorker | undefined;
  /** Threads started again after an unexpected end. */
  readonly restarts: number;
  /** Stops the running thread (see IndexerWorker.stop) and starts no other. */
  stop(): Promise<void>;
}

/**
 * startIndexerWorker, started again with a back-off whenever the thread ends other than by stop() (a crash, an
 * out-of-memory end, a terminate()): it resumes from the cursor. Each end is reported to `onError` first.
 */
export function superviseIndexerWorker(options: SupervisedIndexerWorkerOptions): SupervisedIndexerWorker {
  const initialDelay = options.restartDelayMs ?? RESTART_DELAY_MS;
  const maxDelay = Math.max(initialDelay, options.maxRestartDelayMs ?? MAX_RESTART_DELAY_MS);
  let current: IndexerWorker | undefined;
  let restarts = 0;
  let failures = 0;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;

  const start = () => {
    const startedAt = Date.now();
    const handle = startIndexerWorker(options);
    current = handle;
    void handle.exited.then(() => {
      if (stopped || current !== handle) return;
      current = undefined;
      failures = Date.now() - startedAt >= maxDelay ? 1 : failures + 1;
      const delay = Math.min(maxDelay, initialDelay * 2 ** Math.min(failures - 1, 20));
      options.logger?.warn({ chain: options.chain.name, delayMs: delay, restarts }, "indexer: worker thread ended; starting another");
      timer = setTimeout(() => {
        timer = undefined;
        if (stopped) return;
        restarts++;
        start();
      }, delay);
    });
  };
  start();

  return {
    get current() {
      return current;
    },
    get restarts() {
      return restarts;
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      timer = undefined;
      const running = current;
      current = undefined;
      await running?.stop();
    },
  };
}
