/**
 * Indexer benchmark. Starts a Hardhat node on a free loopback port (a child process), deploys mock USDC and the
 * escrow with the real deploy code, generates more than 20,000 escrow events, then measures
 *   1. catch-up: events per second of a fresh indexer into a fresh SQLite file;
 *   2. live delay: from a block being mined to its task being readable by the API's read path, with the indexer in
 *      its worker thread polling as configured (p50/p99 over 200 blocks).
 * Writes bench/indexer.json and prints a table. Stops by itself.
 *   npm run bench:indexer
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { freePort, startLocalChain } from "../scripts/lib/local-chain";
import type { ChainConfig } from "../server/config";
import { createDatabase, migrateToLatest, type Db } from "../server/db";
import { createIndexer, startIndexerWorker } from "../server/indexer";
import { ChainRpcProvider } from "../server/chains/rpc";

const BARS = { catchupEventsPerSec: 5_000, visibleP99Ms: 500 };
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
const POLL_INTERVAL_MS = Number(process.env.INDEXER_POLL_MS ?? 250);

/** How the API would read a task: one indexed lookup on its own connection. The lead may route this through HTTP. */
async function taskVisible(db: Db, chain: string, taskHash: string): Promise<boolean> {
  const row = await db
    .selectFrom("escrow_tasks")
    .select("task_hash")
    .where("chain", "=", chain)
    .where("task_hash", "=", taskHash)
    .executeTakeFirst();
  return row !== undefined;
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

    // ---- catch-up: a fresh indexer into a fresh SQLite file
    const sqlitePath = path.join(work, "market.sqlite");
    const db = createDatabase({ sqlitePath });
    await migrateToLatest(db);
    const provider = new ChainRpcProvider(chain);
    let ranges = 0;
    const catchupStart = performance.now();
    const indexer = createIndexer({ db, chain, provider, pollIntervalMs: POLL_INTERVAL_MS, onProgress: () => ranges++ });
    let events = 0;
    for (;;) {
      const result = await indexer.syncOnce();
      events += result.events;
      if (result.caughtUp) break;
    }
    const catchupSeconds = (performance.now() - catchupStart) / 1000;
    provider.destroy();
    const { count } = await db.selectFrom("escrow_events").select((eb) => eb.fn.countAll<number>().as("count")).executeTakeFirstOrThrow();
    const onChain = (await send("eth_getLogs", [{ address: deployment.proxy, fromBlock: "earliest", toBlock: `0x${head.toString(16)}` }])) as unknown[];
    if (Number(count) !== events || events !== onChain.length) {
      throw new Error(`indexed ${events} events, stored ${count}, the node has ${onChain.length}`);
    }

    // ---- live: the worker thread follows the chain; each sample mines one block with one new task
    const errors: Error[] = [];
    const live = startIndexerWorker({ sqlitePath, chain, pollIntervalMs: POLL_INTERVAL_MS, onError: (e) => errors.push(e) });
    const delays: number[] = [];
    try {
      for (let i = -WARM_UP_SAMPLES; i < LIVE_SAMPLES; i++) {
        const hash = ethers.id(`bench live ${i}`);
        await asPoster.createTask(hash, deployment.token, 1_000_000n, 86_400n, ethers.ZeroAddress, { gasLimit: 200_000 });
        const mined = performance.now(); // automine: the block exists once the node has answered
        while (!(await taskVisible(db, chain.name, hash))) await new Promise((resolve) => setTimeout(resolve, 1));
        if (i >= 0) delays.push(performance.now() - mined); // the first blocks also wait for the thread to start
        // Mine the next block at a random point of the poll cycle, not right after the previous poll.
        await new Promise((resolve) => setTimeout(resolve, Math.random() * POLL_INTERVAL_MS));
      }
    } finally {
      await live.stop();
    }
    if (errors.length > 0) throw errors[0];
    await db.destroy();

    const sorted = [...delays].sort((a, b) => a - b);
    const quantile = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
    const report = {
      catchupEventsPerSec: Math.round(events / catchupSeconds),
      visibleP99Ms: Math.round(quantile(0.99)),
      visibleP50Ms: Math.round(quantile(0.5)),
      visibleMaxMs: Math.round(sorted.at(-1)!),
      catchupEvents: events,
      catchupBlocks: head - deployment.block + 1,
      catchupRanges: ranges,
      catchupSeconds: Number(catchupSeconds.toFixed(2)),
      liveSamples: delays.length,
      pollIntervalMs: POLL_INTERVAL_MS,
      generateSeconds: Number(generateSeconds.toFixed(1)),
    };
    const out = path.join(__dirname, "indexer.json");
    writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
    console.table(
      Object.entries(report).map(([metric, value]) => {
        const bar = BARS[metric as keyof typeof BARS] as number | undefined;
        const ok = bar === undefined ? "" : (metric.endsWith("Ms") ? value <= bar : value >= bar) ? "yes" : "NO";
        return { metric, value, bar: bar ?? "", ok };
      }),
    );
    console.log(`written to ${out}`);
    if (report.catchupEventsPerSec < BARS.catchupEventsPerSec || report.visibleP99Ms > BARS.visibleP99Ms) {
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
