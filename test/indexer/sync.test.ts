import { expect } from "chai";
import hre from "hardhat";
import { loadFixture, mine } from "@nomicfoundation/hardhat-network-helpers";
import type { Filter, FilterByBlockHash } from "ethers";
import { createIndexer, createTaskProjection, indexerLag, type IndexerProvider, type Projection } from "../../server/indexer";
import { sql } from "kysely";
import { createDatabase, type Db } from "../../server/db";
import { testDatabase } from "../server/harness";
import { EscrowStatus } from "@market/core/escrow";
import { TaskEscrow__factory } from "../../typechain-types";
import { deployEscrowFixture } from "../fixtures/escrow";
import {
  chainConfig,
  countEscrowLogs,
  dumpTables,
  expectTasksMatchContract,
  freshIndexDump,
  inProcessIndexer,
  memoryDb,
  mineBlocks,
  randomActivity,
  syncToHead,
  waitFor,
} from "./helpers";

/** The indexer's own decoder agrees with ethers' Interface.parseLog on every stored event. */
async function expectArgsAsEthersDecodes(
  chain: { escrow: string; startBlock: number },
  events: { block_number: number; log_index: number; event: string; args: string }[],
) {
  const iface = TaskEscrow__factory.createInterface();
  const logs = await hre.ethers.provider.getLogs({ address: chain.escrow, fromBlock: chain.startBlock, toBlock: "latest" });
  for (const [i, log] of logs.entries()) {
    const parsed = iface.parseLog(log)!;
    const expected = Object.fromEntries(
      parsed.fragment.inputs.map((input, k) => {
        const value: unknown = parsed.args[k];
        return [input.name, typeof value === "bigint" ? value.toString() : value];
      }),
    );
    const stored = events[i]!;
    expect([stored.block_number, stored.log_index, stored.event]).to.deep.equal([log.blockNumber, log.index, parsed.name]);
    expect(JSON.parse(stored.args)).to.deep.equal(expected);
  }
}

describe("indexer sync", function () {
  it("catches up over many blocks and ranges, keeping every escrow log and each task as the escrow reports it", async function () {
    const fixture = await loadFixture(deployEscrowFixture);
    const chain = chainConfig(fixture);
    const hashes = await randomActivity(fixture, { seed: 1, steps: 120, tag: "catch-up" });
    // Empty stretches between ranges, through hardhat_mine: its reserved blocks carry a zero parent hash.
    await mine(500);
    await randomActivity(fixture, { seed: 2, steps: 40, tag: "catch-up-late" });

    const db = await memoryDb();
    const indexer = inProcessIndexer(db, chain, { blockRange: { initial: 40, max: 160 } });
    const ranges: number[] = [];
    const result = await syncToHead(
      createIndexer({
        db,
        chain,
        provider: hre.ethers.provider,
        pollIntervalMs: 20,
        blockRange: { initial: 40, max: 160 },
        // Each range read (a transaction may store several read ahead).
        onStep: (step, range) => void (step === "range-fetched" && ranges.push(range.to - range.from + 1)),
      }),
    );
    const head = await hre.ethers.provider.getBlockNumber();

    expect(result.to).to.equal(head);
    expect(result.from).to.equal(chain.startBlock);
    expect(ranges.length).to.be.greaterThan(5);
    expect(Math.max(...ranges)).to.be.within(100, 160); // grew from 40 toward the maximum
    const logs = await countEscrowLogs(chain);
    expect(result.events).to.equal(logs);
    const { events, tasks } = await dumpTables(db);
    expect(events).to.have.length(logs);
    await expectArgsAsEthersDecodes(chain, events as { block_number: number; log_index: number; event: string; args: string }[]);
    expect(tasks.length).to.be.greaterThan(50);
    expect(tasks.length).to.be.at.most(hashes.length + 100);
    expect(await expectTasksMatchContract(db, fixture)).to.equal(tasks.length);
    const lag = await indexerLag(db, "arc", head);
    expect(lag).to.include({ cursor: head, lag: 0 });

    // A second sync finds nothing new.
    const again = await indexer.syncOnce();
    expect(again).to.include({ events: 0, to: head, caughtUp: true });
    expect(again.from).to.equal(head + 1);
    await db.destroy();
  });

  it("reads the next range from the node while it stores the current one", async function () {
    const fixture = await loadFixture(deployEscrowFixture);
    const chain = chainConfig(fixture);
    await randomActivity(fixture, { seed: 3, steps: 40, tag: "read-ahead" });
    const inner = hre.ethers.provider;
    const order: string[] = [];
    const recording: IndexerProvider = {
      getBlockNumber: () => inner.getBlockNumber(),
      getBlock: (block) => inner.getBlock(block),
      getLogs(filter: Filter | FilterByBlockHash) {
        order.push(`read ${(filter as { fromBlock: number }).fromBlock}`);
        return inner.getLogs(filter);
      },
    };
    const db = await memoryDb();
    const fetched: Array<{ from: number; to: number }> = [];
    const committed: Array<{ from: number; to: number }> = [];
    await syncToHead(
      createIndexer({
        db,
        chain,
        provider: recording,
        pollIntervalMs: 20,
        blockRange: { initial: 10, max: 10, readAhead: 1 },
        // Storing a range takes a while (as a real database's writes do): the next range's read overlaps it.
        projections: [
          createTaskProjection(),
          { name: "slow", apply: () => new Promise((resolve) => setTimeout(resolve, 30)), rollback: async () => {} },
        ],
        onStep: (step, range) => {
          if (step === "range-fetched") fetched.push(range);
          if (step !== "committed") return;
          order.push(`stored ${range.from}`);
          committed.push(range);
        },
      }),
    );
    expect(fetched.length).to.be.greaterThan(3);
    // Every range but the last: the next one was asked for before the transaction storing this one committed (a
    // transaction may store several ranges, those read by the time it began).
    for (const range of fetched.slice(0, -1)) {
      const storedBy = committed.find((c) => c.from <= range.to && range.to <= c.to)!;
      expect(order.indexOf(`read ${range.to + 1}`), `range ${range.from}-${range.to}`).to.be.within(0, order.indexOf(`stored ${storedBy.from}`));
    }
    expect(await dumpTables(db)).to.deep.equal(await freshIndexDump(chain));
    await db.destroy();
  });

  it("keeps readAhead ranges in flight, stores them in chain order, and joins those already read into one transaction", async function () {
    const fixture = await loadFixture(deployEscrowFixture);
    const chain = chainConfig(fixture);
    await randomActivity(fixture, { seed: 6, steps: 60, tag: "in-flight" });
    const inner = hre.ethers.provider;
    let inFlight = 0;
    let most = 0;
    const counting: IndexerProvider = {
      getBlockNumber: () => inner.getBlockNumber(),
      getBlock: (block) => inner.getBlock(block),
      async getLogs(filter: Filter | FilterByBlockHash) {
        most = Math.max(most, ++inFlight);
        try {
          // A node that takes a while to answer.
          await new Promise((resolve) => setTimeout(resolve, 15));
          return await inner.getLogs(filter);
        } finally {
          inFlight--;
        }
      },
    };
    const db = await memoryDb();
    const read: Array<{ from: number; to: number }> = [];
    const committed: Array<{ from: number; to: number; events: number }> = [];
    await syncToHead(
      createIndexer({
        db,
        chain,
        provider: counting,
        pollIntervalMs: 20,
        blockRange: { initial: 4, max: 4, readAhead: 3 },
        // Storing takes longer than a read: ranges are ready when the one before them is stored.
        projections: [
          createTaskProjection(),
          { name: "slow", apply: () => new Promise((resolve) => setTimeout(resolve, 60)), rollback: async () => {} },
        ],
        onStep: (step, range) => void (step === "range-fetched" && read.push(range)),
        onProgress: ({ from, to, events }) => committed.push({ from, to, events }),
      }),
    );
    expect(most).to.equal(3);
    // Read and stored in order, contiguous, each block once.
    for (const list of [read, committed]) {
      expect(list[0]!.from).to.equal(chain.startBlock);
      for (const [i, range] of list.entries()) if (i > 0) expect(range.from).to.equal(list[i - 1]!.to + 1);
      expect(list.at(-1)!.to).to.equal(await hre.ethers.provider.getBlockNumber());
    }
    expect(read.every((range) => range.to - range.from + 1 <= 4)).to.equal(true);
    expect(committed.length).to.be.below(read.length);
    expect(committed.some((c) => c.to - c.from + 1 > 4)).to.equal(true);
    expect(await dumpTables(db)).to.deep.equal(await freshIndexDump(chain));
    await db.destroy();
  });

  it("follows new blocks while polling", async function () {
    const fixture = await loadFixture(deployEscrowFixture);
    const { escrow, poster, verifier, worker, token } = fixture;
    const db = await memoryDb();
    const indexer = inProcessIndexer(db, chainConfig(fixture), { pollIntervalMs: 10 });
    indexer.start();
    try {
      const taskHash = hre.ethers.id("live task");
      const statusOf = async () =>
        (await db.selectFrom("escrow_tasks").select("status").where("task_hash", "=", taskHash).executeTakeFirst())?.status;
      await escrow.connect(poster).createTask(taskHash, token, 5_000_000n, 86_400n, hre.ethers.ZeroAddress);
      await waitFor(async () => (await statusOf()) === EscrowStatus.Funded, 5_000, "the funded task");
      await escrow.connect(verifier).marketplaceAssign(taskHash, worker.address);
      await waitFor(async () => (await statusOf()) === EscrowStatus.Assigned, 5_000, "the assignment");
      await escrow.connect(worker).submitEvidence(taskHash, hre.ethers.id("result"));
      await escrow.connect(verifier).completeVerification(taskHash, true, 95);
      await waitFor(async () => (await statusOf()) === EscrowStatus.Verified, 5_000, "the payout");
    } finally {
      await indexer.stop();
    }
    const row = await db.selectFrom("escrow_tasks").selectAll().executeTakeFirstOrThrow();
    expect(row).to.include({ rounds: 1, last_score: 95, payout: "4500000", fee: "500000", ending: 1 });
    await expectTasksMatchContract(db, fixture);
    await db.destroy();
  });

  it("on PostgreSQL its transactions, and only they, commit without waiting for the disk (synchronous_commit off)", async function () {
    if (!process.env.TEST_DATABASE_URL) this.skip(); // SQLite: WAL with synchronous=NORMAL, set for every connection
    const fixture = await loadFixture(deployEscrowFixture);
    const chain = chainConfig(fixture);
    await randomActivity(fixture, { seed: 7, steps: 10, tag: "async-commit" });
    // Its own connections, set to wait for the disk (the test cluster itself runs with synchronous_commit off).
    const base = await testDatabase();
    const url = new URL(base.url!);
    url.searchParams.set("options", "-c synchronous_commit=on");
    const db = createDatabase({ databaseUrl: url.toString() });
    const seen: string[] = [];
    const settingIn = async (executor: Db) =>
      (await sql<{ synchronous_commit: string }>`show synchronous_commit`.execute(executor)).rows[0]!.synchronous_commit;
    const observer: Projection = {
      name: "synchronous-commit-observer",
      async apply(trx) {
        seen.push(await settingIn(trx));
      },
      async rollback() {},
    };
    const result = await syncToHead(
      createIndexer({ db, chain, provider: hre.ethers.provider, pollIntervalMs: 50, projections: [createTaskProjection(), observer] }),
    );
    expect(result.events).to.be.above(0);
    expect(seen.length).to.be.above(0);
    expect(new Set(seen)).to.deep.equal(new Set(["off"]));
    // Outside the indexer's transactions the server's own default stands.
    expect(await settingIn(db)).to.equal("on");
    await db.destroy();
    await base.drop();
  });

  it("stays `confirmations` blocks behind the head", async function () {
    const fixture = await loadFixture(deployEscrowFixture);
    await randomActivity(fixture, { seed: 3, steps: 20, tag: "confirmations" });
    const db = await memoryDb();
    const result = await syncToHead(inProcessIndexer(db, chainConfig(fixture, { confirmations: 5 })));
    const head = await hre.ethers.provider.getBlockNumber();
    expect(result.to).to.equal(head - 5);
    expect(result.target).to.equal(head - 5);
    expect(
      await db
        .selectFrom("escrow_events")
        .where("block_number", ">", head - 5)
        .select("log_index")
        .execute(),
    ).to.have.length(0);
    await db.destroy();
  });

  it("commits a range with many events in transactions of at most maxEventsPerCommit, cut between blocks", async function () {
    const fixture = await loadFixture(deployEscrowFixture);
    const chain = chainConfig(fixture);
    const { escrow, poster, token } = fixture;
    // Dense blocks of 15, 15, 30 and 5 TaskCreated, then empty blocks: one eth_getLogs range holds them all.
    let n = 0;
    const createTasks = (count: number) =>
      escrow.connect(poster).createTasks(
        Array.from({ length: count }, () => ({
          taskHash: hre.ethers.id(`dense ${n++}`),
          token,
          amount: 1n,
          duration: 86_400n,
          verifier: hre.ethers.ZeroAddress,
        })),
        { gasLimit: 3_000_000 },
      );
    await hre.network.provider.send("evm_setAutomine", [false]);
    try {
      for (const txs of [[5, 5, 5], [5, 10], [10, 10, 10], [5]]) {
        for (const count of txs) await createTasks(count);
        await hre.network.provider.send("evm_mine", []);
      }
    } finally {
      await hre.network.provider.send("evm_setAutomine", [true]);
    }
    await mineBlocks(5);

    const db = await memoryDb();
    const commits: { from: number; to: number; events: number }[] = [];
    const result = await syncToHead(
      inProcessIndexer(db, chain, { maxEventsPerCommit: 20, onProgress: ({ from, to, events }) => commits.push({ from, to, events }) }),
    );
    const head = await hre.ethers.provider.getBlockNumber();
    expect(result.events).to.equal(await countEscrowLogs(chain));
    expect(commits.length).to.be.at.least(4);
    // Contiguous, whole blocks, each stored by one transaction: at most 20 events unless they are one block's.
    expect(commits[0]!.from).to.equal(chain.startBlock);
    expect(commits.at(-1)!.to).to.equal(head);
    const stored = (await dumpTables(db)).events as { block_number: number }[];
    for (const [i, commit] of commits.entries()) {
      if (i > 0) expect(commit.from).to.equal(commits[i - 1]!.to + 1);
      const blocks = stored.filter((e) => e.block_number >= commit.from && e.block_number <= commit.to).map((e) => e.block_number);
      expect(blocks).to.have.length(commit.events);
      if (commit.events > 20) expect(new Set(blocks).size, `commit ${i}`).to.equal(1);
    }
    expect(commits.map((c) => c.events)).to.include(30);
    expect(await dumpTables(db)).to.deep.equal(await freshIndexDump(chain));
    await db.destroy();
  });

  it("halves the range when the node refuses a query and grows it back, missing nothing", async function () {
    const fixture = await loadFixture(deployEscrowFixture);
    const chain = chainConfig(fixture);
    await randomActivity(fixture, { seed: 4, steps: 80, tag: "refusals" });
    await mineBlocks(200);
    await randomActivity(fixture, { seed: 5, steps: 20, tag: "refusals-late" });
    // Three dense blocks in a row: any range over two of them holds more logs than the node answers with.
    for (let batch = 0; batch < 3; batch++) {
      const tasks = Array.from({ length: 15 }, (_, i) => ({
        taskHash: hre.ethers.id(`dense ${batch} ${i}`),
        token: fixture.token,
        amount: 1n,
        duration: 86_400n,
        verifier: hre.ethers.ZeroAddress,
      }));
      await fixture.escrow.connect(fixture.poster).createTasks(tasks);
    }

    const inner = hre.ethers.provider;
    // One range read at a time, and several ahead: a refused range's successors, read meanwhile, are dropped.
    for (const readAhead of [1, 2, 4]) {
      const refusals: string[] = [];
      const asked: number[] = [];
      // A node that refuses more than 12 blocks per query, and more than 25 logs in a response (naming a range to try).
      const picky: IndexerProvider = {
        getBlockNumber: () => inner.getBlockNumber(),
        getBlock: (block) => inner.getBlock(block),
        async getLogs(filter: Filter | FilterByBlockHash) {
          const { fromBlock, toBlock } = filter as { fromBlock: number; toBlock: number };
          const span = toBlock - fromBlock + 1;
          asked.push(span);
          if (span > 12) {
            refusals.push("range");
            throw Object.assign(new Error("could not coalesce error"), {
              error: { code: -32602, message: `eth_getLogs block range too large, range: ${span}, max: 12` },
            });
          }
          const logs = await inner.getLogs(filter);
          if (logs.length > 25) {
            refusals.push("results");
            const half = `0x${fromBlock.toString(16)}, 0x${(fromBlock + Math.floor(span / 3)).toString(16)}`;
            throw new Error(`query returned more than 25 results. Try with this block range [${half}].`);
          }
          return logs;
        },
      };
      const db = await memoryDb();
      const result = await syncToHead(
        createIndexer({ db, chain, provider: picky, pollIntervalMs: 20, blockRange: { initial: 64, max: 64, readAhead } }),
      );
      expect(refusals, `readAhead ${readAhead}`).to.include("range").and.to.include("results");
      // It came back up to the node's limit after shrinking below it.
      expect(asked.some((span, i) => span < 12 && asked.slice(i + 1).includes(12))).to.equal(true);
      expect(result.events).to.equal(await countEscrowLogs(chain));
      expect(await dumpTables(db), `readAhead ${readAhead}`).to.deep.equal(await freshIndexDump(chain));
      await db.destroy();
    }
  });
});
