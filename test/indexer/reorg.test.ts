import { expect } from "chai";
import hre from "hardhat";
import { loadFixture, mine } from "@nomicfoundation/hardhat-network-helpers";
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
} from "./helpers";

const send = (method: string, params: unknown[] = []) => hre.network.provider.send(method, params);

describe("indexer reorgs", function () {
  it("rolls back to the common ancestor and ends equal to a fresh index of the new chain", async function () {
    const fixture = await loadFixture(deployEscrowFixture);
    const chain = chainConfig(fixture);
    await randomActivity(fixture, { seed: 10, steps: 60, tag: "before-fork" });
    const db = await memoryDb();
    const indexer = inProcessIndexer(db, chain, { blockRange: { initial: 8, max: 32 } });
    await syncToHead(indexer);

    // The old branch: activity on the shared tasks (including pauses, which move every live task) and new tasks.
    const fork = (await send("evm_snapshot")) as string;
    await randomActivity(fixture, { seed: 11, steps: 50, tag: "old-branch" });
    await fixture.escrow.connect(fixture.admin).pause();
    await hre.network.provider.send("evm_increaseTime", [3_600]);
    await fixture.escrow.connect(fixture.admin).unpause();
    await syncToHead(indexer);
    const oldBranch = await dumpTables(db);

    await send("evm_revert", [fork]);
    await randomActivity(fixture, { seed: 12, steps: 40, tag: "new-branch" });
    const result = await syncToHead(indexer);

    expect(result.removed).to.be.greaterThan(0);
    const now = await dumpTables(db);
    expect(now).to.not.deep.equal(oldBranch);
    expect(now).to.deep.equal(await freshIndexDump(chain));
    expect(now.events).to.have.length(await countEscrowLogs(chain));
    await expectTasksMatchContract(db, fixture);
    await db.destroy();
  });

  it("notices a reorg onto blocks reserved by hardhat_mine, whose parent hash is zero", async function () {
    const fixture = await loadFixture(deployEscrowFixture);
    const chain = chainConfig(fixture);
    const db = await memoryDb();
    const indexer = inProcessIndexer(db, chain);
    await syncToHead(indexer);
    const fork = (await send("evm_snapshot")) as string;
    await randomActivity(fixture, { seed: 13, steps: 10, tag: "old-branch" });
    const cursor = (await syncToHead(indexer)).to;

    await send("evm_revert", [fork]);
    await send("hardhat_mine", ["0x40"]);
    // The block the indexer reads next cannot be linked to its cursor by parent hash.
    expect((await hre.ethers.provider.getBlock(cursor + 1))?.parentHash).to.equal(hre.ethers.ZeroHash);
    const result = await syncToHead(indexer);

    expect(result.removed).to.be.greaterThan(0);
    const now = await dumpTables(db);
    expect(now).to.deep.equal(await freshIndexDump(chain));
    expect(now.events).to.have.length(await countEscrowLogs(chain));
    await db.destroy();
  });

  it("notices a chain that got shorter, and one that swapped its last blocks for as many others", async function () {
    const fixture = await loadFixture(deployEscrowFixture);
    const chain = chainConfig(fixture);
    await randomActivity(fixture, { seed: 20, steps: 20, tag: "base" });
    const db = await memoryDb();
    const indexer = inProcessIndexer(db, chain);
    await syncToHead(indexer);

    // Shorter: five blocks with events replaced by two.
    let fork = (await send("evm_snapshot")) as string;
    const { escrow, poster, token } = fixture;
    const create = (name: string) => escrow.connect(poster).createTask(hre.ethers.id(name), token, 1_000_000n, 86_400n, hre.ethers.ZeroAddress);
    for (let i = 0; i < 5; i++) await create(`long-${i}`);
    await syncToHead(indexer);
    await send("evm_revert", [fork]);
    await create("short-0");
    await mineBlocks(1);
    let result = await syncToHead(indexer);
    expect(result.removed).to.equal(5);
    expect(result.to).to.equal(await hre.ethers.provider.getBlockNumber());
    expect(await dumpTables(db)).to.deep.equal(await freshIndexDump(chain));

    // Same height: the head block replaced by another with the same number; no block above the cursor to check.
    fork = (await send("evm_snapshot")) as string;
    await create("same-height-a");
    await syncToHead(indexer);
    await send("evm_revert", [fork]);
    await create("same-height-b");
    result = await syncToHead(indexer);
    expect(result.removed).to.equal(1);
    expect(await dumpTables(db)).to.deep.equal(await freshIndexDump(chain));
    const hashes = (await db.selectFrom("escrow_tasks").select("task_hash").execute()).map((r) => r.task_hash);
    expect(hashes).to.include(hre.ethers.id("same-height-b")).and.not.include(hre.ethers.id("same-height-a"));
    await db.destroy();
  });

  it("a shallow reorg right after a catch-up range longer than the kept history rolls back only that range", async function () {
    const fixture = await loadFixture(deployEscrowFixture);
    const chain = chainConfig(fixture);
    const { escrow, poster, token } = fixture;
    const create = (name: string) => escrow.connect(poster).createTask(hre.ethers.id(name), token, 1_000_000n, 86_400n, hre.ethers.ZeroAddress);
    for (let i = 0; i < 3; i++) await create(`early ${i}`);
    const db = await memoryDb();
    const indexer = inProcessIndexer(db, chain, { blockRange: { initial: 10_000, max: 10_000 } });
    await syncToHead(indexer);
    const early = (await dumpTables(db)).events.length;
    const longRangeFrom = (await hre.ethers.provider.getBlockNumber()) + 1;

    // One range of more than REORG_HISTORY_BLOCKS blocks without logs, whose last five blocks are then replaced.
    await mine(3_000);
    const fork = (await send("evm_snapshot")) as string;
    await mineBlocks(5);
    await syncToHead(indexer);
    await send("evm_revert", [fork]);
    await create("other branch");
    await mineBlocks(5);
    const result = await syncToHead(indexer);

    expect(result.removed).to.equal(0);
    expect(result.from).to.be.greaterThan(longRangeFrom);
    const now = await dumpTables(db);
    expect(now.events).to.have.length(early + 1);
    expect(now).to.deep.equal(await freshIndexDump(chain));
    await db.destroy();
  });

  it("undoes a rolled-back unpause on every task it moved", async function () {
    const fixture = await loadFixture(deployEscrowFixture);
    const chain = chainConfig(fixture);
    const { escrow, admin, poster, verifier, worker, token } = fixture;
    const hash = (name: string) => hre.ethers.id(`unpause ${name}`);
    await escrow.connect(poster).createTask(hash("live"), token, 1_000_000n, 86_400n * 5n, hre.ethers.ZeroAddress);
    await escrow.connect(poster).createTask(hash("failed"), token, 1_000_000n, 86_400n * 5n, hre.ethers.ZeroAddress);
    await escrow.connect(verifier).marketplaceAssign(hash("failed"), worker.address);
    await escrow.connect(worker).submitEvidence(hash("failed"), hre.ethers.id("r"));
    await escrow.connect(verifier).completeVerification(hash("failed"), false, 10);
    const db = await memoryDb();
    const indexer = inProcessIndexer(db, chain);
    await syncToHead(indexer);
    const before = await dumpTables(db);

    const fork = (await send("evm_snapshot")) as string;
    await escrow.connect(admin).pause();
    await hre.network.provider.send("evm_increaseTime", [7_200]);
    await escrow.connect(admin).unpause();
    await syncToHead(indexer);
    const moved = await db.selectFrom("escrow_tasks").select(["task_hash", "deadline", "phase_at"]).orderBy("task_hash").execute();
    const original = before.tasks as typeof moved;
    for (const [i, row] of moved.entries()) expect(row.deadline - original[i]!.deadline).to.be.within(7_200, 7_210);

    await send("evm_revert", [fork]);
    await mineBlocks(3);
    const result = await syncToHead(indexer);
    expect(result.removed).to.equal(2);
    const after = await dumpTables(db);
    expect(after.tasks).to.deep.equal(before.tasks);
    expect(after.state).to.deep.equal(before.state);
    await expectTasksMatchContract(db, fixture);
    await db.destroy();
  });
});
