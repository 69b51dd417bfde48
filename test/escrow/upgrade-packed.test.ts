/**
 * 2.0.0 -> 3.0.0 with the upgrade code (upgradeEscrow): 3.0.0 funds new tasks in a packed layout appended to the
 * ERC-7201 namespace, and moves a task funded on 2.0.0 into it at its first transition. A 2.0.0 proxy with a task in
 * every state (funded, assigned, submitted to a verifier agent, failed within its appeal window, disputed, escalated,
 * settled three ways), a finished pause behind it, a credit owed, an amount above 40 bits and an agent-judged task not
 * yet assigned is upgraded; every live task is then settled with exact balances, every ended one stays ended, no hash
 * can be funded again, and new tasks run beside them. A second case upgrades while the escrow is paused.
 */
import { expect } from "chai";
import hre from "hardhat";
import { loadFixture, time } from "@nomicfoundation/hardhat-network-helpers";
import { AMOUNT, DAY, DURATION, Ending, HOUR, Status, everyStateV2Fixture } from "../fixtures/escrow";
import { upgradeEscrow } from "../../deploy/escrow";
import { balancesOf, sweepFees } from "./helpers";

const { ethers, upgrades } = hre;
const WIDE_AMOUNT = 2n ** 40n + 7n; // above slot 0's 40 bits: 3.0.0 keeps it in slot 3
const FEE_BPS = 2500n; // set by the fixture on 2.0.0
const feeOf = (amount: bigint) => (amount * FEE_BPS) / 10_000n;

/** keccak256(abi.encode(uint256(keccak256("market.storage.TaskEscrow")) - 1)) & ~bytes32(uint256(0xff)) */
const NAMESPACE = 0x545305817ce5a986738171e90314653b81f48e2551d12e6a74b3c1c48ba5c200n;
const TASKS_SLOT = NAMESPACE + 5n; // `tasks` (1.0.0): TaskRecord, poster in its slot 1
const PACKED_TASKS_SLOT = NAMESPACE + 8n; // `packedTasks` (3.0.0): PackedTask, poster in the low bits of slot 0

async function liveV2Fixture() {
  const ctx = await everyStateV2Fixture();
  const { escrow, poster, agentVerifier, usdc, token } = ctx;
  const extra = { wide: ethers.id("2.0.0: an amount above 40 bits"), agentFunded: ethers.id("2.0.0: funded, judged by an agent") };
  await usdc.mint(poster.address, WIDE_AMOUNT);
  await escrow.connect(poster).createTask(extra.wide, token, WIDE_AMOUNT, DURATION, ethers.ZeroAddress);
  await escrow.connect(poster).createTask(extra.agentFunded, token, AMOUNT, DURATION, agentVerifier.address);
  const hashes = { ...ctx.taskHashes, ...extra } as Record<string, string>;
  return { ...ctx, hashes };
}

/** The word at `slot`; `offset` picks the slot inside a struct of a mapping entry. */
async function word(escrowAddress: string, mappingSlot: bigint, taskHash: string, offset: bigint): Promise<bigint> {
  const base = BigInt(ethers.keccak256(ethers.AbiCoder.defaultAbiCoder().encode(["bytes32", "uint256"], [taskHash, mappingSlot])));
  return BigInt(await ethers.provider.getStorage(escrowAddress, base + offset));
}

/** Where a task lives: "legacy" (`tasks`), "packed" (`packedTasks`), or both/neither (never expected). */
async function whereLives(escrowAddress: string, taskHash: string): Promise<string> {
  const legacy = (await word(escrowAddress, TASKS_SLOT, taskHash, 1n)) & ((1n << 160n) - 1n);
  const packed = (await word(escrowAddress, PACKED_TASKS_SLOT, taskHash, 0n)) & ((1n << 160n) - 1n);
  return legacy !== 0n && packed === 0n ? "legacy" : packed !== 0n && legacy === 0n ? "packed" : `legacy ${legacy}, packed ${packed}`;
}

describe("TaskEscrow 2.0.0 -> the current version (packed tasks since 3.0.0) with the upgrade code", function () {
  it("the upgrades plugin validates the current version against a deployed 2.0.0 (storage only appended)", async function () {
    const { escrowAddress, admin, escrow } = await loadFixture(liveV2Fixture);
    expect(await escrow.version()).to.equal("2.0.0");
    await upgrades.validateUpgrade(escrowAddress, await ethers.getContractFactory("TaskEscrow", admin), { kind: "uups" });
  });

  it("keeps every task, settles each live one with exact balances, keeps ended ones ended, and runs new tasks beside them", async function () {
    const ctx = await loadFixture(liveV2Fixture);
    const { deployment, escrowAddress, admin, poster, worker, verifier, agentVerifier, treasury, stranger } = ctx;
    const { usdc, token, blocklist, blocklistToken, hashes } = ctx;
    const before = await Promise.all(Object.values(hashes).map(async (h) => Array.from(await ctx.escrow.getTask(h))));
    const books = async () => [
      await ctx.escrow.escrowed(token),
      await ctx.escrow.escrowed(blocklistToken),
      await ctx.escrow.totalCredited(blocklistToken),
    ];
    const booksBefore = await books();
    expect(booksBefore).to.deep.equal([7n * AMOUNT + WIDE_AMOUNT, 0n, AMOUNT - feeOf(AMOUNT)]);

    const lines: string[] = [];
    const { escrow, deployment: upgraded } = await upgradeEscrow(hre, { deployment, save: false, log: (line) => lines.push(line) });
    expect(lines).to.include("upgrade to TaskEscrow validated");
    expect(upgraded).to.deep.include({ contract: "TaskEscrow", version: "4.0.0", proxy: escrowAddress });
    expect(await escrow.version()).to.equal("4.0.0");
    // Read through: nothing moved yet, every task reads as before, and the books are the same.
    for (const hash of Object.values(hashes)) expect(await whereLives(escrowAddress, hash)).to.equal("legacy");
    expect(await Promise.all(Object.values(hashes).map(async (h) => Array.from(await escrow.getTask(h))))).to.deep.equal(before);
    expect(await books()).to.deep.equal(booksBefore);

    // A hash used on 2.0.0 is used for good, live or ended.
    for (const hash of Object.values(hashes)) {
      await expect(escrow.connect(poster).createTask(hash, token, AMOUNT, DURATION, ethers.ZeroAddress))
        .to.be.revertedWithCustomError(escrow, "TaskHashUsed")
        .withArgs(hash);
    }
    // Ended tasks stay ended; a refused call moves nothing.
    await expect(escrow.connect(poster).cancelTask(hashes.cancelled!))
      .to.be.revertedWithCustomError(escrow, "InvalidStatus")
      .withArgs(hashes.cancelled!, Status.Cancelled);
    await expect(escrow.connect(admin).resolveDispute(hashes.verified!, true))
      .to.be.revertedWithCustomError(escrow, "InvalidStatus")
      .withArgs(hashes.verified!, Status.Verified);
    await expect(escrow.connect(poster).claimTimeout(hashes.refunded!))
      .to.be.revertedWithCustomError(escrow, "InvalidStatus")
      .withArgs(hashes.refunded!, Status.Refunded);
    expect(await whereLives(escrowAddress, hashes.cancelled!)).to.equal("legacy");

    const accounts = [poster, worker, treasury, escrowAddress];
    const start = await balancesOf(usdc, accounts);
    const payout = AMOUNT - feeOf(AMOUNT);

    // Submitted, judged by its verifier agent: only the agent may judge, before and after the move.
    await expect(escrow.connect(verifier).completeVerification(hashes.submitted!, true, 80))
      .to.be.revertedWithCustomError(escrow, "NotTaskVerifier")
      .withArgs(hashes.submitted!, verifier.address);
    await expect(escrow.connect(agentVerifier).completeVerification(hashes.submitted!, true, 80))
      .to.emit(escrow, "TaskCompleted")
      .withArgs(hashes.submitted!, worker.address, payout, feeOf(AMOUNT), Ending.VerificationPassed);
    expect(await whereLives(escrowAddress, hashes.submitted!)).to.equal("packed");

    // Failed within its appeal window: the worker delivers round 2, the marketplace verifier passes it.
    await expect(escrow.connect(worker).submitEvidence(hashes.failed!, ethers.id("round 2")))
      .to.emit(escrow, "EvidenceSubmitted")
      .withArgs(hashes.failed!, worker.address, ethers.id("round 2"), 2);
    await expect(escrow.connect(verifier).completeVerification(hashes.failed!, true, 70))
      .to.emit(escrow, "VerificationCompleted")
      .withArgs(hashes.failed!, verifier.address, true, 70, 2)
      .and.to.emit(escrow, "TaskCompleted")
      .withArgs(hashes.failed!, worker.address, payout, feeOf(AMOUNT), Ending.VerificationPassed);

    // Disputed: ruled for the poster.
    await expect(escrow.connect(admin).resolveDispute(hashes.disputed!, false))
      .to.emit(escrow, "TaskRefunded")
      .withArgs(hashes.disputed!, poster.address, AMOUNT, Ending.DisputeWonByPoster);
    // Funded: cancelled.
    await expect(escrow.connect(poster).cancelTask(hashes.funded!))
      .to.emit(escrow, "TaskCancelled")
      .withArgs(hashes.funded!, poster.address, AMOUNT, Ending.CancelledWhileOpen);

    // Funded with a verifier agent, assigned only now: the marketplace verifier cannot judge it, the agent can.
    await escrow.connect(verifier).marketplaceAssign(hashes.agentFunded!, worker.address);
    expect(await whereLives(escrowAddress, hashes.agentFunded!)).to.equal("packed");
    await escrow.connect(worker).submitEvidence(hashes.agentFunded!, ethers.id("agent-judged"));
    await expect(escrow.connect(verifier).completeVerification(hashes.agentFunded!, true, 90))
      .to.be.revertedWithCustomError(escrow, "NotTaskVerifier")
      .withArgs(hashes.agentFunded!, verifier.address);
    await expect(escrow.connect(agentVerifier).completeVerification(hashes.agentFunded!, true, 90))
      .to.emit(escrow, "TaskCompleted")
      .withArgs(hashes.agentFunded!, worker.address, payout, feeOf(AMOUNT), Ending.VerificationPassed);

    // Above 40 bits: moved with its amount in slot 3, paid to the unit.
    await escrow.connect(verifier).marketplaceAssign(hashes.wide!, worker.address);
    expect((await escrow.getTask(hashes.wide!)).amount).to.equal(WIDE_AMOUNT);
    await escrow.connect(worker).submitEvidence(hashes.wide!, ethers.id("wide"));
    await expect(escrow.connect(verifier).completeVerification(hashes.wide!, true, 99))
      .to.emit(escrow, "TaskCompleted")
      .withArgs(hashes.wide!, worker.address, WIDE_AMOUNT - feeOf(WIDE_AMOUNT), feeOf(WIDE_AMOUNT), Ending.VerificationPassed);

    // Past every deadline and the ruling window: the assigned task was never delivered, the escalated work is released.
    await time.increase(15 * DAY);
    await expect(escrow.connect(poster).claimTimeout(hashes.assigned!))
      .to.emit(escrow, "DeadlineExpired")
      .withArgs(hashes.assigned!, poster.address, AMOUNT, Ending.NeverDelivered);
    await expect(escrow.connect(worker).releaseUnjudgedWork(hashes.escalated!))
      .to.emit(escrow, "TaskCompleted")
      .withArgs(hashes.escalated!, worker.address, payout, feeOf(AMOUNT), Ending.UnjudgedWorkReleased);

    await sweepFees(escrow, treasury, token); // 4.0.0 keeps each fee until the treasury sweeps
    const end = await balancesOf(usdc, accounts);
    const paid = 4n * payout + (WIDE_AMOUNT - feeOf(WIDE_AMOUNT));
    const fees = 4n * feeOf(AMOUNT) + feeOf(WIDE_AMOUNT);
    expect(end.map((b, i) => b - start[i]!)).to.deep.equal([3n * AMOUNT, paid, fees, -(7n * AMOUNT + WIDE_AMOUNT)]);
    expect(await escrow.escrowed(token)).to.equal(0n);
    expect(await usdc.balanceOf(escrowAddress)).to.equal(0n);
    // Each settled task lives in exactly one mapping (the packed one); the three ended on 2.0.0 stay where they were.
    for (const [name, hash] of Object.entries(hashes)) {
      const ended = ["verified", "cancelled", "refunded"].includes(name);
      expect(await whereLives(escrowAddress, hash), name).to.equal(ended ? "legacy" : "packed");
      expect((await escrow.getTask(hash)).ending, name).to.not.equal(Ending.None);
    }

    // The credit made on 2.0.0 goes to its owner only, once unblocked.
    await expect(escrow.connect(stranger).withdrawCredit(blocklistToken))
      .to.be.revertedWithCustomError(escrow, "NothingToWithdraw")
      .withArgs(blocklistToken, stranger.address);
    await blocklist.setBlocked(worker.address, false);
    await expect(escrow.connect(worker).withdrawCredit(blocklistToken))
      .to.emit(escrow, "CreditWithdrawn")
      .withArgs(blocklistToken, worker.address, worker.address, payout);
    expect(await escrow.totalCredited(blocklistToken)).to.equal(0n);

    // New tasks, in both tokens, beside the moved ones: packed from their funding.
    const fresh = [ethers.id("3.0.0: paid"), ethers.id("3.0.0: refunded")];
    for (const [i, hash] of fresh.entries()) {
      await escrow.connect(poster).createTask(hash, i === 0 ? token : blocklistToken, AMOUNT, DURATION, ethers.ZeroAddress);
      expect(await whereLives(escrowAddress, hash)).to.equal("packed");
      await escrow.connect(verifier).marketplaceAssign(hash, worker.address);
    }
    const beforeNew = await balancesOf(usdc, accounts);
    await escrow.connect(worker).submitEvidence(fresh[0]!, ethers.id("fresh"));
    await expect(escrow.connect(verifier).completeVerification(fresh[0]!, true, 100))
      .to.emit(escrow, "TaskCompleted")
      .withArgs(fresh[0]!, worker.address, payout, feeOf(AMOUNT), Ending.VerificationPassed);
    await sweepFees(escrow, treasury, token);
    expect((await balancesOf(usdc, accounts)).map((b, i) => b - beforeNew[i]!)).to.deep.equal([0n, payout, feeOf(AMOUNT), -AMOUNT]);
    await time.increase(DAY);
    const posterBlocklist = await blocklist.balanceOf(poster.address);
    await expect(escrow.connect(poster).claimTimeout(fresh[1]!))
      .to.emit(escrow, "DeadlineExpired")
      .withArgs(fresh[1]!, poster.address, AMOUNT, Ending.NeverDelivered);
    expect(await blocklist.balanceOf(poster.address)).to.equal(posterBlocklist + AMOUNT);
    expect(await escrow.escrowed(blocklistToken)).to.equal(0n);
    expect(await blocklist.balanceOf(escrowAddress)).to.equal(0n);
  });

  it("upgraded while paused: the live pause still moves the deadlines of tasks funded on 2.0.0", async function () {
    const ctx = await loadFixture(liveV2Fixture);
    const { deployment, admin, poster, hashes } = ctx;
    await ctx.escrow.connect(admin).pause();
    await time.increase(2 * HOUR);
    const before = await ctx.escrow.getTask(hashes.assigned!);
    const readAt = BigInt(await time.latest());
    const { escrow } = await upgradeEscrow(hre, { deployment, save: false });
    expect(await escrow.paused()).to.equal(true);
    await expect(escrow.connect(poster).cancelTask(hashes.funded!)).to.be.revertedWithCustomError(escrow, "EscrowPaused");
    await time.increase(3 * HOUR);
    await escrow.connect(admin).unpause();
    const task = await escrow.getTask(hashes.assigned!);
    // `before` projected the pause up to when it was read; everything since (the upgrade's blocks included) moves the
    // deadline by as much again.
    expect(task.deadline - before.deadline).to.equal(BigInt(await time.latest()) - readAt);
    expect(task.deadline - before.deadline).to.be.greaterThan(3n * BigInt(HOUR));
    await time.increaseTo(task.deadline - 10n);
    await expect(escrow.connect(poster).claimTimeout(hashes.assigned!))
      .to.be.revertedWithCustomError(escrow, "DeadlineNotReached")
      .withArgs(hashes.assigned!, task.deadline);
    await time.increaseTo(task.deadline);
    await expect(escrow.connect(poster).claimTimeout(hashes.assigned!))
      .to.emit(escrow, "DeadlineExpired")
      .withArgs(hashes.assigned!, poster.address, AMOUNT, Ending.NeverDelivered);
  });
});
