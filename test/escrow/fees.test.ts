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
import { atTime, balancesOf, sweepFees } from "./helpers";

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
    it(`keeps ${fee} of ${amount} for the treasury at ${feeBps} bps, pays the rest to the worker, and sweeps it`, async function () {
      const { escrow, escrowAddress, usdc, token, taskHash, tx, poster, worker, treasury } = await passWithFee(amount, feeBps);
      await expect(tx)
        .to.emit(escrow, "TaskCompleted")
        .withArgs(taskHash, worker.address, amount - fee, fee, Ending.VerificationPassed);
      // The payout transfers to the worker alone; the fee stays in the escrow, accrued for the treasury.
      const receipt = await tx.wait();
      const transfers = receipt!.logs.filter((log) => log.address === token).map((log) => usdc.interface.parseLog(log)!);
      expect(transfers.map((t) => t.args.to)).to.deep.equal([worker.address]);
      expect(await balancesOf(usdc, [poster, worker, treasury, escrowAddress])).to.deep.equal([POSTER_FUNDS - amount, amount - fee, 0n, fee]);
      expect(await escrow.accruedFees(token)).to.equal(fee);
      expect(await escrow.escrowed(token)).to.equal(0n);
      expect(await sweepFees(escrow, treasury, token)).to.equal(fee);
      expect(await balancesOf(usdc, [poster, worker, treasury, escrowAddress])).to.deep.equal([POSTER_FUNDS - amount, amount - fee, fee, 0n]);
      expect(await escrow.accruedFees(token)).to.equal(0n);
    });
  }

  it("reads the fee at payout: a change after delivery applies to the verdict", async function () {
    const { escrow, escrowAddress, usdc, taskHash, admin, verifier, worker, treasury } = await loadFixture(submittedTaskFixture);
    await expect(escrow.connect(admin).setFeeBps(3000)).to.emit(escrow, "FeeUpdated").withArgs(1000, 3000);
    await expect(escrow.connect(verifier).completeVerification(taskHash, true, 100))
      .to.emit(escrow, "TaskCompleted")
      .withArgs(taskHash, worker.address, 7_000_000n, 3_000_000n, Ending.VerificationPassed);
    expect(await escrow.accruedFees(await usdc.getAddress())).to.equal(3_000_000n);
    await sweepFees(escrow, treasury, await usdc.getAddress());
    expect(await balancesOf(usdc, [worker, treasury, escrowAddress])).to.deep.equal([7_000_000n, 3_000_000n, 0n]);
  });

  it("reads the fee at payout for a ruling for the worker", async function () {
    const { escrow, taskHash, admin, worker, treasury, usdc } = await loadFixture(disputedTaskFixture);
    await escrow.connect(admin).setFeeBps(2500);
    await expect(escrow.connect(admin).resolveDispute(taskHash, true))
      .to.emit(escrow, "TaskCompleted")
      .withArgs(taskHash, worker.address, 7_500_000n, 2_500_000n, Ending.DisputeWonByWorker);
    expect(await sweepFees(escrow, treasury, await usdc.getAddress())).to.equal(2_500_000n);
    expect(await balancesOf(usdc, [worker, treasury])).to.deep.equal([7_500_000n, 2_500_000n]);
  });

  it("reads the fee at payout for released unjudged work", async function () {
    const { escrow, taskHash, admin, worker, treasury, usdc, escalatedAt } = await loadFixture(escalatedTaskFixture);
    await escrow.connect(admin).setFeeBps(0);
    await atTime(escalatedAt + RULING_WINDOW);
    await expect(escrow.connect(worker).releaseUnjudgedWork(taskHash))
      .to.emit(escrow, "TaskCompleted")
      .withArgs(taskHash, worker.address, AMOUNT, 0n, Ending.UnjudgedWorkReleased);
    expect(await escrow.accruedFees(await usdc.getAddress())).to.equal(0n);
    expect(await balancesOf(usdc, [worker, treasury])).to.deep.equal([AMOUNT, 0n]);
  });

  describe("sweepFees (4.0.0)", function () {
    /** Two passed tasks at 1000 bps: 2,000,000 of fees accrued, the escrow holding nothing else. */
    async function twoFeesFixture() {
      const ctx = await submittedTaskFixture();
      const { escrow, token, poster, verifier, worker, taskHash } = ctx;
      await escrow.connect(verifier).completeVerification(taskHash, true, 100);
      const second = ethers.id("fees: a second task");
      await escrow.connect(poster).createTask(second, token, AMOUNT, DURATION, ethers.ZeroAddress);
      await escrow.connect(verifier).marketplaceAssign(second, worker.address);
      await escrow.connect(worker).submitEvidence(second, ethers.id("result"));
      await escrow.connect(verifier).completeVerification(second, true, 100);
      return ctx;
    }

    it("sends every fee accrued since the last sweep to the treasury of the moment, by the treasury or the admin", async function () {
      const { escrow, escrowAddress, usdc, token, admin, treasury, stranger } = await loadFixture(twoFeesFixture);
      expect(await escrow.accruedFees(token)).to.equal(2n * (AMOUNT / 10n));
      await expect(escrow.connect(treasury).sweepFees(token))
        .to.emit(escrow, "FeesSwept")
        .withArgs(token, treasury.address, 2n * (AMOUNT / 10n));
      expect(await balancesOf(usdc, [treasury, escrowAddress])).to.deep.equal([2n * (AMOUNT / 10n), 0n]);
      await expect(escrow.connect(treasury).sweepFees(token)).to.be.revertedWithCustomError(escrow, "NoFeesAccrued").withArgs(token);

      // Fees accrued under one treasury go to the one current at the sweep, whoever of the two sends it.
      const again = await loadFixture(twoFeesFixture);
      await again.escrow.connect(admin).setTreasury(stranger.address);
      await expect(again.escrow.connect(admin).sweepFees(token))
        .to.emit(again.escrow, "FeesSwept")
        .withArgs(token, stranger.address, 2n * (AMOUNT / 10n));
      expect(await balancesOf(again.usdc, [stranger, treasury, again.escrowAddress])).to.deep.equal([2n * (AMOUNT / 10n), 0n, 0n]);
    });

    it("refuses anyone else with NotFeeSweeper(caller), a token without fees, and any sweep while paused", async function () {
      const { escrow, token, admin, poster, worker, verifier, stranger, treasury } = await loadFixture(twoFeesFixture);
      const unlistedToken = ethers.getAddress(ethers.id("a token the escrow never saw").slice(0, 42));
      for (const caller of [poster, worker, verifier, stranger]) {
        await expect(escrow.connect(caller).sweepFees(token)).to.be.revertedWithCustomError(escrow, "NotFeeSweeper").withArgs(caller.address);
      }
      await expect(escrow.connect(treasury).sweepFees(unlistedToken)).to.be.revertedWithCustomError(escrow, "NoFeesAccrued").withArgs(unlistedToken);
      await escrow.connect(admin).pause();
      await expect(escrow.connect(treasury).sweepFees(token)).to.be.revertedWithCustomError(escrow, "EscrowPaused");
      await escrow.connect(admin).unpause();
      expect(await escrow.accruedFees(token)).to.equal(2n * (AMOUNT / 10n));
    });

    it("counts accrued fees as owed: rescueSurplus cannot take them", async function () {
      const { escrow, escrowAddress, usdc, token, admin, stranger } = await loadFixture(twoFeesFixture);
      await usdc.mint(escrowAddress, 7n); // sent by mistake
      await expect(escrow.connect(admin).rescueSurplus(token, stranger.address, 8n))
        .to.be.revertedWithCustomError(escrow, "RescueExceedsSurplus")
        .withArgs(token, 8n, 7n);
      await escrow.connect(admin).rescueSurplus(token, stranger.address, 7n);
      expect(await usdc.balanceOf(escrowAddress)).to.equal(await escrow.accruedFees(token));
    });
  });

  it("accepts the 3000 bps cap and refuses 3001 with FeeExceedsMax", async function () {
    const { escrow, admin } = await loadFixture(deployEscrowFixture);
    await expect(escrow.connect(admin).setFeeBps(3001)).to.be.revertedWithCustomError(escrow, "FeeExceedsMax").withArgs(3001, 3000);
    await expect(escrow.connect(admin).setFeeBps(3000)).to.emit(escrow, "FeeUpdated").withArgs(1000, 3000);
    expect(await escrow.feeBps()).to.equal(3000n);
    expect(await escrow.MAX_FEE_BPS()).to.equal(3000n);
  });
});
