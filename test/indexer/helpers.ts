/** Shared by the indexer tests: databases, table dumps, a random escrow activity generator and an HTTP view of the chain. */
import { expect } from "chai";
import hre from "hardhat";
import { TASK_NODE_CREATE_SERVER } from "hardhat/builtin-tasks/task-names";
import { time } from "@nomicfoundation/hardhat-network-helpers";
import type { ContractTransactionResponse } from "ethers";
import { createDatabase, migrateToLatest, type Db } from "../../server/db";
import type { ChainConfig } from "../../server/config";
import { createIndexer, taskSnapshotOf, type IndexerOptions, type IndexerProvider, type SyncResult } from "../../server/indexer";
import { DAY, HOUR, deployEscrowFixture } from "../fixtures/escrow";
import { testDatabase } from "../server/harness";
import { Ending, EscrowStatus } from "@market/core/escrow";

export type EscrowFixture = Awaited<ReturnType<typeof deployEscrowFixture>>;

/**
 * A fresh migrated database of its own: SQLite in memory, or under `npm run test:postgres` (TEST_DATABASE_URL) a new
 * PostgreSQL database, so the indexer's tests prove it on both.
 */
export async function memoryDb(): Promise<Db> {
  if (process.env.TEST_DATABASE_URL) return (await testDatabase()).db;
  const db = createDatabase({ sqlitePath: ":memory:" });
  await migrateToLatest(db);
  return db;
}

export function chainConfig(fixture: EscrowFixture, overrides: Partial<ChainConfig> = {}): ChainConfig {
  return {
    name: "arc",
    chainId: 31337,
    rpcUrl: "http://127.0.0.1:8545",
    escrow: fixture.escrowAddress,
    token: fixture.token,
    startBlock: fixture.deployment.block,
    confirmations: 0,
    postable: true,
    ...overrides,
  };
}

export function inProcessIndexer(db: Db, chain: ChainConfig, options: Partial<IndexerOptions> = {}) {
  return createIndexer({ db, chain, provider: hre.ethers.provider, pollIntervalMs: 20, ...options });
}

/** Syncs until the cursor reaches head - confirmations. */
export async function syncToHead(indexer: { syncOnce(): Promise<SyncResult> }): Promise<SyncResult> {
  for (;;) {
    const result = await indexer.syncOnce();
    if (result.caughtUp) return result;
  }
}

export interface Dump {
  cursor: unknown;
  events: unknown[];
  tasks: unknown[];
  state: unknown[];
}

/** Everything the indexer owns except bookkeeping that depends on range boundaries (indexed_blocks, updated_at). */
export async function dumpTables(db: Db, chain = "arc"): Promise<Dump> {
  const cursor = await db.selectFrom("indexer_cursors").select(["block_number", "block_hash"]).where("chain", "=", chain).executeTakeFirst();
  const events = await db.selectFrom("escrow_events").selectAll().where("chain", "=", chain).orderBy("block_number").orderBy("log_index").execute();
  const tasks = await db.selectFrom("escrow_tasks").selectAll().where("chain", "=", chain).orderBy("task_hash").execute();
  const state = await db.selectFrom("escrow_state").selectAll().where("chain", "=", chain).execute();
  return { cursor: cursor ?? null, events, tasks, state };
}

/** The tables of a fresh, uninterrupted index of the chain as it is now. */
export async function freshIndexDump(chain: ChainConfig, provider: IndexerProvider = hre.ethers.provider): Promise<Dump> {
  const db = await memoryDb();
  try {
    await syncToHead(createIndexer({ db, chain, provider, pollIntervalMs: 20 }));
    return await dumpTables(db, chain.name);
  } finally {
    await db.destroy();
  }
}

/** Every escrow log of the chain, counted by the node itself. */
export async function countEscrowLogs(chain: ChainConfig): Promise<number> {
  const head = await hre.ethers.provider.getBlockNumber();
  const logs = await hre.ethers.provider.getLogs({ address: chain.escrow, fromBlock: chain.startBlock, toBlock: head });
  return logs.length;
}

/** Compares each indexed task with the escrow's own view (call while the escrow is not paused). */
export async function expectTasksMatchContract(db: Db, fixture: EscrowFixture, chain = "arc"): Promise<number> {
  const rows = await db.selectFrom("escrow_tasks").selectAll().where("chain", "=", chain).execute();
  for (const row of rows) {
    const onChain = await fixture.escrow.getTask(row.task_hash);
    const where = `task ${row.task_hash}`;
    expect(row.poster, where).to.equal(onChain.poster);
    expect(row.worker ?? hre.ethers.ZeroAddress, where).to.equal(onChain.worker);
    expect(row.verifier ?? hre.ethers.ZeroAddress, where).to.equal(onChain.verifier);
    expect(row.token, where).to.equal(onChain.token);
    expect(row.amount, where).to.equal(onChain.amount.toString());
    expect(row.status, where).to.equal(Number(onChain.status));
    expect(row.rounds, where).to.equal(Number(onChain.rounds));
    expect(row.ending, where).to.equal(Number(onChain.ending));
    if (row.ending === Ending.None) {
      // Ended tasks keep the deadline they ended with; the escrow's view keeps moving it with later pauses.
      expect(row.deadline, where).to.equal(Number(onChain.deadline));
      expect(taskSnapshotOf(row).windowEndsAt, where).to.equal(Number(onChain.windowEndsAt));
    }
  }
  return rows.length;
}

/** Small seeded PRNG (mulberry32), so a failing scenario can be replayed. */
export function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Random escrow activity: batches and single tasks, every transition (assignments by the marketplace verifier and by
 * the poster), time travel past deadlines and windows, pauses, fee changes and empty blocks. Actions the escrow
 * refuses are skipped. Returns the task hashes created.
 */
export async function randomActivity(fixture: EscrowFixture, options: { seed: number; steps: number; tag: string }): Promise<string[]> {
  const { escrow, token, admin, verifier, poster, worker, agentVerifier } = fixture;
  const rnd = random(options.seed);
  const hashes: string[] = [];
  let n = 0;
  const nextHash = () => {
    const hash = hre.ethers.id(`${options.tag}-${options.seed}-${n++}`);
    hashes.push(hash);
    return hash;
  };
  const attempt = async (send: () => Promise<ContractTransactionResponse>) => {
    try {
      await (await send()).wait();
    } catch {
      // refused by the escrow in this state: skip
    }
  };

  /** Tasks not known to have ended; picks favour the newest, so tasks live through whole life cycles. */
  const live: string[] = [];
  for (let i = 0; i < options.steps; i++) {
    const roll = rnd();
    if (roll < 0.07 || live.length === 0) {
      const count = 1 + Math.floor(rnd() * 10);
      const tasks = Array.from({ length: count }, () => ({
        taskHash: nextHash(),
        token,
        amount: BigInt(1 + Math.floor(rnd() * 5_000_000)),
        duration: BigInt(DAY + Math.floor(rnd() * 3 * DAY)),
        verifier: rnd() < 0.2 ? agentVerifier.address : hre.ethers.ZeroAddress,
      }));
      await attempt(() => escrow.connect(poster).createTasks(tasks));
      live.push(...tasks.map((t) => t.taskHash));
    } else if (roll < 0.12) {
      const hash = nextHash();
      await attempt(() => escrow.connect(poster).createTask(hash, token, 1_000_000n, BigInt(2 * DAY), hre.ethers.ZeroAddress));
      live.push(hash);
    } else if (roll < 0.85) {
      const index = Math.max(0, live.length - 1 - Math.floor(rnd() * 12));
      const hash = live[index]!;
      const task = await escrow.getTask(hash);
      if (task.poster === hre.ethers.ZeroAddress || Number(task.ending) !== Ending.None) {
        live.splice(index, 1);
        continue;
      }
      const judge = task.verifier === hre.ethers.ZeroAddress ? verifier : agentVerifier;
      const status = Number(task.status);
      if (status === EscrowStatus.Assigned && rnd() < 0.1) {
        await attempt(() => escrow.connect(worker).releaseTask(hash));
      } else if (status === EscrowStatus.Funded) {
        if (rnd() < 0.15) await attempt(() => escrow.connect(poster).cancelTask(hash));
        else if (rnd() < 0.1) await attempt(() => escrow.connect(poster).claimTimeout(hash));
        else if (rnd() < 0.3) await attempt(() => escrow.connect(poster).assignWorker(hash, worker.address));
        else await attempt(() => escrow.connect(verifier).marketplaceAssign(hash, worker.address));
      } else if (status === EscrowStatus.Assigned || status === EscrowStatus.Failed) {
        const dispute = rnd() < 0.15;
        if (dispute) await attempt(() => escrow.connect(rnd() < 0.5 ? poster : worker).raiseDispute(hash));
        else if (rnd() < 0.15) await attempt(() => escrow.connect(poster).claimTimeout(hash));
        else await attempt(() => escrow.connect(worker).submitEvidence(hash, hre.ethers.id(`${hash}-${i}`)));
      } else if (status === EscrowStatus.Submitted) {
        if (rnd() < 0.15) await attempt(() => escrow.connect(poster).claimTimeout(hash));
        else await attempt(() => escrow.connect(judge).completeVerification(hash, rnd() < 0.5, Math.floor(rnd() * 101)));
      } else if (status === EscrowStatus.Disputed || status === EscrowStatus.Escalated) {
        if (rnd() < 0.5) await attempt(() => escrow.connect(admin).resolveDispute(hash, rnd() < 0.5));
        else if (status === EscrowStatus.Escalated) await attempt(() => escrow.connect(worker).releaseUnjudgedWork(hash));
        else await attempt(() => escrow.connect(poster).claimTimeout(hash));
      }
    } else if (roll < 0.89) {
      await time.increase(Math.floor(rnd() * 4 * DAY));
    } else if (roll < 0.93) {
      await attempt(() => escrow.connect(admin).pause());
      await time.increase(HOUR + Math.floor(rnd() * DAY));
      await attempt(() => escrow.connect(admin).unpause());
    } else if (roll < 0.95) {
      await attempt(() => escrow.connect(admin).setFeeBps(Math.floor(rnd() * 3000)));
    } else {
      await mineBlocks(1 + Math.floor(rnd() * 30));
    }
  }
  return hashes;
}

/** Mines empty blocks one by one (evm_mine), each with its real parent hash. */
export async function mineBlocks(count: number): Promise<void> {
  for (let i = 0; i < count; i++) await hre.network.provider.send("evm_mine", []);
}

/** The in-process network over HTTP on a free loopback port, for a worker's own JSON-RPC provider. */
export async function serveNetwork(): Promise<{ url: string; close(): Promise<void> }> {
  const server = (await hre.run(TASK_NODE_CREATE_SERVER, {
    hostname: "127.0.0.1",
    port: 0,
    provider: hre.network.provider,
  })) as { listen(): Promise<{ address: string; port: number }>; close(): Promise<void> };
  const { port } = await server.listen();
  return { url: `http://127.0.0.1:${port}`, close: () => server.close() };
}

/** Resolves once `check` returns true, polling every few milliseconds. */
export async function waitFor(check: () => Promise<boolean>, timeoutMs = 20_000, what = "condition"): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
