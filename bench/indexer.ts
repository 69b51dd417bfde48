/**
 * Indexer benchmark. Starts a Hardhat node on a free loopback port (a child process), deploys mock USDC and the
 * escrow with the real deploy code, generates more than 20,000 escrow events, then measures
 *   1. catch-up: events per second of a fresh indexer into a fresh SQLite file (then again into another, the code warm,
 *      again under the CPU profiler to say where the time went, and into a throwaway PostgreSQL server when one can be
 *      started);
 *      then the node alone serving the same reads (every log, the headers of the blocks with logs) without storing,
 *      the ceiling of any catch-up from it on this machine;
 *   2. catch-up under API load: the same catch-up by the indexer's worker thread into another fresh file, while the
 *      main thread serves the API over that file (buildApp) to a local client loop of browse reads and sign-in nonce
 *      writes; the main thread's event-loop delay (perf_hooks.monitorEventLoopDelay, p99 and max) is what the API's
 *      callers feel (workerCatchupEventsPerSec counts the thread's start too);
 *   3. live delay: from a block being mined to its task being readable by the API's read path, with the indexer in
 *      its worker thread following new heads over the node's WebSocket (eth_subscribe), then polling alone as
 *      configured (p50/p99 over 200 blocks each).
 * Writes bench/indexer.json and prints a table. Stops by itself.
 *   npm run bench:indexer
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import path from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import type { AddressInfo } from "node:net";
import { freePort, startLocalChain } from "../scripts/lib/local-chain";
import type { ChainConfig } from "../server/config";
import { createDatabase, migrateToLatest, type Db } from "../server/db";
import { createIndexer, startIndexerWorker } from "../server/indexer";
import { ChainRpcProvider } from "../server/chains/rpc";
import { readHeader, readLogs } from "../server/indexer/node";
import { createChains } from "../server/chains";
import { createBlobStore } from "../server/storage/blob-store";
import { buildApp } from "../server/app";
import { profiled, type Categories } from "./lib/profile";
import { startBenchPostgres } from "./lib/postgres";
import { calibrated, machineFigures } from "./lib/machine";

/** A single stall shows in the maximum, hardly in the p99 (848 ms and 41 ms before transactions were bounded). */
const BARS = { catchupEventsPerSec: 20_000, visibleP99Ms: 100, visiblePollingP99Ms: 250, apiLoopDelayP99Ms: 50, apiLoopDelayMaxMs: 150 };
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

    const onChain = (await send("eth_getLogs", [
      { address: deployment.proxy, fromBlock: "earliest", toBlock: `0x${head.toString(16)}` },
    ])) as unknown[];

    /** A fresh indexer of `chain` into `db` (migrated, empty) until it has caught up, checked against the node. */
    const catchUp = async (db: Db) => {
      const provider = new ChainRpcProvider(chain);
      let ranges = 0;
      let transactions = 0;
      const started = performance.now();
      const indexer = createIndexer({
        db,
        chain,
        provider,
        pollIntervalMs: POLL_INTERVAL_MS,
        onStep: (step) => void (step === "range-fetched" && ranges++),
        onProgress: () => transactions++,
      });
      let events = 0;
      for (;;) {
        const result = await indexer.syncOnce();
        events += result.events;
        if (result.caughtUp) break;
      }
      const seconds = (performance.now() - started) / 1000;
      provider.destroy();
      const { count } = await db
        .selectFrom("escrow_events")
        .select((eb) => eb.fn.countAll<number>().as("count"))
        .executeTakeFirstOrThrow();
      if (Number(count) !== events || events !== onChain.length) {
        throw new Error(`indexed ${events} events, stored ${count}, the node has ${onChain.length}`);
      }
      return { events, seconds, ranges, transactions };
    };

    // ---- catch-up: a fresh indexer into a fresh SQLite file (the machine's calibration first, bench/lib/machine.ts)
    const machine = machineFigures();
    const loadBefore = loadavg()[0]!;
    const sqlitePath = path.join(work, "market.sqlite");
    const db = createDatabase({ sqlitePath });
    await migrateToLatest(db);
    const catchup = await catchUp(db);
    const { events, seconds: catchupSeconds, ranges, transactions } = catchup;

    // ---- the same catch-up again into another fresh file, the indexer's code now compiled by the JIT (a catch-up of a
    // chain's whole history runs far longer than this one, so its start weighs less)
    const warmDb = createDatabase({ sqlitePath: path.join(work, "warm.sqlite") });
    await migrateToLatest(warmDb);
    const warm = await catchUp(warmDb);
    await warmDb.destroy();

    // ---- where the catch-up's time goes: the same catch-up again, under the CPU profiler (which slows it a little)
    const profileDb = createDatabase({ sqlitePath: path.join(work, "profiled.sqlite") });
    await migrateToLatest(profileDb);
    const profileFile = process.env.BENCH_CPU_PROFILE_DIR ? path.join(process.env.BENCH_CPU_PROFILE_DIR, "indexer-catchup.cpuprofile") : undefined;
    const { ms: catchupProfileMs } = await profiled(() => catchUp(profileDb), CATCHUP_CATEGORIES, profileFile);
    await profileDb.destroy();

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

    // ---- the same catch-up into PostgreSQL (a throwaway server on loopback), when its binaries are installed
    let postgres: Record<string, unknown> = { skipped: "no PostgreSQL server binaries (/usr/lib/postgresql/<version>/bin)" };
    const pg = await startBenchPostgres();
    if (pg) {
      try {
        const pgDb = createDatabase({ databaseUrl: pg.url });
        await migrateToLatest(pgDb);
        const pgLoad = loadavg()[0]!;
        const result = await catchUp(pgDb);
        await pgDb.destroy();
        postgres = {
          catchupEventsPerSec: Math.round(result.events / result.seconds),
          catchupSeconds: Number(result.seconds.toFixed(2)),
          catchupTransactions: result.transactions,
          server: pg.version,
          loadAverage1m: Math.round(pgLoad * 100) / 100,
        };
      } finally {
        pg.stop();
      }
    }

    // ---- catch-up under API load: the worker thread indexes into a fresh file the API on this thread serves
    const apiDb = createDatabase({ sqlitePath: path.join(work, "api.sqlite") });
    await migrateToLatest(apiDb);
    const api = await startApiLoad(apiDb, chain, work);
    let underLoad: ReturnType<typeof api.read>;
    let idle: ReturnType<typeof api.read>;
    let workerSeconds: number;
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
    if (Number(stored.count) !== onChain.length) throw new Error(`the worker stored ${stored.count} events, the node has ${onChain.length}`);
    if (underLoad.failures > 0 || idle.failures > 0)
      throw new Error(`${underLoad.failures + idle.failures} API requests failed: ${underLoad.failureSample ?? idle.failureSample}`);

    // ---- live: the worker thread follows the chain; each sample mines one block with one new task. Twice: following
    // new heads over the node's WebSocket (eth_subscribe, as the server does by default), then by polling alone.
    const live = async (subscribe: boolean) => {
      const errors: Error[] = [];
      const worker = startIndexerWorker({ sqlitePath, chain, pollIntervalMs: POLL_INTERVAL_MS, subscribe, onError: (e) => errors.push(e) });
      const delays: number[] = [];
      try {
        for (let i = -WARM_UP_SAMPLES; i < LIVE_SAMPLES; i++) {
          const hash = ethers.id(`bench live ${subscribe ? "subscribed" : "polled"} ${i}`);
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
      return delays.sort((a, b) => a - b);
    };
    const sorted = await live(true);
    const polled = await live(false);
    await db.destroy();

    const quantile = (q: number, of = sorted) => of[Math.min(of.length - 1, Math.ceil(q * of.length) - 1)]!;
    const report = {
      catchupEventsPerSec: Math.round(events / catchupSeconds),
      visibleP99Ms: Math.round(quantile(0.99)),
      visibleP50Ms: Math.round(quantile(0.5)),
      visibleMaxMs: Math.round(sorted.at(-1)!),
      // The same by polling alone (INDEXER_SUBSCRIBE=false, or a node without WebSocket): the fallback.
      visiblePollingP99Ms: Math.round(quantile(0.99, polled)),
      visiblePollingP50Ms: Math.round(quantile(0.5, polled)),
      apiLoopDelayP99Ms: underLoad.loopDelayP99Ms,
      apiLoopDelayMaxMs: underLoad.loopDelayMaxMs,
      apiRequestP99Ms: underLoad.requestP99Ms,
      apiRequestMaxMs: underLoad.requestMaxMs,
      apiRequests: underLoad.requests,
      apiIdleLoopDelayP99Ms: idle.loopDelayP99Ms,
      apiIdleLoopDelayMaxMs: idle.loopDelayMaxMs,
      apiIdleRequestP99Ms: idle.requestP99Ms,
      catchupWarmEventsPerSec: Math.round(warm.events / warm.seconds),
      workerCatchupEventsPerSec: Math.round(onChain.length / workerSeconds),
      catchupEvents: events,
      catchupBlocks: head - deployment.block + 1,
      catchupRanges: ranges,
      catchupTransactions: transactions,
      catchupSeconds: Number(catchupSeconds.toFixed(2)),
      liveSamples: sorted.length,
      pollIntervalMs: POLL_INTERVAL_MS,
      generateSeconds: Number(generateSeconds.toFixed(1)),
      // The machine's load average (1 min) when the SQLite catch-up started: the machine is shared.
      loadAverage1m: Math.round(loadBefore * 100) / 100,
      // The SQLite catch-up once more under the CPU profiler: milliseconds of this thread by what it was doing (idle:
      // waiting for the node's answers).
      catchupProfileMs,
      // The node serving the catch-up's reads alone (its logs in one eth_getLogs, then the headers of the blocks with
      // logs, 100 at a time): the ceiling of a catch-up from this node.
      nodeReadEventsPerSec: nodeRead.eventsPerSec,
      nodeReadSeconds: nodeRead.seconds,
      nodeReadHeaders: nodeRead.headers,
      postgres,
      // What this machine is (calibration loops, cores) and the main figures divided by its calibration, so figures
      // from two machines compare (bench/lib/machine.ts).
      machine,
      perCalibration: {},
    };
    report.perCalibration = calibrated(
      {
        catchupEventsPerSec: { value: report.catchupEventsPerSec, kind: "rate" },
        catchupWarmEventsPerSec: { value: report.catchupWarmEventsPerSec, kind: "rate" },
        ...(typeof postgres.catchupEventsPerSec === "number"
          ? { postgresCatchupEventsPerSec: { value: postgres.catchupEventsPerSec, kind: "rate" as const } }
          : {}),
        visibleP99Ms: { value: report.visibleP99Ms, kind: "duration" },
        visiblePollingP99Ms: { value: report.visiblePollingP99Ms, kind: "duration" },
      },
      machine,
    );
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
    console.log({ catchupProfileMs, postgres });
    console.log(`written to ${out}`);
    const below = Object.entries(BARS).some(([metric, bar]) => {
      const value = report[metric as keyof typeof BARS];
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

main().then(
  () => process.exit(),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
