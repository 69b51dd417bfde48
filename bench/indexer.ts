/**
 * Indexer benchmark. Starts a Hardhat node on a free loopback port (a child process), deploys mock USDC and the
 * escrow with the real deploy code, generates more than 20,000 escrow events (tasks created in batches, assigned,
 * delivered, judged and cancelled), then records the chain: every escrow log and every block header, read once from the
 * node. A catch-up's source is that recording replayed: a JSON-RPC server on loopback, in a process of its own,
 * answering eth_getLogs, eth_getBlockByNumber and eth_blockNumber from memory (bench/lib/replay-rpc.ts), since the
 * Hardhat node itself serves only 9-18k events/s of eth_getLogs on this machine and would cap the figure. Then
 *   - where a catch-up's time goes: one from the replay under the CPU profiler (by category, and the functions with the
 *     most self time);
 *   - the node alone serving the catch-up's reads without storing (the ceiling of any catch-up from it);
 *   - catch-up under API load: the indexer's worker thread catching up from the node into a fresh file while the main
 *     thread serves the API over that file (buildApp) to a local client loop of browse reads and sign-in nonce writes;
 *     the main thread's event-loop delay (p99 and max) is what the API's callers feel;
 *   - BENCH_RUNS runs (default 5; every run's catch-ups first, back to back, then every run's live phases), each with
 *     the machine's calibration and the load average: a catch-up from the replay
 *     into a fresh SQLite file and into a fresh PostgreSQL database (a throwaway server on loopback, when its binaries
 *     are installed), one from the live node for comparison, and the live delay from a block being mined to its task
 *     being readable by the API's read path, with the indexer in its worker thread following new heads over the
 *     node's WebSocket (eth_subscribe), then polling alone (p50/p99 over BENCH_LIVE_SAMPLES blocks each).
 * Writes bench/indexer.json (the medians of the runs, and every run) and prints a table. Stops by itself.
 *   npm run bench:indexer
 * BENCH_RECORDING=<file> also writes the recording there; with BENCH_REPLAY_ONLY=1 an earlier recording is replayed
 * alone (catch-ups only, printed, nothing written).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import path from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import type { AddressInfo } from "node:net";
import { sql } from "kysely";
import { freePort, startLocalChain } from "../scripts/lib/local-chain";
import type { ChainConfig } from "../server/config";
import { createDatabase, migrateToLatest, type Db } from "../server/db";
import { startIndexerWorker } from "../server/indexer";
import { ChainRpcProvider } from "../server/chains/rpc";
import { readHeader, readLogs } from "../server/indexer/node";
import { createChains } from "../server/chains";
import { createBlobStore } from "../server/storage/blob-store";
import { buildApp } from "../server/app";
import type { Categories } from "./lib/profile";
import { startBenchPostgres, type BenchPostgres } from "./lib/postgres";
import { calibrated, machineFigures, type MachineFigures } from "./lib/machine";
import { recordChain, startReplayProcess } from "./lib/replay-rpc";
import { startCatchUpProcess, type CatchUp, type CatchUpProcess } from "./lib/catchup";

/** A single stall shows in the maximum, hardly in the p99 (848 ms and 41 ms before transactions were bounded). */
const BARS = {
  catchupEventsPerSec: 50_000,
  postgresCatchupEventsPerSec: 30_000,
  visibleP99Ms: 100,
  visiblePollingP99Ms: 250,
  apiLoopDelayP99Ms: 50,
  apiLoopDelayMaxMs: 150,
};
/** Runs of the catch-ups and live delays, each with its own calibration and load average. */
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
/** What the catch-up figures are measured from, in the JSON beside them. */
const REPLAY_SOURCE =
  "replay: the escrow logs and block headers of the generated Hardhat chain, recorded once from the node and served from memory by a " +
  "JSON-RPC server on loopback in a process of its own (bench/lib/replay-rpc.ts); nodeCatchupEventsPerSec is the same catch-up from the live Hardhat node";
const BATCHES = Number(process.env.BENCH_BATCHES ?? 1_000); // createTasks of 20: 20,000 TaskCreated
const BATCH = 20;
const ASSIGNED = 1_500;
const SUBMITTED = 1_000;
const JUDGED = 600; // half pass (two events each), half fail
const CANCELLED = 200;
const LIVE_SAMPLES = Number(process.env.BENCH_LIVE_SAMPLES ?? 200);
const WARM_UP_SAMPLES = 5;
/** Empty blocks after each phase, so the catch-up spans several eth_getLogs ranges. */
const EMPTY_BLOCKS_AFTER_PHASE = 600;
/** The server's default indexer poll interval (INDEXER_POLL_MS). */
const POLL_INTERVAL_MS = Number(process.env.INDEXER_POLL_MS ?? 200);
/** What the profiled catch-up's samples are summed by (bench/lib/profile.ts). */
const CATCHUP_CATEGORIES: Categories = {
  native: { run: "sqlite", all: "sqlite", get: "sqlite", Statement: "sqlite", exec: "sqlite" },
  files: [
    [/better-sqlite3/, "sqlite"],
    [/kysely|server\/indexer\/row-statements/, "kysely"],
    [/core\/escrow\/events|server\/indexer\/(events|node|sync)\.ts/, "decode"],
    [/core\/escrow\/task|server\/indexer\/(task-projection|cursor)\.ts/, "projection"],
    [/server\/chains|ethers|undici|node:internal\/(deps|webstreams|streams|http)/, "rpc"],
  ],
};
/** The API load: clients in a loop, each pausing this long between its requests (half reads, half writes). */
const API_CLIENTS = 4;
const API_PAUSE_MS = 2;
/** The same load without the indexer first, for comparison. */
const API_IDLE_SECONDS = 2;

/** How the API would read a task: one indexed lookup on its own connection. The lead may route this through HTTP. */
async function taskVisible(db: Db, chain: string, taskHash: string): Promise<boolean> {
  const row = await db.selectFrom("escrow_tasks").select("task_hash").where("chain", "=", chain).where("task_hash", "=", taskHash).executeTakeFirst();
  return row !== undefined;
}

/**
 * The API on the main thread over `db` (rate limits off), and a local client loop: browse reads
 * (GET /api/v1/a2a/tasks) and sign-in nonces (POST /api/v1/auth/nonce, one insert each), the write that waits for the
 * SQLite write lock while the indexer holds it.
 */
async function startApiLoad(db: Db, chain: ChainConfig, dir: string) {
  const chains = createChains([chain]);
  const app = await buildApp({
    db,
    chains,
    blobs: createBlobStore(path.join(dir, "blobs")),
    config: { publicUrl: "http://127.0.0.1:3000", rateLimit: { perIp: 1e12, perKey: 1e12, windowMs: 60_000 }, offerWindowMs: 0 },
    logger: false,
  });
  await app.listen({ host: "127.0.0.1", port: 0 });
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  let latencies: number[] = [];
  let failures = 0;
  let failureSample: string | undefined;
  let stopping = false;
  let n = 0;
  const client = async () => {
    while (!stopping) {
      const i = n++;
      const started = performance.now();
      const response =
        i % 2 === 0
          ? await fetch(`${base}/api/v1/a2a/tasks`)
          : await fetch(`${base}/api/v1/auth/nonce`, {
              method: "POST",
              headers: { "content-type": "application/json" },
              body: JSON.stringify({ address: `0x${(i + 1).toString(16).padStart(40, "0")}` }),
            });
      if (response.ok) await response.arrayBuffer();
      latencies.push(performance.now() - started);
      if (!response.ok) {
        failures++;
        if (failureSample === undefined) failureSample = `${response.status} ${await response.text().catch(() => "")}`;
      }
      await new Promise((resolve) => setTimeout(resolve, API_PAUSE_MS));
    }
  };
  const clients = Array.from({ length: API_CLIENTS }, client);
  const histogram = monitorEventLoopDelay({ resolution: 1 });
  const ms = (ns: number) => Math.round((ns / 1e6) * 10) / 10;
  return {
    /** Starts a measurement: event-loop delay and request latencies from now on. */
    measure() {
      latencies = [];
      failures = 0;
      histogram.reset();
      histogram.enable();
    },
    /** Ends the measurement. */
    read() {
      histogram.disable();
      const sorted = [...latencies].sort((a, b) => a - b);
      return {
        loopDelayP99Ms: ms(histogram.percentile(99)),
        loopDelayMaxMs: ms(histogram.max),
        requests: sorted.length,
        requestP99Ms: Math.round(sorted[Math.min(sorted.length - 1, Math.ceil(0.99 * sorted.length) - 1)] ?? 0),
        requestMaxMs: Math.round(sorted.at(-1) ?? 0),
        failures,
        failureSample,
      };
    },
    async stop() {
      stopping = true;
      await Promise.all(clients);
      await app.close();
      for (const c of chains.list()) c.provider.destroy();
    },
  };
}

async function main() {
  const port = await freePort();
  const work = mkdtempSync(path.join(tmpdir(), "bench-indexer-"));
  // Read when hardhat and the deploy code load, so set before they are imported.
  process.env.HARDHAT_NETWORK = "localhost";
  process.env.LOCAL_RPC_URL = `http://127.0.0.1:${port}`;
  process.env.DEPLOYMENTS_DIR = path.join(work, "deployments");

  const node = await startLocalChain({ port, quiet: true });
  try {
    const hre = (await import("hardhat")).default;
    const { deployEscrow } = await import("../deploy/escrow");
    const { MockUSDC__factory } = await import("../typechain-types");
    const { ethers } = hre;
    const [admin, verifier, , poster, worker] = await ethers.getSigners();
    if (!admin || !verifier || !poster || !worker) throw new Error("the node needs 5 accounts");
    const { deployment, escrow } = await deployEscrow(hre, { dir: process.env.DEPLOYMENTS_DIR });
    const usdc = MockUSDC__factory.connect(deployment.token, admin);
    await (await usdc.mint(poster.address, 10n ** 15n)).wait();
    await (await usdc.connect(poster).approve(deployment.proxy, ethers.MaxUint256)).wait();

    // ---- events: many transactions per block (automine off), then empty stretches between the phases
    const send = (method: string, params: unknown[] = []) => ethers.provider.send(method, params);
    const started = Date.now();
    await send("evm_setAutomine", [false]);
    /** Sends `count` transactions, `perBlock` at a time, mining a block after each group; then an empty stretch. */
    const phase = async (count: number, perBlock: number, tx: (i: number) => Promise<{ hash: string }>) => {
      let last: string | undefined;
      for (let i = 0; i < count; i += perBlock) {
        const sent = await Promise.all(Array.from({ length: Math.min(perBlock, count - i) }, (_, j) => tx(i + j)));
        last = sent.at(-1)?.hash;
        await send("evm_mine");
      }
      while (last && !(await ethers.provider.getTransactionReceipt(last))) await send("evm_mine");
      for (let i = 0; i < EMPTY_BLOCKS_AFTER_PHASE; i++) await send("evm_mine");
    };
    const taskHash = (i: number) => ethers.id(`bench task ${i}`);
    const asPoster = escrow.connect(poster);
    await phase(BATCHES, 20, (b) =>
      asPoster.createTasks(
        Array.from({ length: BATCH }, (_, k) => ({
          taskHash: taskHash(b * BATCH + k),
          token: deployment.token,
          amount: 1_000_000n,
          duration: 30n * 86_400n,
          verifier: ethers.ZeroAddress,
        })),
        { gasLimit: 1_300_000 },
      ),
    );
    await phase(ASSIGNED, 50, (i) => escrow.connect(verifier).marketplaceAssign(taskHash(i), worker.address, { gasLimit: 100_000 }));
    await phase(SUBMITTED, 50, (i) => escrow.connect(worker).submitEvidence(taskHash(i), ethers.id(`result ${i}`), { gasLimit: 100_000 }));
    await phase(JUDGED, 50, (i) => escrow.connect(verifier).completeVerification(taskHash(i), i % 2 === 0, 70, { gasLimit: 200_000 }));
    await phase(CANCELLED, 50, (i) => asPoster.cancelTask(taskHash(ASSIGNED + i), { gasLimit: 100_000 }));
    await send("evm_setAutomine", [true]);
    const generateSeconds = (Date.now() - started) / 1000;
    const head = await ethers.provider.getBlockNumber();

    const chain: ChainConfig = {
      name: "arc",
      chainId: deployment.chainId,
      rpcUrl: process.env.LOCAL_RPC_URL,
      escrow: deployment.proxy,
      token: deployment.token,
      startBlock: deployment.block,
      confirmations: 0,
      postable: true,
    };

    // ---- the recording: every escrow log and every header of the blocks generated, read once from the node, then
    // served from memory by a JSON-RPC server on loopback (bench/lib/replay-rpc.ts): the catch-up's source
    const recording = await recordChain(send, [chain.escrow], chain.startBlock, head);
    const recordingFile = process.env.BENCH_RECORDING ?? path.join(work, "recording.json");
    writeFileSync(recordingFile, JSON.stringify({ chain, recording }));
    const replay = await startReplayProcess(recordingFile);
    const replayed: ChainConfig = { ...chain, rpcUrl: replay.url };

    // ---- where the catch-up's time goes: a catch-up from the replay under the CPU profiler (which slows it a little)
    const profile = await profiledCatchUp(replayed, work);

    // ---- the node alone: the catch-up's reads (every log, the header of every block with one) without storing
    // anything; its rate is the ceiling any catch-up from this node reaches on this machine
    const nodeRead = await (async () => {
      const provider = new ChainRpcProvider(chain);
      const started = performance.now();
      const logs = await readLogs(provider, [chain.escrow], chain.startBlock, head);
      const blocks = [...new Set(logs.map((log) => log.blockNumber))];
      for (let i = 0; i < blocks.length; i += 100) await Promise.all(blocks.slice(i, i + 100).map((n) => readHeader(provider, chain.name, n)));
      const seconds = (performance.now() - started) / 1000;
      provider.destroy();
      return { eventsPerSec: Math.round(logs.length / seconds), seconds: Number(seconds.toFixed(2)), headers: blocks.length };
    })();

    // ---- catch-up under API load: the worker thread indexes from the node into a fresh file the API on this thread
    // serves
    const apiDb = createDatabase({ sqlitePath: path.join(work, "api.sqlite") });
    await migrateToLatest(apiDb);
    const api = await startApiLoad(apiDb, chain, work);
    let underLoad: ReturnType<typeof api.read>;
    let idle: ReturnType<typeof api.read>;
    let workerSeconds: number;
    const onChain = recording.logs.length;
    try {
      api.measure();
      await new Promise((resolve) => setTimeout(resolve, API_IDLE_SECONDS * 1000));
      idle = api.read();
      const workerErrors: Error[] = [];
      let caughtUp: () => void = () => undefined;
      const done = new Promise<void>((resolve) => (caughtUp = resolve));
      api.measure();
      const workerStart = performance.now();
      const catchup = startIndexerWorker({
        sqlitePath: path.join(work, "api.sqlite"),
        chain,
        pollIntervalMs: POLL_INTERVAL_MS,
        onError: (e) => workerErrors.push(e),
        onProgress: (p) => p.to >= head && caughtUp(),
      });
      await Promise.race([
        done,
        catchup.exited.then((code) => Promise.reject(workerErrors[0] ?? new Error(`the indexer worker exited (code ${code})`))),
      ]);
      workerSeconds = (performance.now() - workerStart) / 1000;
      underLoad = api.read();
      await catchup.stop();
      if (workerErrors.length > 0) throw workerErrors[0];
    } finally {
      await api.stop();
    }
    const stored = await apiDb
      .selectFrom("escrow_events")
      .select((eb) => eb.fn.countAll<number>().as("count"))
      .executeTakeFirstOrThrow();
    await apiDb.destroy();
    rmSync(path.join(work, "api.sqlite"), { force: true });
    if (Number(stored.count) !== onChain) throw new Error(`the worker stored ${stored.count} events, the node has ${onChain}`);
    if (underLoad.failures > 0 || idle.failures > 0)
      throw new Error(`${underLoad.failures + idle.failures} API requests failed: ${underLoad.failureSample ?? idle.failureSample}`);

    // ---- live: the worker thread follows the chain into `sqlitePath` (caught up); each sample mines one block with
    // one new task. Following new heads over the node's WebSocket (eth_subscribe, as the server does by default), or by
    // polling alone.
    const live = async (db: Db, sqlitePath: string, subscribe: boolean, run: number) => {
      const errors: Error[] = [];
      const worker = startIndexerWorker({ sqlitePath, chain, pollIntervalMs: POLL_INTERVAL_MS, subscribe, onError: (e) => errors.push(e) });
      const delays: number[] = [];
      try {
        for (let i = -WARM_UP_SAMPLES; i < LIVE_SAMPLES; i++) {
          const hash = ethers.id(`bench live ${run} ${subscribe ? "subscribed" : "polled"} ${i}`);
          await asPoster.createTask(hash, deployment.token, 1_000_000n, 86_400n, ethers.ZeroAddress, { gasLimit: 200_000 });
          const mined = performance.now(); // automine: the block exists once the node has answered
          while (!(await taskVisible(db, chain.name, hash))) await new Promise((resolve) => setTimeout(resolve, 1));
          if (i >= 0) delays.push(performance.now() - mined); // the first blocks also wait for the thread to start
          // Mine the next block at a random point of the poll cycle, not right after the previous poll.
          await new Promise((resolve) => setTimeout(resolve, Math.random() * POLL_INTERVAL_MS));
        }
      } finally {
        await worker.stop();
      }
      if (errors.length > 0) throw errors[0];
      const sorted = delays.sort((a, b) => a - b);
      return { p99Ms: Math.round(quantile(0.99, sorted)), p50Ms: Math.round(quantile(0.5, sorted)), maxMs: Math.round(sorted.at(-1)!) };
    };

    // ---- the runs: each times the calibration, then a catch-up from the replay into a fresh SQLite file and into a
    // fresh PostgreSQL database, one from the live node into another SQLite file (for comparison), and the live delay
    // by subscription and by polling, each with the load average when it started
    const pg = await startBenchPostgres();
    const runs: Run[] = [];
    try {
      // Every run's catch-ups back to back, then every run's live phases: a catch-up right after a minute of live
      // phases ran on a machine measurably slower for it (the calibration loop just before it took 0.31-0.48 s
      // against 0.23-0.25 s back to back; per calibration the catch-ups ran alike).
      const context = { replayed, chain, work, pg, live };
      const caughtUp: CaughtUp[] = [];
      for (let run = 1; run <= RUNS; run++) caughtUp.push(await catchUpRun(run, context));
      for (const one of caughtUp) runs.push(await finishRun(one, context));
    } finally {
      pg?.stop();
      await catchUps?.close();
      await replay.close();
    }

    const median = (pick: (run: Run) => number | undefined) => {
      const values = runs.map(pick).filter((v): v is number => v !== undefined);
      return values.length === 0
        ? undefined
        : quantile(
            0.5,
            values.sort((a, b) => a - b),
          );
    };
    const report = {
      // Medians of the runs (each run's figures in `runs`).
      catchupEventsPerSec: median((r) => r.sqlite.eventsPerSec)!,
      postgresCatchupEventsPerSec: median((r) => r.postgres?.eventsPerSec),
      visibleP99Ms: median((r) => r.subscribed.p99Ms)!,
      visibleP50Ms: median((r) => r.subscribed.p50Ms)!,
      // The same by polling alone (INDEXER_SUBSCRIBE=false, or a node without WebSocket): the fallback.
      visiblePollingP99Ms: median((r) => r.polled.p99Ms)!,
      visiblePollingP50Ms: median((r) => r.polled.p50Ms)!,
      nodeCatchupEventsPerSec: median((r) => r.node.eventsPerSec)!,
      catchupSource: REPLAY_SOURCE,
      apiLoopDelayP99Ms: underLoad.loopDelayP99Ms,
      apiLoopDelayMaxMs: underLoad.loopDelayMaxMs,
      apiRequestP99Ms: underLoad.requestP99Ms,
      apiRequestMaxMs: underLoad.requestMaxMs,
      apiRequests: underLoad.requests,
      apiIdleLoopDelayP99Ms: idle.loopDelayP99Ms,
      apiIdleLoopDelayMaxMs: idle.loopDelayMaxMs,
      apiIdleRequestP99Ms: idle.requestP99Ms,
      workerCatchupEventsPerSec: Math.round(onChain / workerSeconds),
      catchupEvents: onChain,
      catchupBlocks: head - deployment.block + 1,
      catchupRanges: runs[0]!.sqlite.ranges,
      catchupTransactions: runs[0]!.sqlite.transactions,
      liveSamples: LIVE_SAMPLES,
      pollIntervalMs: POLL_INTERVAL_MS,
      generateSeconds: Number(generateSeconds.toFixed(1)),
      // The load average (1 min) when the first run started: the machine is shared (each run has its own).
      loadAverage1m: runs[0]!.machine.loadAverage1m,
      // A catch-up from the replay under the CPU profiler: milliseconds of this thread by what it was doing (idle:
      // waiting for the source's answers), and the functions with the most self time.
      catchupProfileMs: profile.ms,
      catchupProfileTop: profile.top,
      // The node serving the catch-up's reads alone (its logs in one eth_getLogs, then the headers of the blocks with
      // logs, 100 at a time): the ceiling of a catch-up from this node.
      nodeReadEventsPerSec: nodeRead.eventsPerSec,
      nodeReadSeconds: nodeRead.seconds,
      nodeReadHeaders: nodeRead.headers,
      postgresServer: pg?.version ?? "skipped: no PostgreSQL server binaries (/usr/lib/postgresql/<version>/bin)",
      // What this machine is (calibration loops, cores) when the first run started; each run has its own.
      machine: runs[0]!.machine,
      runs,
    };
    const out = path.join(__dirname, "indexer.json");
    writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
    console.table(
      Object.entries(report)
        .flatMap(([metric, value]) => (typeof value === "number" ? [[metric, value] as const] : []))
        .map(([metric, value]) => {
          const bar = BARS[metric as keyof typeof BARS] as number | undefined;
          const ok = bar === undefined ? "" : (metric.endsWith("Ms") ? value <= bar : value >= bar) ? "yes" : "NO";
          return { metric, value, bar: bar ?? "", ok };
        }),
    );
    console.log("runs:");
    console.table(runs.map(runLine));
    console.log({ catchupProfileMs: profile.ms, catchupProfileTop: profile.top });
    console.log(`written to ${out}`);
    const below = Object.entries(BARS).some(([metric, bar]) => {
      const value = report[metric as keyof typeof BARS];
      if (value === undefined) return false;
      return metric.endsWith("Ms") ? value > bar : value < bar;
    });
    if (below) {
      console.error("below a bar");
      process.exitCode = 1;
    }
  } finally {
    node.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

interface Run {
  run: number;
  machine: MachineFigures;
  sqlite: CatchUp & { loadAverage1m: number };
  postgres?: CatchUp & { loadAverage1m: number };
  node: CatchUp & { loadAverage1m: number };
  subscribed: LiveDelay & { loadAverage1m: number };
  polled: LiveDelay & { loadAverage1m: number };
  perCalibration: Record<string, number>;
}
interface LiveDelay {
  p99Ms: number;
  p50Ms: number;
  maxMs: number;
}

const load1m = () => Math.round(loadavg()[0]! * 100) / 100;

type RunContext = {
  replayed: ChainConfig;
  chain: ChainConfig;
  work: string;
  pg: BenchPostgres | undefined;
  live?: (db: Db, sqlitePath: string, subscribe: boolean, run: number) => Promise<LiveDelay>;
};
/** A run's catch-ups, and its file open on this thread as the API's connection is while the server's indexer writes. */
type CaughtUp = Pick<Run, "run" | "machine" | "sqlite" | "postgres"> & { sqlitePath: string; db: Db };

/** One run (see main): its figures, each with the load average when it started, and its calibration. */
async function oneRun(run: number, context: RunContext): Promise<Run> {
  return finishRun(await catchUpRun(run, context), context);
}

/**
 * A run's catch-ups from the replay: into a fresh SQLite file (kept for the run's live phases) and a fresh PostgreSQL
 * database, after the machine's calibration.
 */
async function catchUpRun(run: number, context: RunContext): Promise<CaughtUp> {
  const { replayed, pg } = context;
  const machine = machineFigures();
  const sqlitePath = path.join(context.work, `run-${run}.sqlite`);
  const db = createDatabase({ sqlitePath });
  await migrateToLatest(db);
  let load = load1m();
  const sqlite = { ...(await catchUpProcess().catchUp({ sqlitePath }, replayed, POLL_INTERVAL_MS)), loadAverage1m: load };
  let postgres: Run["postgres"];
  if (pg) {
    const admin = createDatabase({ databaseUrl: pg.url });
    await sql.raw(`create database bench_run_${run}`).execute(admin);
    await admin.destroy();
    const databaseUrl = pg.url.replace(/\/postgres$/, `/bench_run_${run}`);
    const pgDb = createDatabase({ databaseUrl });
    try {
      await migrateToLatest(pgDb);
    } finally {
      await pgDb.destroy();
    }
    load = load1m();
    postgres = { ...(await catchUpProcess().catchUp({ databaseUrl }, replayed, POLL_INTERVAL_MS)), loadAverage1m: load };
  }

  console.log(
    `run ${run} caught up: SQLite ${sqlite.eventsPerSec} events/s, PostgreSQL ${postgres?.eventsPerSec ?? "-"} (SHA-256 loop ${machine.calibration.sha256LoopMs} ms)`,
  );
  return { run, machine, sqlite, postgres, sqlitePath, db };
}

/** The rest of a run (the catch-up from the live node, the live delays) on its caught-up file; the run's figures. */
async function finishRun(caughtUp: CaughtUp, context: RunContext): Promise<Run> {
  const { chain, work, live } = context;
  const { run, machine, sqlite, postgres, sqlitePath, db } = caughtUp;
  let load: number;
  let node: Run["node"] | undefined;
  let subscribed: Run["subscribed"] | undefined;
  let polled: Run["polled"] | undefined;
  if (live) {
    const nodePath = path.join(work, `run-${run}-node.sqlite`);
    const nodeDb = createDatabase({ sqlitePath: nodePath });
    await migrateToLatest(nodeDb);
    load = load1m();
    await nodeDb.destroy();
    node = { ...(await catchUpProcess().catchUp({ sqlitePath: nodePath }, chain, POLL_INTERVAL_MS)), loadAverage1m: load };
    rmSync(nodePath, { force: true });
    load = load1m();
    subscribed = { ...(await live(db, sqlitePath, true, run)), loadAverage1m: load };
    load = load1m();
    polled = { ...(await live(db, sqlitePath, false, run)), loadAverage1m: load };
  }
  await db.destroy();
  rmSync(sqlitePath, { force: true });

  const perCalibration = calibrated(
    {
      catchupEventsPerSec: { value: sqlite.eventsPerSec, kind: "rate" },
      ...(postgres ? { postgresCatchupEventsPerSec: { value: postgres.eventsPerSec, kind: "rate" as const } } : {}),
      ...(subscribed && polled
        ? {
            visibleP99Ms: { value: subscribed.p99Ms, kind: "duration" as const },
            visiblePollingP99Ms: { value: polled.p99Ms, kind: "duration" as const },
          }
        : {}),
    },
    machine,
  );
  const result = { run, machine, sqlite, postgres, node: node!, subscribed: subscribed!, polled: polled!, perCalibration };
  console.log(runLine(result));
  return result;
}

/** A run's main figures on one line, for the console. */
function runLine(r: Run) {
  return {
    run: r.run,
    load: r.machine.loadAverage1m,
    sha256LoopMs: r.machine.calibration.sha256LoopMs,
    sqliteEventsPerSec: r.sqlite.eventsPerSec,
    sqliteEventsPerCpuSecond: r.sqlite.eventsPerCpuSecond,
    postgresEventsPerSec: r.postgres?.eventsPerSec,
    nodeEventsPerSec: r.node?.eventsPerSec,
    subP99Ms: r.subscribed?.p99Ms,
    pollP99Ms: r.polled?.p99Ms,
  };
}

/** A catch-up from `source` into a fresh SQLite file under the CPU profiler (BENCH_CPU_PROFILE_DIR gets the profile). */
async function profiledCatchUp(source: ChainConfig, work: string) {
  const file = path.join(work, "profiled.sqlite");
  const db = createDatabase({ sqlitePath: file });
  await migrateToLatest(db);
  await db.destroy();
  const profileFile = process.env.BENCH_CPU_PROFILE_DIR ? path.join(process.env.BENCH_CPU_PROFILE_DIR, "indexer-catchup.cpuprofile") : undefined;
  try {
    const { ms, top, eventsPerSec, eventsPerCpuSecond } = await catchUpProcess().profiled(
      { sqlitePath: file },
      source,
      POLL_INTERVAL_MS,
      CATCHUP_CATEGORIES,
      profileFile,
    );
    return { ms, top, eventsPerSec, eventsPerCpuSecond };
  } finally {
    rmSync(file, { force: true });
  }
}

/** The process (and its thread) every catch-up runs in (bench/lib/catchup.ts), started at the first. */
let catchUps: CatchUpProcess | undefined;
const catchUpProcess = (): CatchUpProcess => (catchUps ??= startCatchUpProcess());

/**
 * BENCH_REPLAY_ONLY=1 with BENCH_RECORDING naming a recording an earlier run wrote: catch-ups from the replay alone
 * (SQLite, and PostgreSQL unless BENCH_PG=0), the profile first; printed, nothing written. For working on the hot path.
 */
async function replayOnly(file: string) {
  const { chain } = JSON.parse(readFileSync(file, "utf8")) as { chain: ChainConfig };
  const work = mkdtempSync(path.join(tmpdir(), "bench-indexer-"));
  const replay = await startReplayProcess(file);
  const replayed: ChainConfig = { ...chain, rpcUrl: replay.url };
  const pg = process.env.BENCH_PG === "0" ? undefined : await startBenchPostgres();
  try {
    const profile = await profiledCatchUp(replayed, work);
    console.log({
      profiledEventsPerSec: profile.eventsPerSec,
      profiledEventsPerCpuSecond: profile.eventsPerCpuSecond,
      catchupProfileMs: profile.ms,
      catchupProfileTop: profile.top,
    });
    for (let run = 1; run <= RUNS; run++) await oneRun(run, { replayed, chain, work, pg });
  } finally {
    pg?.stop();
    await catchUps?.close();
    await replay.close();
    rmSync(work, { recursive: true, force: true });
  }
}

function quantile(q: number, sorted: readonly number[]): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
}

(process.env.BENCH_REPLAY_ONLY && process.env.BENCH_RECORDING ? replayOnly(process.env.BENCH_RECORDING) : main()).then(
  () => process.exit(),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
