/**
 * The indexer bench's catch-up (bench/indexer.ts), run in a process of its own on a thread of its own: a fresh indexer
 * of a source into an empty, migrated database until it has caught up, checked against the source's logs.
 *
 * Why a thread: the server runs its indexer in a worker thread (server/indexer/worker.ts), with a heap of its own and
 * the limits and settings the server gives it (INDEXER_RESOURCE_LIMITS, INDEXER_V8_FLAGS). Why a process: the bench's
 * own process holds Hardhat, the generated chain and its recording (over 200 MB of heap), whose garbage collection
 * (V8 shrinks an idle heap with full collections of its own, on the machine's other core) the server's process does
 * not have (on the bench's main thread, the same catch-up ran at 34-43k events/s against 40-54k in a lean process).
 * The process's main thread sits idle, as an idle API's would, and sets INDEXER_V8_FLAGS at its start, as startServer
 * does before its indexer threads start. The thread stays up for every catch-up of a bench, so the first one warms it
 * as a long catch-up warms itself.
 */
import { fork } from "node:child_process";
import path from "node:path";
import { Worker, parentPort, workerData } from "node:worker_threads";
import { toQuantity } from "ethers";
import type { ChainConfig } from "../../server/config";
import { createDatabase, type Db } from "../../server/db";
import { createIndexer } from "../../server/indexer";
import { applyIndexerV8Flags, INDEXER_RESOURCE_LIMITS } from "../../server/indexer/worker";
import { ChainRpcProvider } from "../../server/chains/rpc";
import { profiled, type Categories } from "./profile";

export interface CatchUp {
  eventsPerSec: number;
  seconds: number;
  /**
   * Events per second of the catch-up process's CPU time (user + system, every thread, the idle main thread and SQLite's
   * checkpoint thread included; the source and the PostgreSQL server are processes of their own): what the catch-up
   * costs, which the machine's other load changes far less than its wall-clock rate.
   */
  eventsPerCpuSecond: number;
  cpuSeconds: number;
  events: number;
  ranges: number;
  transactions: number;
}

/** Where a catch-up writes: a SQLite file or a PostgreSQL database, migrated and empty. */
export type CatchUpTarget = { sqlitePath: string } | { databaseUrl: string };

/** A fresh indexer of `source` into `db` (migrated, empty) until it has caught up, checked against the source's logs. */
export async function catchUp(db: Db, source: ChainConfig, pollIntervalMs: number): Promise<CatchUp> {
  const provider = new ChainRpcProvider(source);
  let ranges = 0;
  let transactions = 0;
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  const indexer = createIndexer({
    db,
    chain: source,
    provider,
    pollIntervalMs,
    onStep: (step) => void (step === "range-fetched" && ranges++),
    onProgress: () => transactions++,
  });
  let events = 0;
  let to: number;
  for (;;) {
    const result = await indexer.syncOnce();
    events += result.events;
    to = result.to;
    if (result.caughtUp) break;
  }
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  const cpuSeconds = (cpu.user + cpu.system) / 1e6;
  const logs = (await provider.send("eth_getLogs", [
    { address: source.escrow, fromBlock: toQuantity(source.startBlock), toBlock: toQuantity(to) },
  ])) as unknown[];
  provider.destroy();
  const { count } = await db
    .selectFrom("escrow_events")
    .select((eb) => eb.fn.countAll<number>().as("count"))
    .executeTakeFirstOrThrow();
  if (Number(count) !== events || events !== logs.length) {
    throw new Error(`indexed ${events} events, stored ${count}, the source has ${logs.length}`);
  }
  return {
    eventsPerSec: Math.round(events / seconds),
    seconds: Number(seconds.toFixed(3)),
    eventsPerCpuSecond: Math.round(events / cpuSeconds),
    cpuSeconds: Number(cpuSeconds.toFixed(3)),
    events,
    ranges,
    transactions,
  };
}

type Request = {
  id: number;
  target: CatchUpTarget;
  source: ChainConfig;
  pollIntervalMs: number;
  /** Under the CPU profiler, summed by these categories; the profile written to `profileFile` when given. */
  profile?: { categories: Categories; profileFile?: string };
};
export type ProfiledCatchUp = CatchUp & { ms: Record<string, number>; top: Record<string, number> };
type Answer = { id: number; result?: ProfiledCatchUp | CatchUp; error?: string };

export interface CatchUpProcess {
  catchUp(target: CatchUpTarget, source: ChainConfig, pollIntervalMs: number): Promise<CatchUp>;
  profiled(
    target: CatchUpTarget,
    source: ChainConfig,
    pollIntervalMs: number,
    categories: Categories,
    profileFile?: string,
  ): Promise<ProfiledCatchUp>;
  close(): Promise<void>;
}

/** Bootstraps this file in the thread, under ts-node as the bench itself runs. */
const BOOTSTRAP = `
const { workerData } = require("node:worker_threads");
require(workerData.tsNode).register({ transpileOnly: true });
require(workerData.entry);
`;

/** Starts the catch-up process (see the top of this file); its thread runs the catch-ups asked, one at a time. */
export function startCatchUpProcess(): CatchUpProcess {
  const child = fork(__filename, [CATCH_UP_PROCESS], {
    execArgv: ["-r", "ts-node/register/transpile-only"],
    serialization: "advanced", // the profile's categories hold regular expressions
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const waiting = new Map<number, { resolve: (value: never) => void; reject: (error: Error) => void }>();
  let next = 0;
  child.on("message", ({ id, result, error }: Answer) => {
    const waiter = waiting.get(id);
    waiting.delete(id);
    if (error !== undefined) waiter?.reject(new Error(error));
    else waiter?.resolve(result as never);
  });
  const ended = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.once("exit", (code, signal) => {
    for (const waiter of waiting.values()) waiter.reject(new Error(`the catch-up process ended (${signal ?? code})`));
    waiting.clear();
  });
  const ask = <T>(request: Omit<Request, "id">): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const id = next++;
      waiting.set(id, { resolve: resolve, reject });
      child.send({ id, ...request } satisfies Request);
    });
  return {
    catchUp: (target, source, pollIntervalMs) => ask<CatchUp>({ target, source, pollIntervalMs }),
    profiled: (target, source, pollIntervalMs, categories, profileFile) =>
      ask<ProfiledCatchUp>({ target, source, pollIntervalMs, profile: { categories, ...(profileFile ? { profileFile } : {}) } }),
    async close() {
      child.kill();
      await ended;
    },
  };
}

const CATCH_UP_PROCESS = "--catch-up-process";

// Inside the catch-up process: the settings startServer gives a process with indexer threads, then the thread, to
// which each request goes and from which each answer comes back.
if (process.argv.includes(CATCH_UP_PROCESS) && process.send) {
  applyIndexerV8Flags();
  const worker = new Worker(BOOTSTRAP, {
    eval: true,
    workerData: { entry: path.join(__dirname, `catchup${path.extname(__filename)}`), tsNode: require.resolve("ts-node"), catchUpThread: true },
    resourceLimits: INDEXER_RESOURCE_LIMITS,
  });
  process.on("message", (request: Request) => worker.postMessage(request));
  worker.on("message", (answer: Answer) => process.send!(answer));
  worker.on("error", (error) => {
    console.error(error);
    process.exit(1);
  });
  worker.on("exit", (code) => process.exit(code || 1));
  process.on("disconnect", () => process.exit(0));
}

// Inside the thread: one catch-up per request, one at a time.
if (parentPort && (workerData as { catchUpThread?: boolean } | undefined)?.catchUpThread) {
  const port = parentPort;
  let queue = Promise.resolve();
  port.on("message", (request: Request) => {
    queue = queue.then(async () => {
      const db = createDatabase(request.target);
      try {
        const work = () => catchUp(db, request.source, request.pollIntervalMs);
        if (request.profile) {
          const { result, ms, top } = await profiled(work, request.profile.categories, request.profile.profileFile);
          port.postMessage({ id: request.id, result: { ...result, ms, top } } satisfies Answer);
        } else port.postMessage({ id: request.id, result: await work() } satisfies Answer);
      } catch (error) {
        port.postMessage({ id: request.id, error: error instanceof Error ? (error.stack ?? error.message) : String(error) } satisfies Answer);
      } finally {
        await db.destroy();
      }
    });
  });
}
