import { expect } from "chai";
import hre from "hardhat";
import { loadFixture, time } from "@nomicfoundation/hardhat-network-helpers";
import type { Transaction } from "kysely";
import { Ending, EscrowStatus } from "@market/core/escrow";
import type { Database } from "../../server/db";
import { createTaskProjection, type ChainEvent, type Projection } from "../../server/indexer";
import { DAY, HOUR, deployEscrowFixture } from "../fixtures/escrow";
import { chainConfig, dumpTables, expectTasksMatchContract, freshIndexDump, inProcessIndexer, memoryDb, syncToHead } from "./helpers";

const NAMES = [
  "funded",
  "assigned",
  "handed-back",
  "submitted",
  "failed",
  "disputed",
  "escalated",
  "verified",
  "paid-by-ruling",
  "released",
  "refunded-by-ruling",
  "never-delivered",
  "cancelled",
] as const;
type Name = (typeof NAMES)[number];

/** One task in every state and every way to end, with pauses before, between and after the phases. */
async function everyStateAcrossPausesFixture() {
  const fixture = await deployEscrowFixture();
  const { escrow, admin, poster, verifier, worker, agentVerifier, token } = fixture;
  const none = hre.ethers.ZeroAddress;
  const hash = (name: Name) => hre.ethers.id(`projection: ${name}`);
  const short = new Set<Name>(["escalated", "released", "never-delivered"]);
  const pause = async (seconds: number) => {
    await escrow.connect(admin).pause();
    await time.increase(seconds);
    await escrow.connect(admin).unpause();
  };

  await escrow.connect(poster).createTasks(
    NAMES.map((name) => ({
      taskHash: hash(name),
      token,
      amount: 7_000_001n,
      duration: BigInt(short.has(name) ? HOUR : 10 * DAY),
      verifier: name === "submitted" ? agentVerifier.address : none,
    })),
  );
  await pause(5 * HOUR + 17);
  for (const name of NAMES.filter((n) => n !== "funded" && n !== "cancelled")) {
    await escrow.connect(verifier).marketplaceAssign(hash(name), worker.address);
  }
  await escrow.connect(poster).cancelTask(hash("cancelled"));
  await escrow.connect(worker).releaseTask(hash("handed-back"));
  for (const name of ["submitted", "failed", "escalated", "released", "verified"] as const) {
    await escrow.connect(worker).submitEvidence(hash(name), hre.ethers.id(`result ${name}`));
  }
  await escrow.connect(verifier).completeVerification(hash("failed"), false, 35);
  await escrow.connect(verifier).completeVerification(hash("verified"), true, 88);
  for (const name of ["disputed", "paid-by-ruling", "refunded-by-ruling"] as const) {
    await escrow.connect(poster).raiseDispute(hash(name));
  }
  await escrow.connect(admin).setFeeBps(1500);
  await escrow.connect(admin).resolveDispute(hash("paid-by-ruling"), true);
  await pause(3 * HOUR + 1);
  await escrow.connect(admin).resolveDispute(hash("refunded-by-ruling"), false);
  await time.increase(2 * HOUR);
  await escrow.connect(poster).claimTimeout(hash("escalated"));
  await escrow.connect(poster).claimTimeout(hash("released"));
  await escrow.connect(poster).claimTimeout(hash("never-delivered"));
  await pause(DAY + 3);
  await time.increase(15 * DAY);
  await escrow.connect(worker).releaseUnjudgedWork(hash("released"));
  await pause(2 * DAY);
  return { ...fixture, hash };
}

describe("indexer task projection", function () {
  it("keeps every task equal to the escrow's getTask() across pauses, and the escrow state equal to its views", async function () {
    const fixture = await loadFixture(everyStateAcrossPausesFixture);
    const { escrow, hash } = fixture;
    const db = await memoryDb();
    const indexer = inProcessIndexer(db, chainConfig(fixture));
    await syncToHead(indexer);

    expect(await expectTasksMatchContract(db, fixture)).to.equal(NAMES.length);
    const rows = await db.selectFrom("escrow_tasks").selectAll().execute();
    const byName = (name: Name) => rows.find((r) => r.task_hash === hash(name))!;
    const expected: Record<Name, [number, number]> = {
      funded: [EscrowStatus.Funded, Ending.None],
      assigned: [EscrowStatus.Assigned, Ending.None],
      "handed-back": [EscrowStatus.Funded, Ending.None],
      submitted: [EscrowStatus.Submitted, Ending.None],
      failed: [EscrowStatus.Failed, Ending.None],
      disputed: [EscrowStatus.Disputed, Ending.None],
      escalated: [EscrowStatus.Escalated, Ending.None],
      verified: [EscrowStatus.Verified, Ending.VerificationPassed],
      "paid-by-ruling": [EscrowStatus.Paid, Ending.DisputeWonByWorker],
      released: [EscrowStatus.Paid, Ending.UnjudgedWorkReleased],
      "refunded-by-ruling": [EscrowStatus.Refunded, Ending.DisputeWonByPoster],
      "never-delivered": [EscrowStatus.Refunded, Ending.NeverDelivered],
      cancelled: [EscrowStatus.Cancelled, Ending.CancelledWhileOpen],
    };
    for (const name of NAMES) expect([byName(name).status, byName(name).ending], name).to.deep.equal(expected[name]);
    expect(byName("verified")).to.include({ payout: "6300001", fee: "700000", last_score: 88, rounds: 1 });
    expect(byName("paid-by-ruling")).to.include({ payout: "5950001", fee: "1050000" });
    expect(byName("failed")).to.include({ last_score: 35, result_hash: hre.ethers.id("result failed") });
    expect(byName("submitted").verifier).to.equal(fixture.agentVerifier.address);
    expect(byName("funded")).to.include({ worker: null, verifier: null, rounds: 0, phase_at: null });
    expect(byName("handed-back")).to.include({ worker: null, status: EscrowStatus.Funded });

    const [state] = (await dumpTables(db)).state as { paused_at: number | null; total_paused: number; fee_bps: number }[];
    expect(state).to.include({ paused_at: null, fee_bps: Number(await escrow.feeBps()), total_paused: Number(await escrow.totalPaused()) });

    // While paused, the state records when the pause began; the unpause then moves the live tasks again.
    await escrow.connect(fixture.admin).pause();
    const pausedAt = await time.latest();
    await syncToHead(indexer);
    expect((await db.selectFrom("escrow_state").select("paused_at").executeTakeFirstOrThrow()).paused_at).to.equal(pausedAt);
    await time.increase(HOUR);
    await escrow.connect(fixture.admin).unpause();
    await syncToHead(indexer);
    await expectTasksMatchContract(db, fixture);
    await db.destroy();
  });

  it("feeds every projection in the list, and rolls them back in reverse order on a reorg", async function () {
    const fixture = await loadFixture(deployEscrowFixture);
    const chain = chainConfig(fixture);
    const { escrow, poster, token } = fixture;
    const calls: string[] = [];
    const seen = new Map<string, ChainEvent>();
    const key = (e: ChainEvent) => `${e.blockNumber}:${e.logIndex}`;
    /** A stand-in for another domain's projection: it keeps the events it was given. */
    const recorder = (name: string): Projection => ({
      name,
      async apply(_trx: Transaction<Database>, _chain, events) {
        calls.push(`${name}.apply`);
        if (name === "second") for (const e of events) seen.set(key(e), e);
      },
      async rollback(_trx, _chain, removed) {
        calls.push(`${name}.rollback`);
        if (name === "second") for (const e of removed) seen.delete(key(e));
      },
    });
    const db = await memoryDb();
    const indexer = inProcessIndexer(db, chain, { projections: [createTaskProjection(), recorder("first"), recorder("second")] });
    await escrow.connect(poster).createTask(hre.ethers.id("kept"), token, 1n, BigInt(DAY), hre.ethers.ZeroAddress);
    await syncToHead(indexer);
    const fork = (await hre.network.provider.send("evm_snapshot", [])) as string;
    await escrow.connect(poster).createTask(hre.ethers.id("dropped"), token, 1n, BigInt(DAY), hre.ethers.ZeroAddress);
    await syncToHead(indexer);
    await hre.network.provider.send("evm_revert", [fork]);
    await escrow.connect(poster).createTask(hre.ethers.id("instead"), token, 2n, BigInt(DAY), hre.ethers.ZeroAddress);
    await hre.network.provider.send("evm_mine", []);
    calls.length = 0;
    await syncToHead(indexer);

    expect(calls).to.deep.equal(["second.rollback", "first.rollback", "first.apply", "second.apply"]);
    const stored = (await dumpTables(db)).events as { block_number: number; log_index: number }[];
    expect([...seen.keys()].sort()).to.deep.equal(stored.map((e) => `${e.block_number}:${e.log_index}`).sort());
    expect(await dumpTables(db)).to.deep.equal(await freshIndexDump(chain));
    await db.destroy();
  });
});
