import { expect } from "chai";
import hre from "hardhat";
import { loadFixture } from "@nomicfoundation/hardhat-network-helpers";
import {
  AMOUNT,
  DURATION,
  Ending,
  POSTER_FUNDS,
  RULING_WINDOW,
  Status,
  blocklistAssignedTaskFixture,
  creditedWorkerFixture,
  extraTokensFixture,
  fundedTaskFixture,
} from "../fixtures/escrow";
import { atTime, balancesOf, sweepFees } from "./helpers";

const { ethers } = hre;
const FEE = AMOUNT / 10n;
const PAYOUT = AMOUNT - FEE;

describe("TaskEscrow credits", function () {
  describe("a blocked recipient does not hold up the ending", function () {
    it("credits a blocked worker's payout on a passed verdict, and keeps the fee for the treasury", async function () {
      const { escrow, escrowAddress, blocklist, blocklistToken, taskHash, worker, verifier, treasury } =
        await loadFixture(blocklistAssignedTaskFixture);
      await escrow.connect(worker).submitEvidence(taskHash, ethers.id("result"));
      await blocklist.setBlocked(worker.address, true);
      await expect(escrow.connect(verifier).completeVerification(taskHash, true, 100))
        .to.emit(escrow, "Credited")
        .withArgs(blocklistToken, worker.address, PAYOUT)
        .and.to.emit(escrow, "TaskCompleted")
        .withArgs(taskHash, worker.address, PAYOUT, FEE, Ending.VerificationPassed);
      expect((await escrow.getTask(taskHash)).status).to.equal(Status.Verified);
      expect(await escrow.accruedFees(blocklistToken)).to.equal(FEE);
      expect(await sweepFees(escrow, treasury, blocklistToken)).to.equal(FEE);
      expect(await balancesOf(blocklist, [worker, treasury, escrowAddress])).to.deep.equal([0n, FEE, PAYOUT]);
      expect(await escrow.creditOf(blocklistToken, worker.address)).to.equal(PAYOUT);
      expect(await escrow.totalCredited(blocklistToken)).to.equal(PAYOUT);
      expect(await escrow.escrowed(blocklistToken)).to.equal(0n);
    });

    it("a blocked treasury holds up nothing: the fee accrues, and the sweep waits until the token lets it through", async function () {
      const { escrow, escrowAddress, blocklist, blocklistToken, taskHash, worker, verifier, treasury } =
        await loadFixture(blocklistAssignedTaskFixture);
      await escrow.connect(worker).submitEvidence(taskHash, ethers.id("result"));
      await blocklist.setBlocked(treasury.address, true);
      await expect(escrow.connect(verifier).completeVerification(taskHash, true, 100))
        .to.emit(escrow, "TaskCompleted")
        .withArgs(taskHash, worker.address, PAYOUT, FEE, Ending.VerificationPassed)
        .and.not.to.emit(escrow, "Credited");
      expect(await balancesOf(blocklist, [worker, treasury, escrowAddress])).to.deep.equal([PAYOUT, 0n, FEE]);
      expect(await escrow.accruedFees(blocklistToken)).to.equal(FEE);
      expect(await escrow.totalCredited(blocklistToken)).to.equal(0n);
      // The token refuses the treasury: the sweep reverts with its error and the fee stays accrued.
      await expect(escrow.connect(treasury).sweepFees(blocklistToken)).to.be.revertedWithCustomError(blocklist, "AccountBlocked");
      expect(await escrow.accruedFees(blocklistToken)).to.equal(FEE);
      await blocklist.setBlocked(treasury.address, false);
      await expect(escrow.connect(treasury).sweepFees(blocklistToken)).to.emit(escrow, "FeesSwept").withArgs(blocklistToken, treasury.address, FEE);
      expect(await balancesOf(blocklist, [worker, treasury, escrowAddress])).to.deep.equal([PAYOUT, FEE, 0n]);
      expect(await escrow.accruedFees(blocklistToken)).to.equal(0n);
    });

    it("credits a blocked worker on a ruling for the worker and on released unjudged work", async function () {
      const { escrow, blocklist, blocklistToken, taskHash, worker, poster, admin } = await loadFixture(blocklistAssignedTaskFixture);
      await escrow.connect(poster).raiseDispute(taskHash);
      await blocklist.setBlocked(worker.address, true);
      await expect(escrow.connect(admin).resolveDispute(taskHash, true))
        .to.emit(escrow, "Credited")
        .withArgs(blocklistToken, worker.address, PAYOUT)
        .and.to.emit(escrow, "TaskCompleted")
        .withArgs(taskHash, worker.address, PAYOUT, FEE, Ending.DisputeWonByWorker);

      const again = await loadFixture(blocklistAssignedTaskFixture);
      await again.escrow.connect(again.worker).submitEvidence(again.taskHash, ethers.id("result"));
      await atTime(again.deadline);
      await again.escrow.connect(again.poster).claimTimeout(again.taskHash);
      await again.blocklist.setBlocked(again.worker.address, true);
      await atTime(again.deadline + RULING_WINDOW);
      await expect(again.escrow.connect(again.worker).releaseUnjudgedWork(again.taskHash))
        .to.emit(again.escrow, "Credited")
        .withArgs(blocklistToken, again.worker.address, PAYOUT)
        .and.to.emit(again.escrow, "TaskCompleted")
        .withArgs(again.taskHash, again.worker.address, PAYOUT, FEE, Ending.UnjudgedWorkReleased);
      expect(await again.escrow.creditOf(blocklistToken, again.worker.address)).to.equal(PAYOUT);
    });

    it("credits a blocked poster's refund on cancel", async function () {
      const { escrow, escrowAddress, blocklist, blocklistToken, poster } = await loadFixture(extraTokensFixture);
      const taskHash = ethers.id("blocked poster cancels");
      await escrow.connect(poster).createTask(taskHash, blocklistToken, AMOUNT, DURATION, ethers.ZeroAddress);
      await blocklist.setBlocked(poster.address, true);
      await expect(escrow.connect(poster).cancelTask(taskHash))
        .to.emit(escrow, "Credited")
        .withArgs(blocklistToken, poster.address, AMOUNT)
        .and.to.emit(escrow, "TaskCancelled")
        .withArgs(taskHash, poster.address, AMOUNT, Ending.CancelledWhileOpen);
      expect(await balancesOf(blocklist, [poster, escrowAddress])).to.deep.equal([POSTER_FUNDS - AMOUNT, AMOUNT]);
      expect(await escrow.creditOf(blocklistToken, poster.address)).to.equal(AMOUNT);
    });

    it("credits a blocked poster's refund on a timeout and on a ruling for the poster", async function () {
      const { escrow, blocklist, blocklistToken, taskHash, poster, deadline } = await loadFixture(blocklistAssignedTaskFixture);
      await blocklist.setBlocked(poster.address, true);
      await atTime(deadline);
      await expect(escrow.connect(poster).claimTimeout(taskHash))
        .to.emit(escrow, "Credited")
        .withArgs(blocklistToken, poster.address, AMOUNT)
        .and.to.emit(escrow, "DeadlineExpired")
        .withArgs(taskHash, poster.address, AMOUNT, Ending.NeverDelivered);

      const again = await loadFixture(blocklistAssignedTaskFixture);
      await again.escrow.connect(again.worker).raiseDispute(again.taskHash);
      await again.blocklist.setBlocked(again.poster.address, true);
      await expect(again.escrow.connect(again.admin).resolveDispute(again.taskHash, false))
        .to.emit(again.escrow, "Credited")
        .withArgs(blocklistToken, again.poster.address, AMOUNT)
        .and.to.emit(again.escrow, "TaskRefunded")
        .withArgs(again.taskHash, again.poster.address, AMOUNT, Ending.DisputeWonByPoster);
    });

    it("adds credits up across tasks", async function () {
      const { escrow, blocklist, blocklistToken, poster, verifier, worker } = await loadFixture(extraTokensFixture);
      await blocklist.setBlocked(worker.address, true);
      for (const name of ["one", "two"]) {
        const taskHash = ethers.id(`credit ${name}`);
        await escrow.connect(poster).createTask(taskHash, blocklistToken, AMOUNT, DURATION, ethers.ZeroAddress);
        await escrow.connect(verifier).marketplaceAssign(taskHash, worker.address);
        await escrow.connect(worker).submitEvidence(taskHash, ethers.id("result"));
        await escrow.connect(verifier).completeVerification(taskHash, true, 100);
      }
      expect(await escrow.creditOf(blocklistToken, worker.address)).to.equal(2n * PAYOUT);
      expect(await escrow.totalCredited(blocklistToken)).to.equal(2n * PAYOUT);
    });
  });

  describe("withdrawCredit", function () {
    it("withdrawCredit pays the whole credit to the caller once", async function () {
      const { escrow, escrowAddress, blocklist, blocklistToken, worker } = await loadFixture(creditedWorkerFixture);
      await expect(escrow.connect(worker).withdrawCredit(blocklistToken))
        .to.emit(escrow, "CreditWithdrawn")
        .withArgs(blocklistToken, worker.address, worker.address, PAYOUT);
      expect(await balancesOf(blocklist, [worker, escrowAddress])).to.deep.equal([PAYOUT, 0n]);
      expect(await escrow.creditOf(blocklistToken, worker.address)).to.equal(0n);
      expect(await escrow.totalCredited(blocklistToken)).to.equal(0n);
      await expect(escrow.connect(worker).withdrawCredit(blocklistToken))
        .to.be.revertedWithCustomError(escrow, "NothingToWithdraw")
        .withArgs(blocklistToken, worker.address);
    });

    it("keeps a blocked account's credit until the token lets it through, and sends it nowhere else", async function () {
      const { escrow, escrowAddress, blocklist, blocklistToken, worker, stranger } = await loadFixture(creditedWorkerFixture);
      await blocklist.setBlocked(worker.address, true);
      await expect(escrow.connect(worker).withdrawCredit(blocklistToken))
        .to.be.revertedWithCustomError(blocklist, "AccountBlocked")
        .withArgs(worker.address);
      expect(await escrow.creditOf(blocklistToken, worker.address)).to.equal(PAYOUT);
      expect(await escrow.totalCredited(blocklistToken)).to.equal(PAYOUT);

      // 1.0.0's withdrawCreditTo(token, to) is gone: its selector reaches no function (and there is no fallback).
      const v1 = new ethers.Interface(["function withdrawCreditTo(address token, address to)"]);
      expect(escrow.interface.hasFunction("withdrawCreditTo")).to.equal(false);
      await expect(
        worker.sendTransaction({
          to: escrowAddress,
          data: v1.encodeFunctionData("withdrawCreditTo", [blocklistToken, stranger.address]),
        }),
      ).to.be.revertedWithoutReason();
      // Nobody else can take it either.
      await expect(escrow.connect(stranger).withdrawCredit(blocklistToken))
        .to.be.revertedWithCustomError(escrow, "NothingToWithdraw")
        .withArgs(blocklistToken, stranger.address);
      expect(await balancesOf(blocklist, [worker, stranger, escrowAddress])).to.deep.equal([0n, 0n, PAYOUT]);

      await blocklist.setBlocked(worker.address, false);
      await expect(escrow.connect(worker).withdrawCredit(blocklistToken))
        .to.emit(escrow, "CreditWithdrawn")
        .withArgs(blocklistToken, worker.address, worker.address, PAYOUT);
      expect(await balancesOf(blocklist, [worker, stranger, escrowAddress])).to.deep.equal([PAYOUT, 0n, 0n]);
      expect(await escrow.totalCredited(blocklistToken)).to.equal(0n);
    });

    it("refuses an account without credit, and a token the account has no credit in", async function () {
      const { escrow, blocklistToken, token, worker, stranger } = await loadFixture(creditedWorkerFixture);
      await expect(escrow.connect(stranger).withdrawCredit(blocklistToken))
        .to.be.revertedWithCustomError(escrow, "NothingToWithdraw")
        .withArgs(blocklistToken, stranger.address);
      await expect(escrow.connect(worker).withdrawCredit(token))
        .to.be.revertedWithCustomError(escrow, "NothingToWithdraw")
        .withArgs(token, worker.address);
    });
  });

  describe("rescueSurplus", function () {
    it("takes only what is above live tasks plus credits", async function () {
      const { escrow, escrowAddress, blocklist, blocklistToken, poster, admin, stranger } = await loadFixture(creditedWorkerFixture);
      // One live task and one credit are owed.
      await escrow.connect(poster).createTask(ethers.id("live"), blocklistToken, AMOUNT, DURATION, ethers.ZeroAddress);
      const owed = AMOUNT + PAYOUT;
      expect(await blocklist.balanceOf(escrowAddress)).to.equal(owed);
      await expect(escrow.connect(admin).rescueSurplus(blocklistToken, stranger.address, 1n))
        .to.be.revertedWithCustomError(escrow, "RescueExceedsSurplus")
        .withArgs(blocklistToken, 1n, 0n);

      await blocklist.mint(escrowAddress, 5n); // sent by mistake
      await expect(escrow.connect(admin).rescueSurplus(blocklistToken, stranger.address, 6n))
        .to.be.revertedWithCustomError(escrow, "RescueExceedsSurplus")
        .withArgs(blocklistToken, 6n, 5n);
      await expect(escrow.connect(admin).rescueSurplus(blocklistToken, stranger.address, 5n))
        .to.emit(escrow, "SurplusRescued")
        .withArgs(blocklistToken, stranger.address, 5n);
      expect(await balancesOf(blocklist, [stranger, escrowAddress])).to.deep.equal([5n, owed]);
      expect(await escrow.escrowed(blocklistToken)).to.equal(AMOUNT);
      expect(await escrow.totalCredited(blocklistToken)).to.equal(PAYOUT);
    });

    it("takes the whole balance of a stray token the escrow owes nothing in", async function () {
      const { escrow, escrowAddress, unlisted, unlistedToken, admin, stranger } = await loadFixture(extraTokensFixture);
      await unlisted.mint(escrowAddress, 1_234n);
      await expect(escrow.connect(admin).rescueSurplus(unlistedToken, stranger.address, 1_234n))
        .to.emit(escrow, "SurplusRescued")
        .withArgs(unlistedToken, stranger.address, 1_234n);
      expect(await balancesOf(unlisted, [stranger, escrowAddress])).to.deep.equal([1_234n, 0n]);
    });

    it("refuses anyone but the admin, and the zero address", async function () {
      const { escrow, escrowAddress, usdc, token, admin, poster, stranger } = await loadFixture(fundedTaskFixture);
      await usdc.mint(escrowAddress, 10n);
      for (const caller of [poster, stranger]) {
        await expect(escrow.connect(caller).rescueSurplus(token, caller.address, 10n))
          .to.be.revertedWithCustomError(escrow, "NotAdmin")
          .withArgs(caller.address);
      }
      await expect(escrow.connect(admin).rescueSurplus(token, ethers.ZeroAddress, 10n)).to.be.revertedWithCustomError(escrow, "ZeroAddress");
      await expect(escrow.connect(admin).rescueSurplus(token, admin.address, AMOUNT))
        .to.be.revertedWithCustomError(escrow, "RescueExceedsSurplus")
        .withArgs(token, AMOUNT, 10n);
    });
  });
});
