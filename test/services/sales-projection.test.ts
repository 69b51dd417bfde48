/**
 * `sold_count` as the indexer projects it: once per settled paid rental (every payout ending), never for a refund or
 * a task that is no rental, the same after a re-index of everything, and back down when a reorg removes a settlement.
 */
import { expect } from "chai";
import hre from "hardhat";
import { loadFixture, time } from "@nomicfoundation/hardhat-network-helpers";
import { deployEscrowFixture, DAY } from "../fixtures/escrow";
import { chainConfig, inProcessIndexer, memoryDb, mineBlocks, syncToHead, type EscrowFixture } from "../indexer/helpers";
import { defaultProjections } from "../../server/projections";
import type { Db } from "../../server/db";

const send = (method: string, params: unknown[] = []) => hre.network.provider.send(method, params);
const PRICE = 2_000_000n;

/** A hosted agent (the fixture's worker wallet) with one service, and the listing of each task, as the API records them. */
async function seedService(db: Db, fixture: EscrowFixture): Promise<number> {
  const account = await db.insertInto("accounts").values({ created_at: Date.now() }).returning("id").executeTakeFirstOrThrow();
  const agent = await db
    .insertInto("hosted_agents")
    .values({
      address: fixture.worker.address,
      account_id: account.id,
      owner_address: fixture.stranger.address,
      owner_public_key: "04".padEnd(130, "1"),
      display_name: "Seller",
      instructions: "Work.",
      model_base_url: "http://127.0.0.1:9/v1",
      model_name: "m",
      capabilities: "[]",
      min_reward: null,
      subtask_max_reward: null,
      state: "running",
      running_config: null,
      last_error: null,
      exported_at: null,
      created_at: Date.now(),
      updated_at: Date.now(),
    })
    .returning("id")
    .executeTakeFirstOrThrow();
  const service = await db
    .insertInto("services")
    .values({
      agent_id: agent.id,
      agent_address: fixture.worker.address,
      name: "Seller's service",
      description: "",
      price_raw: PRICE.toString(),
      service_type: "api",
      active: 1,
      created_at: Date.now(),
      updated_at: Date.now(),
      deleted_at: null,
    })
    .returning("id")
    .executeTakeFirstOrThrow();
  return service.id;
}

async function list(db: Db, fixture: EscrowFixture, taskHash: string, fundingTx: string, serviceId: number | null) {
  await db
    .insertInto("listings")
    .values({
      task_hash: taskHash,
      chain: "arc",
      poster: fixture.poster.address,
      privacy: "public",
      public_brief: taskHash,
      routing_summary: null,
      root_hash: null,
      verification_mode: "auto",
      verification_criteria: JSON.stringify({ min_length: 20 }),
      required_capabilities: "[]",
      location_zone: "global",
      target_executor: fixture.worker.address,
      target_executor_type: "agent",
      service_id: serviceId,
      verifier_address: null,
      key_custody_blob: null,
      token: fixture.token,
      funding_tx: fundingTx,
      listed_at: Date.now(),
    })
    .execute();
}

describe("services: sold_count in the indexer's projection", function () {
  this.timeout(120_000);

  it("counts each settled paid rental once: every payout ending, no refund, no plain task; unchanged by a re-index; undone by a reorg", async function () {
    const fixture = await loadFixture(deployEscrowFixture);
    const { escrow, poster, worker, verifier, admin } = fixture;
    const chain = chainConfig(fixture);
    const db = await memoryDb();
    const serviceId = await seedService(db, fixture);
    const indexer = inProcessIndexer(db, chain, { projections: defaultProjections() });

    /** Funds a task, records its listing (a rental when `rental`), assigns it to the worker and delivers. */
    async function delivered(name: string, rental = true): Promise<string> {
      const taskHash = hre.ethers.id(name);
      const funded = await escrow.connect(poster).createTask(taskHash, fixture.token, PRICE, 3_600n, hre.ethers.ZeroAddress);
      await list(db, fixture, taskHash, funded.hash, rental ? serviceId : null);
      await escrow.connect(verifier).marketplaceAssign(taskHash, worker.address);
      await escrow.connect(worker).submitEvidence(taskHash, hre.ethers.id(`result of ${name}`));
      return taskHash;
    }
    const sold = async () => (await db.selectFrom("services").select("sold_count").where("id", "=", serviceId).executeTakeFirstOrThrow()).sold_count;
    const sales = async () =>
      (await db.selectFrom("service_sales").select(["task_hash", "service_id", "amount"]).orderBy("task_hash").execute()).map((r) => r.task_hash);

    // Paid: verification passed, and a dispute ruled for the worker.
    const passed = await delivered("rental: passed");
    await escrow.connect(verifier).completeVerification(passed, true, 90);
    const ruled = await delivered("rental: dispute won by the worker");
    await escrow.connect(poster).raiseDispute(ruled);
    await escrow.connect(admin).resolveDispute(ruled, true);
    // Refunds: cancelled while open; failed and claimed after the window. And a plain task paid, no rental.
    const cancelled = hre.ethers.id("rental: cancelled");
    const funding = await escrow.connect(poster).createTask(cancelled, fixture.token, PRICE, 3_600n, hre.ethers.ZeroAddress);
    await list(db, fixture, cancelled, funding.hash, serviceId);
    await escrow.connect(poster).cancelTask(cancelled);
    const failed = await delivered("rental: failed and claimed");
    await escrow.connect(verifier).completeVerification(failed, false, 10);
    const plain = await delivered("a plain pinned task", false);
    await escrow.connect(verifier).completeVerification(plain, true, 90);
    await time.increase(3_600 + 3 * DAY + 1);
    await escrow.connect(poster).claimTimeout(failed);

    await syncToHead(indexer);
    expect(await sold()).to.equal(2);
    expect(await sales()).to.deep.equal([passed, ruled].sort());
    // Each settlement is a `rental.settled` event too (issue 27), beside its task.paid, seen as the task's events are.
    const settledEvents = () => db.selectFrom("events").selectAll().where("type", "=", "rental.settled").orderBy("seq").execute();
    const settled = await settledEvents();
    expect(settled.map((e) => e.task_hash).sort()).to.deep.equal([passed, ruled].sort());
    for (const e of settled) {
      expect(JSON.parse(e.data)).to.deep.include({ serviceId, worker: worker.address, renter: poster.address, amount: PRICE.toString() });
      expect(e.public).to.equal(1);
      const paid = await db
        .selectFrom("events")
        .select("tx_hash")
        .where("type", "=", "task.paid")
        .where("task_hash", "=", e.task_hash)
        .executeTakeFirstOrThrow();
      expect(paid.tx_hash).to.equal(e.tx_hash);
    }
    const rows = await db.selectFrom("service_sales").select(["service_id", "amount"]).execute();
    expect(rows).to.deep.equal([
      { service_id: serviceId, amount: PRICE.toString() },
      { service_id: serviceId, amount: PRICE.toString() },
    ]);

    // A re-index from the start block applies every settlement again: nothing counts twice.
    await db.deleteFrom("indexer_cursors").execute();
    await db.deleteFrom("indexed_blocks").execute();
    await db.deleteFrom("escrow_events").execute();
    await db.deleteFrom("escrow_tasks").execute();
    await db.deleteFrom("escrow_state").execute();
    await syncToHead(inProcessIndexer(db, chain, { projections: defaultProjections() }));
    expect(await sold()).to.equal(2);
    expect(await sales()).to.deep.equal([passed, ruled].sort());

    // A reorg removes a settlement: its sale goes, and the count with it.
    const beforeFork = await delivered("rental: settled on a branch that is dropped");
    await syncToHead(indexer);
    const fork = (await send("evm_snapshot")) as string;
    await escrow.connect(verifier).completeVerification(beforeFork, true, 90);
    await syncToHead(indexer);
    expect(await sold()).to.equal(3);
    await send("evm_revert", [fork]);
    await escrow.connect(verifier).completeVerification(beforeFork, false, 10);
    await mineBlocks(3);
    expect((await syncToHead(indexer)).removed).to.be.greaterThan(0);
    expect(await sold()).to.equal(2);
    expect(await sales()).to.deep.equal([passed, ruled].sort());
    // The dropped settlement's event is taken back by a compensating one.
    const droppedSettlement = (await settledEvents()).find((e) => e.task_hash === beforeFork)!;
    const reverted = await db.selectFrom("events").select("data").where("type", "=", "event.reverted").execute();
    expect(reverted.map((r) => JSON.parse(r.data) as { reverts: string; revertedType: string })).to.deep.include({
      reverts: droppedSettlement.id,
      revertedType: "rental.settled",
      blockNumber: Number(droppedSettlement.block_number),
      txHash: droppedSettlement.tx_hash,
    });
    await db.destroy();
  });
});
