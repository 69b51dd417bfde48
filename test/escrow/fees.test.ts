import { expect } from "chai";
import hre from "hardhat";
import { loadFixture } from "@nomicfoundation/hardhat-network-helpers";
import {
  AMOUNT,
  DURATION,
  Ending,
  FEE_BPS,
  POSTER_FUNDS,
  RULING_WINDOW,
  deployEscrowFixture,
  disputedTaskFixture,
  escalatedTaskFixture,
  submittedTaskFixture,
} from "../fixtures/escrow";
import { atTime, balancesOf } from "./helpers";

const { ethers } = hre;

/** Funds, assigns and delivers a task of `amount`, sets the fee to `feeBps`, then passes it. */
async function passWithFee(amount: bigint, feeBps: bigint) {
  const ctx = await loadFixture(deployEscrowFixture);
  const { escrow, token, poster, verifier, worker, admin } = ctx;
  const taskHash = ethers.id(`fee ${feeBps} on ${amount}`);
  await escrow.connect(poster).createTask(taskHash, token, amount, DURATION, ethers.ZeroAddress);
  await escrow.connect(verifier).marketplaceAssign(taskHash, worker.address);
  await escrow.connect(worker).submitEvidence(taskHash, ethers.id("result"));
  await escrow.connect(admin).setFeeBps(feeBps);
  const tx = await escrow.connect(verifier).completeVerification(taskHash, true, 100);
  return { ...ctx, taskHash, tx };
}

describe("TaskEscrow fees", function () {
  it("starts at the deployed 1000 bps", async function () {
    const { escrow } = await loadFixture(deployEscrowFixture);
    expect(await escrow.feeBps()).to.equal(FEE_BPS);
  });

  for (const [amount, feeBps, fee] of [
    [AMOUNT, 1000n, 1_000_000n],
    [AMOUNT, 3000n, 3_000_000n],
    [10_000_001n, 1000n, 1_000_000n], // 1,000,000.1 rounds down
    [7n, 3000n, 2n], // 2.1 rounds down
    [9_999n, 1n, 0n], // 0.9999 rounds down to nothing
    [AMOUNT, 0n, 0n],
  ] as const) {
    it(`pays ${fee} of ${amount} to the treasury at ${feeBps} bps and the rest to the worker`, async function () {
      const { escrow, escrowAddress, usdc, token, taskHash, tx, poster, worker, treasury } = await passWithFee(amount, feeBps);
      await expect(tx)
        .to.emit(escrow, "TaskCompleted")
        .withArgs(taskHash, worker.address, amount - fee, fee, Ending.VerificationPassed);
      expect(await balancesOf(usdc, [poster, worker, treasury, escrowAddress])).to.deep.equal([POSTER_FUNDS - amount, amount - fee, fee, 0n]);
      expect(await escrow.escrowed(token)).to.equal(0n);
      if (fee === 0n) {
        // Nothing is sent to the treasury at all.
        const receipt = await tx.wait();
        const transfers = receipt!.logs.filter((log) => log.address === token).map((log) => usdc.interface.parseLog(log)!);
        expect(transfers.map((t) => t.args.to)).to.deep.equal([worker.address]);
      }
    });
  }

  it("reads the fee at payout: a change after delivery applies to the verdict", async function () {
    const { escrow, escrowAddress, usdc, taskHash, admin, verifier, worker, treasury } = await loadFixture(submittedTaskFixture);
    await expect(escrow.connect(admin).setFeeBps(3000)).to.emit(escrow, "FeeUpdated").withArgs(1000, 3000);
    await expect(escrow.connect(verifier).completeVerification(taskHash, true, 100))
      .to.emit(escrow, "TaskCompleted")
      .withArgs(taskHash, worker.address, 7_000_000n, 3_000_000n, Ending.VerificationPassed);
    expect(await balancesOf(usdc, [worker, treasury, escrowAddress])).to.deep.equal([7_000_000n, 3_000_000n, 0n]);
  });

  it("reads the fee at payout for a ruling for the worker", async function () {
    const { escrow, taskHash, admin, worker, treasury, usdc } = await loadFixture(disputedTaskFixture);
    await escrow.connect(admin).setFeeBps(2500);
    await expect(escrow.connect(admin).resolveDispute(taskHash, true))
      .to.emit(escrow, "TaskCompleted")
      .withArgs(taskHash, worker.address, 7_500_000n, 2_500_000n, Ending.DisputeWonByWorker);
    expect(await balancesOf(usdc, [worker, treasury])).to.deep.equal([7_500_000n, 2_500_000n]);
  });

  it("reads the fee at payout for released unjudged work", async function () {
    const { escrow, taskHash, admin, worker, treasury, usdc, escalatedAt } = await loadFixture(escalatedTaskFixture);
    await escrow.connect(admin).setFeeBps(0);
    await atTime(escalatedAt + RULING_WINDOW);
    await expect(escrow.connect(worker).releaseUnjudgedWork(taskHash))
      .to.emit(escrow, "TaskCompleted")
      .withArgs(taskHash, worker.address, AMOUNT, 0n, Ending.UnjudgedWorkReleased);
    expect(await balancesOf(usdc, [worker, treasury])).to.deep.equal([AMOUNT, 0n]);
  });

  it("sends the fee to the treasury current at payout", async function () {
    const { escrow, taskHash, admin, verifier, stranger, treasury, usdc } = await loadFixture(submittedTaskFixture);
    await escrow.connect(admin).setTreasury(stranger.address);
    await escrow.connect(verifier).completeVerification(taskHash, true, 100);
    expect(await balancesOf(usdc, [stranger, treasury])).to.deep.equal([AMOUNT / 10n, 0n]);
  });

  it("accepts the 3000 bps cap and refuses 3001 with FeeExceedsMax", async function () {
    const { escrow, admin } = await loadFixture(deployEscrowFixture);
    await expect(escrow.connect(admin).setFeeBps(3001)).to.be.revertedWithCustomError(escrow, "FeeExceedsMax").withArgs(3001, 3000);
    await expect(escrow.connect(admin).setFeeBps(3000)).to.emit(escrow, "FeeUpdated").withArgs(1000, 3000);
    expect(await escrow.feeBps()).to.equal(3000n);
    expect(await escrow.MAX_FEE_BPS()).to.equal(3000n);
  });
});
