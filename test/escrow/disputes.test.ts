import { expect } from "chai";
import hre from "hardhat";
import { loadFixture } from "@nomicfoundation/hardhat-network-helpers";
import {
  APPEAL_WINDOW,
  Ending,
  RULING_WINDOW,
  Status,
  assignedTaskFixture,
  deployEscrowFixture,
  disputedTaskFixture,
  escalatedTaskFixture,
  failedTaskFixture,
  fundedTaskFixture,
  longTaskFailedEarlyFixture,
  submittedTaskFixture,
} from "../fixtures/escrow";
import { atTime, latest } from "./helpers";

const { ethers } = hre;

describe("TaskEscrow disputes", function () {
  describe("raiseDispute", function () {
    for (const [name, fixture] of [
      ["Assigned", assignedTaskFixture],
      ["Submitted", submittedTaskFixture],
      ["Failed", failedTaskFixture],
    ] as const) {
      it(`lets the poster and the worker dispute before the deadline from ${name}`, async function () {
        for (const party of ["poster", "worker"] as const) {
          const ctx = await loadFixture(fixture);
          const caller = ctx[party];
          await expect(ctx.escrow.connect(caller).raiseDispute(ctx.taskHash))
            .to.emit(ctx.escrow, "DisputeRaised")
            .withArgs(ctx.taskHash, caller.address);
          const disputedAt = await latest();
          const task = await ctx.escrow.getTask(ctx.taskHash);
          expect(task.status).to.equal(Status.Disputed);
          expect(task.windowEndsAt).to.equal(disputedAt + RULING_WINDOW);
        }
      });
    }

    it("reports the deadline as the unruled-claim opening when it comes after the 14 days", async function () {
      const { escrow, taskHash, poster, deadline } = await loadFixture(longTaskFailedEarlyFixture);
      await escrow.connect(poster).raiseDispute(taskHash);
      expect((await latest()) + RULING_WINDOW).to.be.lessThan(deadline);
      expect((await escrow.getTask(taskHash)).windowEndsAt).to.equal(deadline);
    });

    it("refuses anyone but the poster and the worker", async function () {
      const { escrow, taskHash, verifier, stranger, admin, agentVerifier } = await loadFixture(submittedTaskFixture);
      for (const caller of [verifier, stranger, admin, agentVerifier]) {
        await expect(escrow.connect(caller).raiseDispute(taskHash))
          .to.be.revertedWithCustomError(escrow, "NotTaskParty")
          .withArgs(taskHash, caller.address);
      }
    });

    it("refuses a Funded task (nothing to dispute yet)", async function () {
      const { escrow, taskHash, poster } = await loadFixture(fundedTaskFixture);
      await expect(escrow.connect(poster).raiseDispute(taskHash))
        .to.be.revertedWithCustomError(escrow, "InvalidStatus")
        .withArgs(taskHash, Status.Funded);
    });

    it("refuses a task already Disputed or Escalated, or ended", async function () {
      const disputed = await loadFixture(disputedTaskFixture);
      await expect(disputed.escrow.connect(disputed.worker).raiseDispute(disputed.taskHash))
        .to.be.revertedWithCustomError(disputed.escrow, "InvalidStatus")
        .withArgs(disputed.taskHash, Status.Disputed);
      const escalated = await loadFixture(escalatedTaskFixture);
      await expect(escalated.escrow.connect(escalated.worker).raiseDispute(escalated.taskHash))
        .to.be.revertedWithCustomError(escalated.escrow, "InvalidStatus")
        .withArgs(escalated.taskHash, Status.Escalated);
      const verified = await loadFixture(submittedTaskFixture);
      await verified.escrow.connect(verified.verifier).completeVerification(verified.taskHash, true, 100);
      await expect(verified.escrow.connect(verified.poster).raiseDispute(verified.taskHash))
        .to.be.revertedWithCustomError(verified.escrow, "InvalidStatus")
        .withArgs(verified.taskHash, Status.Verified);
    });

    it("lets the poster dispute at deadline - 1 and refuses at the deadline", async function () {
      const { escrow, taskHash, poster, deadline } = await loadFixture(submittedTaskFixture);
      await atTime(deadline);
      await expect(escrow.connect(poster).raiseDispute(taskHash))
        .to.be.revertedWithCustomError(escrow, "DeadlinePassed")
        .withArgs(taskHash, deadline);

      const again = await loadFixture(submittedTaskFixture);
      await atTime(again.deadline - 1n);
      await again.escrow.connect(again.poster).raiseDispute(again.taskHash);
      expect((await again.escrow.getTask(again.taskHash)).status).to.equal(Status.Disputed);
    });

    it("refuses the poster after the deadline even within the worker's appeal window", async function () {
      const { escrow, taskHash, poster, deadline } = await loadFixture(failedTaskFixture);
      await atTime(deadline);
      await expect(escrow.connect(poster).raiseDispute(taskHash))
        .to.be.revertedWithCustomError(escrow, "DeadlinePassed")
        .withArgs(taskHash, deadline);
    });

    it("refuses the worker at the deadline unless a failed verdict is being appealed", async function () {
      for (const fixture of [assignedTaskFixture, submittedTaskFixture]) {
        const { escrow, taskHash, worker, deadline } = await loadFixture(fixture);
        await atTime(deadline);
        await expect(escrow.connect(worker).raiseDispute(taskHash))
          .to.be.revertedWithCustomError(escrow, "DeadlinePassed")
          .withArgs(taskHash, deadline);
      }
    });

    it("lets the worker appeal a failed verdict after the deadline until 3 days after the verdict", async function () {
      const { escrow, taskHash, worker, deadline, failedAt } = await loadFixture(failedTaskFixture);
      expect(failedAt + APPEAL_WINDOW).to.be.greaterThan(deadline);
      await atTime(failedAt + APPEAL_WINDOW);
      await expect(escrow.connect(worker).raiseDispute(taskHash))
        .to.be.revertedWithCustomError(escrow, "AppealWindowClosed")
        .withArgs(taskHash, failedAt + APPEAL_WINDOW);

      const again = await loadFixture(failedTaskFixture);
      await atTime(again.failedAt + APPEAL_WINDOW - 1n);
      await expect(again.escrow.connect(again.worker).raiseDispute(again.taskHash))
        .to.emit(again.escrow, "DisputeRaised")
        .withArgs(again.taskHash, again.worker.address);
      // raised after the deadline: the unruled-claim opens 14 days after the appeal
      expect((await again.escrow.getTask(again.taskHash)).windowEndsAt).to.equal(again.failedAt + APPEAL_WINDOW - 1n + RULING_WINDOW);
    });

    it("lets the worker dispute a failed verdict until the deadline when the appeal window closed earlier", async function () {
      const { escrow, taskHash, worker, deadline, failedAt } = await loadFixture(longTaskFailedEarlyFixture);
      expect(failedAt + APPEAL_WINDOW).to.be.lessThan(deadline);
      await atTime(deadline);
      await expect(escrow.connect(worker).raiseDispute(taskHash))
        .to.be.revertedWithCustomError(escrow, "AppealWindowClosed")
        .withArgs(taskHash, deadline);

      const again = await loadFixture(longTaskFailedEarlyFixture);
      await atTime(again.deadline - 1n);
      await again.escrow.connect(again.worker).raiseDispute(again.taskHash);
      expect((await again.escrow.getTask(again.taskHash)).status).to.equal(Status.Disputed);
    });

    it("refuses an unknown task", async function () {
      const { escrow, poster } = await loadFixture(deployEscrowFixture);
      const unknown = ethers.id("no such task");
      await expect(escrow.connect(poster).raiseDispute(unknown)).to.be.revertedWithCustomError(escrow, "TaskNotFound").withArgs(unknown);
    });
  });

  describe("resolveDispute", function () {
    it("refuses anyone but the admin", async function () {
      const { escrow, taskHash, poster, worker, verifier, stranger } = await loadFixture(disputedTaskFixture);
      for (const caller of [poster, worker, verifier, stranger]) {
        await expect(escrow.connect(caller).resolveDispute(taskHash, true))
          .to.be.revertedWithCustomError(escrow, "NotAdmin")
          .withArgs(caller.address);
      }
    });

    it("refuses a task that is neither Disputed nor Escalated", async function () {
      for (const [fixture, status] of [
        [fundedTaskFixture, Status.Funded],
        [assignedTaskFixture, Status.Assigned],
        [submittedTaskFixture, Status.Submitted],
        [failedTaskFixture, Status.Failed],
      ] as const) {
        const { escrow, admin, taskHash } = await loadFixture(fixture);
        await expect(escrow.connect(admin).resolveDispute(taskHash, false))
          .to.be.revertedWithCustomError(escrow, "InvalidStatus")
          .withArgs(taskHash, status);
      }
    });

    it("rules once: a second ruling finds the task ended", async function () {
      const { escrow, admin, taskHash } = await loadFixture(disputedTaskFixture);
      await expect(escrow.connect(admin).resolveDispute(taskHash, false)).to.emit(escrow, "DisputeResolved").withArgs(taskHash, false);
      expect((await escrow.getTask(taskHash)).ending).to.equal(Ending.DisputeWonByPoster);
      await expect(escrow.connect(admin).resolveDispute(taskHash, true))
        .to.be.revertedWithCustomError(escrow, "InvalidStatus")
        .withArgs(taskHash, Status.Refunded);
    });

    it("still rules after the 14-day window, as long as the poster has not claimed", async function () {
      const { escrow, admin, taskHash, disputedAt } = await loadFixture(disputedTaskFixture);
      await atTime(disputedAt + RULING_WINDOW + 1n);
      await expect(escrow.connect(admin).resolveDispute(taskHash, true)).to.emit(escrow, "DisputeResolved").withArgs(taskHash, true);
      expect((await escrow.getTask(taskHash)).status).to.equal(Status.Paid);
    });

    it("rules on escalated work", async function () {
      const { escrow, admin, taskHash } = await loadFixture(escalatedTaskFixture);
      await expect(escrow.connect(admin).resolveDispute(taskHash, false)).to.emit(escrow, "DisputeResolved").withArgs(taskHash, false);
      expect((await escrow.getTask(taskHash)).status).to.equal(Status.Refunded);
    });

    it("refuses an unknown task", async function () {
      const { escrow, admin } = await loadFixture(deployEscrowFixture);
      const unknown = ethers.id("no such task");
      await expect(escrow.connect(admin).resolveDispute(unknown, true)).to.be.revertedWithCustomError(escrow, "TaskNotFound").withArgs(unknown);
    });
  });
});
