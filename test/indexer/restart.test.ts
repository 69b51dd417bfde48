import { expect } from "chai";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import hre from "hardhat";
import { loadFixture } from "@nomicfoundation/hardhat-network-helpers";
import { createDatabase, migrateToLatest, type Db } from "../../server/db";
import type { ChainConfig } from "../../server/config";
import { readCursor, startIndexerWorker, superviseIndexerWorker, type IndexerStep } from "../../server/indexer";
import { deployEscrowFixture } from "../fixtures/escrow";
import { testDatabase } from "../server/harness";
import {
  chainConfig,
  dumpTables,
  freshIndexDump,
  inProcessIndexer,
  memoryDb,
  mineBlocks,
  random,
  randomActivity,
  serveNetwork,
  syncToHead,
  waitFor,
} from "./helpers";

class InjectedCrash extends Error {}

/** A chain with a few hundred blocks of escrow activity, indexed in small ranges so a crash can land anywhere. */
async function activeChainFixture() {
  const fixture = await deployEscrowFixture();
  await randomActivity(fixture, { seed: 30, steps: 70, tag: "restart" });
  await mineBlocks(40);
  await randomActivity(fixture, { seed: 31, steps: 30, tag: "restart-late" });
  return fixture;
}

const SMALL_RANGES = { initial: 3, max: 6 };

/**
 * A worker-thread test: the active chain served over HTTP, a migrated SQLite file (or, under `npm run test:postgres`,
 * a PostgreSQL database: `database` names it to the worker), and the chain config pointing at the served node.
 * Everything is closed and removed afterwards.
 */
async function withWorkerDatabase(
  run: (ctx: {
    fixture: Awaited<ReturnType<typeof activeChainFixture>>;
    db: Db;
    database: { sqlitePath: string; databaseUrl?: string };
    chain: ChainConfig;
    head: number;
  }) => Promise<void>,
) {
  const fixture = await loadFixture(activeChainFixture);
  const network = await serveNetwork();
  const dir = mkdtempSync(path.join(tmpdir(), "indexer-worker-"));
  const sqlitePath = path.join(dir, "market.sqlite");
  const postgres = process.env.TEST_DATABASE_URL ? await testDatabase() : undefined;
  const db = postgres?.db ?? createDatabase({ sqlitePath });
  try {
    if (!postgres) await migrateToLatest(db);
    const chain = chainConfig(fixture, { rpcUrl: network.url });
    await run({ fixture, db, database: { sqlitePath, databaseUrl: postgres?.url }, chain, head: await hre.ethers.provider.getBlockNumber() });
  } finally {
    await (postgres ? postgres.drop() : db.destroy());
    await network.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("indexer restarts", function () {
  it("resumes after crashes injected between steps (and inside the commit) exactly where it stopped", async function () {
    const fixture = await loadFixture(activeChainFixture);
    const chain = chainConfig(fixture);
    const reference = await freshIndexDump(chain);

    // The last seed commits at most two events a transaction: crashes also land between a range's transactions.
    for (const [seed, maxEventsPerCommit] of [
      [1, undefined],
      [2, undefined],
      [3, 2],
    ] as const) {
      const rnd = random(seed);
      const db = await memoryDb();
      const crashedAt: IndexerStep[] = [];
      for (;;) {
        let steps = 0;
        const crashAfter = 1 + Math.floor(rnd() * 12);
        const indexer = inProcessIndexer(db, chain, {
          blockRange: SMALL_RANGES,
          maxEventsPerCommit,
          onStep: (step) => {
            if (++steps === crashAfter) {
              crashedAt.push(step);
              throw new InjectedCrash(`crash at ${step}`);
            }
          },
        });
        try {
          await syncToHead(indexer);
          break;
        } catch (error) {
          if (!(error instanceof InjectedCrash)) throw error;
        }
      }
      expect(crashedAt.length, `seed ${seed}`).to.be.greaterThan(3);
      expect(crashedAt).to.include("before-commit");
      expect(await dumpTables(db), `seed ${seed}`).to.deep.equal(reference);
      await db.destroy();
    }
  });

  it("resumes after stop() in the middle of a catch-up", async function () {
    const fixture = await loadFixture(activeChainFixture);
    const chain = chainConfig(fixture);
    const db = await memoryDb();
    let ranges = 0;
    // One event per transaction: ranges read ahead cannot join one commit, so five commits come well before the head.
    const first = inProcessIndexer(db, chain, { blockRange: SMALL_RANGES, maxEventsPerCommit: 1, onProgress: () => ranges++ });
    first.start();
    await waitFor(async () => ranges >= 5, 10_000, "five ranges");
    await first.stop();
    const head = await hre.ethers.provider.getBlockNumber();
    expect((await readCursor(db, "arc"))!.number).to.be.below(head);
    await syncToHead(inProcessIndexer(db, chain));
    expect(await dumpTables(db)).to.deep.equal(await freshIndexDump(chain));
    await db.destroy();
  });

  it("a second indexer of the same chain cannot commit a range the first already moved past", async function () {
    const fixture = await loadFixture(activeChainFixture);
    const chain = chainConfig(fixture);
    const db = await memoryDb();
    const first = inProcessIndexer(db, chain);
    await syncToHead(first);
    await mineBlocks(10); // a range without events: only the cursor guards it
    let raced = false;
    const second = inProcessIndexer(db, chain, {
      onStep: async (step) => {
        if (step !== "range-fetched" || raced) return;
        raced = true;
        await syncToHead(first); // the first indexer moves the cursor while the second holds the same range
      },
    });
    let error: unknown;
    await second.syncOnce().catch((e: unknown) => (error = e));
    expect((error as Error | undefined)?.name).to.equal("CursorMovedError");
    expect((await readCursor(db, "arc"))!.number).to.equal(await hre.ethers.provider.getBlockNumber());
    expect((await second.syncOnce()).caughtUp).to.equal(true);
    expect(await dumpTables(db)).to.deep.equal(await freshIndexDump(chain));
    await db.destroy();
  });

  it("in a worker thread: a worker killed with terminate() mid catch-up is resumed by the next one", async function () {
    await withWorkerDatabase(async ({ fixture, db, database, chain, head }) => {
      const errors: Error[] = [];
      const rnd = random(7);

      for (let round = 0; round < 2; round++) {
        let ranges = 0;
        const stopAfter = 2 + Math.floor(rnd() * 5);
        const handle = startIndexerWorker({
          ...database,
          chain,
          pollIntervalMs: 20,
          blockRange: { initial: 2, max: 3 },
          onProgress: () => ranges++,
          onError: (error) => errors.push(error),
        });
        await waitFor(async () => ranges >= stopAfter, 30_000, "worker progress");
        await new Promise((resolve) => setTimeout(resolve, rnd() * 20)); // anywhere in the next range
        await handle.worker.terminate();
        expect(errors.map((e) => e.message).join("\n")).to.match(/exited unexpectedly/);
        errors.length = 0;
      }
      const cursor = await readCursor(db, "arc");
      expect(cursor!.number).to.be.below(head);

      const last = startIndexerWorker({
        ...database,
        chain,
        pollIntervalMs: 20,
        projections: { module: require.resolve("./worker-projections"), export: "workerProjections" },
        onError: (error) => errors.push(error),
      });
      // The thread runs with its young generation of 64 MB (INDEXER_RESOURCE_LIMITS), as bench/indexer.ts measures it.
      expect(last.worker.resourceLimits?.maxYoungGenerationSizeMb).to.equal(64);
      await waitFor(async () => (await readCursor(db, "arc"))?.number === head, 30_000, "the worker to catch up");
      await last.stop();
      expect(await last.exited).to.equal(0);
      expect(errors).to.deep.equal([]);
      expect(await dumpTables(db)).to.deep.equal(await freshIndexDump(chainConfig(fixture)));
    });
  });

  it("in a worker thread: a supervised worker that ends is started again after a back-off, and not after stop()", async function () {
    await withWorkerDatabase(async ({ fixture, db, database, chain, head }) => {
      const errors: Error[] = [];
      let ranges = 0;
      const supervised = superviseIndexerWorker({
        ...database,
        chain,
        pollIntervalMs: 20,
        blockRange: { initial: 2, max: 3 },
        restartDelayMs: 50,
        maxRestartDelayMs: 200,
        onProgress: () => ranges++,
        onError: (error) => errors.push(error),
      });
      try {
        await waitFor(async () => ranges >= 3, 30_000, "worker progress");
        const first = supervised.current!;
        await first.worker.terminate(); // killed from outside, mid catch-up
        expect(errors.map((e) => e.message).join("\n")).to.match(/exited unexpectedly/);
        expect(supervised.restarts).to.equal(0);
        await waitFor(async () => supervised.current !== undefined && supervised.current !== first, 5_000, "a new thread");
        expect(supervised.restarts).to.equal(1);
        await waitFor(async () => (await readCursor(db, "arc"))?.number === head, 30_000, "the new thread to catch up");

        // Ended again, then stopped during the back-off: no thread is started after stop().
        await supervised.current!.worker.terminate();
        await supervised.stop();
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(supervised.restarts).to.equal(1);
        expect(supervised.current).to.equal(undefined);
      } finally {
        await supervised.stop();
      }
      expect(await dumpTables(db)).to.deep.equal(await freshIndexDump(chainConfig(fixture)));
    });
  });
});
