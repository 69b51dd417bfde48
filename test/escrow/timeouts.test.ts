import { expect } from "chai";
import hre from "hardhat";
import { loadFixture } from "@nomicfoundation/hardhat-network-helpers";
import {
  AMOUNT,
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
import { atTime, latest, refusedUntil } from "./helpers";

const { ethers } = hre;

describe("TaskEscrow timeouts", function () {
  describe("claimTimeout", function () {
    it("refuses anyone but the poster", async function () {
      const { escrow, taskHash, worker, stranger, admin, verifier, deadline } = await loadFixture(assignedTaskFixture);
      await atTime(deadline);
      for (const caller of [worker, stranger, admin, verifier]) {
        await expect(escrow.connect(caller).claimTimeout(taskHash))
          .to.be.revertedWithCustomError(escrow, "NotPoster")
          .withArgs(taskHash, caller.address);
      }
    });

    for (const [name, fixture] of [
      ["Funded", fundedTaskFixture],
      ["Assigned", assignedTaskFixture],
      ["Submitted", submittedTaskFixture],
      ["Failed", failedTaskFixture],
      ["Disputed", disputedTaskFixture],
    ] as const) {
      it(`refuses a ${name} task one second before the deadline`, async function () {
        const { escrow, taskHash, poster, deadline } = await loadFixture(fixture);
        await atTime(deadline - 1n);
        await expect(escrow.connect(poster).claimTimeout(taskHash))
          .to.be.revertedWithCustomError(escrow, "DeadlineNotReached")
          .withArgs(taskHash, deadline);
      });
    }

    for (const [name, fixture] of [
      ["Funded", fundedTaskFixture],
      ["Assigned", assignedTaskFixture],
    ] as const) {
      it(`refunds a ${name} task at the deadline (never delivered)`, async function () {
        const { escrow, taskHash, poster, deadline } = await loadFixture(fixture);
        await atTime(deadline);
        await expect(escrow.connect(poster).claimTimeout(taskHash))
          .to.emit(escrow, "DeadlineExpired")
          .withArgs(taskHash, poster.address, AMOUNT, Ending.NeverDelivered);
        const task = await escrow.getTask(taskHash);
        expect(task.status).to.equal(Status.Refunded);
        expect(task.ending).to.equal(Ending.NeverDelivered);
      });
    }

    it("escalates unjudged work at the deadline without moving funds", async function () {
      const { escrow, escrowAddress, usdc, taskHash, poster, deadline } = await loadFixture(submittedTaskFixture);
      await atTime(deadline);
      await expect(escrow.connect(poster).claimTimeout(taskHash))
        .to.emit(escrow, "UnjudgedWorkEscalated")
        .withArgs(taskHash, deadline + RULING_WINDOW)
        .and.not.to.emit(escrow, "DeadlineExpired");
      const task = await escrow.getTask(taskHash);
      expect(task.status).to.equal(Status.Escalated);
      expect(task.windowEndsAt).to.equal(deadline + RULING_WINDOW);
      expect(task.ending).to.equal(Ending.None);
      expect(await usdc.balanceOf(escrowAddress)).to.equal(AMOUNT);
      expect(await escrow.escrowed(await usdc.getAddress())).to.equal(AMOUNT);
    });

    it("waits 3 days after the latest failed verdict, past the deadline", async function () {
      const { escrow, taskHash, poster, deadline, failedAt } = await loadFixture(failedTaskFixture);
      const opensAt = failedAt + APPEAL_WINDOW;
      expect(opensAt).to.be.greaterThan(deadline);
      await expect(
        refusedUntil(escrow, taskHash, () => escrow.connect(poster).claimTimeout(taskHash), "WindowStillOpen", opensAt, [deadline, opensAt - 1n]),
      )
        .to.emit(escrow, "DeadlineExpired")
        .withArgs(taskHash, poster.address, AMOUNT, Ending.FailedUnfixed);
    });

    it("refunds a failed task at the deadline when the appeal window closed before it", async function () {
      const { escrow, taskHash, poster, deadline, failedAt } = await loadFixture(longTaskFailedEarlyFixture);
      expect(failedAt + APPEAL_WINDOW).to.be.lessThan(deadline);
      await expect(refusedUntil(escrow, taskHash, () => escrow.connect(poster).claimTimeout(taskHash), "DeadlineNotReached", deadline))
        .to.emit(escrow, "DeadlineExpired")
        .withArgs(taskHash, poster.address, AMOUNT, Ending.FailedUnfixed);
    });

    it("waits 14 days after the dispute, past the deadline", async function () {
      const { escrow, taskHash, poster, deadline, disputedAt } = await loadFixture(disputedTaskFixture);
      const opensAt = disputedAt + RULING_WINDOW;
      expect((await escrow.getTask(taskHash)).windowEndsAt).to.equal(opensAt);
      await expect(
        refusedUntil(escrow, taskHash, () => escrow.connect(poster).claimTimeout(taskHash), "WindowStillOpen", opensAt, [deadline, opensAt - 1n]),
      )
        .to.emit(escrow, "DeadlineExpired")
        .withArgs(taskHash, poster.address, AMOUNT, Ending.DisputeUnruled);
    });

    it("waits for the deadline after an early dispute on a long task", async function () {
      const { escrow, taskHash, poster, worker, deadline } = await loadFixture(longTaskFailedEarlyFixture);
      await escrow.connect(worker).raiseDispute(taskHash);
      expect((await latest()) + RULING_WINDOW).to.be.lessThan(deadline);
      await expect(refusedUntil(escrow, taskHash, () => escrow.connect(poster).claimTimeout(taskHash), "DeadlineNotReached", deadline))
        .to.emit(escrow, "DeadlineExpired")
        .withArgs(taskHash, poster.address, AMOUNT, Ending.DisputeUnruled);
    });

    it("refuses escalated work (only a ruling or the worker's release ends it)", async function () {
      const { escrow, taskHash, poster, escalatedAt } = await loadFixture(escalatedTaskFixture);
      await atTime(escalatedAt + RULING_WINDOW);
      await expect(escrow.connect(poster).claimTimeout(taskHash))
        .to.be.revertedWithCustomError(escrow, "InvalidStatus")
        .withArgs(taskHash, Status.Escalated);
    });

    it("refuses a second claim on a refunded task", async function () {
      const { escrow, taskHash, poster, deadline } = await loadFixture(fundedTaskFixture);
      await atTime(deadline);
      await escrow.connect(poster).claimTimeout(taskHash);
      await expect(escrow.connect(poster).claimTimeout(taskHash))
        .to.be.revertedWithCustomError(escrow, "InvalidStatus")
        .withArgs(taskHash, Status.Refunded);
    });

    it("refuses an unknown task", async function () {
      const { escrow, poster } = await loadFixture(deployEscrowFixture);
      const unknown = ethers.id("no such task");
      await expect(escrow.connect(poster).claimTimeout(unknown)).to.be.revertedWithCustomError(escrow, "TaskNotFound").withArgs(unknown);
    });
  });

  describe("releaseUnjudgedWork", function () {
    it("refuses anyone but the worker", async function () {
      const { escrow, taskHash, poster, stranger, admin, escalatedAt } = await loadFixture(escalatedTaskFixture);
      await atTime(escalatedAt + RULING_WINDOW);
      for (const caller of [poster, stranger, admin]) {
        await expect(escrow.connect(caller).releaseUnjudgedWork(taskHash))
          .to.be.revertedWithCustomError(escrow, "NotWorker")
          .withArgs(taskHash, caller.address);
      }
    });

    it("refuses work that was not escalated", async function () {
      const cases: [() => ReturnType<typeof fundedTaskFixture>, number][] = [
        [submittedTaskFixture, Status.Submitted],
        [disputedTaskFixture, Status.Disputed],
        [failedTaskFixture, Status.Failed],
      ];
      for (const [fixture, status] of cases) {
        const { escrow, taskHash, worker } = await loadFixture(fixture);
        await expect(escrow.connect(worker).releaseUnjudgedWork(taskHash))
          .to.be.revertedWithCustomError(escrow, "InvalidStatus")
          .withArgs(taskHash, status);
      }
    });

    it("refuses one second before 14 days after the escalation and pays at exactly 14 days", async function () {
      const { escrow, taskHash, worker, escalatedAt } = await loadFixture(escalatedTaskFixture);
      const opensAt = escalatedAt + RULING_WINDOW;
      await expect(refusedUntil(escrow, taskHash, () => escrow.connect(worker).releaseUnjudgedWork(taskHash), "WindowStillOpen", opensAt))
        .to.emit(escrow, "TaskCompleted")
        .withArgs(taskHash, worker.address, AMOUNT - AMOUNT / 10n, AMOUNT / 10n, Ending.UnjudgedWorkReleased);
      await expect(escrow.connect(worker).releaseUnjudgedWork(taskHash))
        .to.be.revertedWithCustomError(escrow, "InvalidStatus")
        .withArgs(taskHash, Status.Paid);
    });

    it("refuses work the admin already ruled on", async function () {
      const { escrow, taskHash, admin, worker, escalatedAt } = await loadFixture(escalatedTaskFixture);
      await escrow.connect(admin).resolveDispute(taskHash, false);
      await atTime(escalatedAt + RULING_WINDOW);
      await expect(escrow.connect(worker).releaseUnjudgedWork(taskHash))
        .to.be.revertedWithCustomError(escrow, "InvalidStatus")
        .withArgs(taskHash, Status.Refunded);
    });

    it("refuses an unknown task", async function () {
      const { escrow, worker } = await loadFixture(deployEscrowFixture);
      const unknown = ethers.id("no such task");
      await expect(escrow.connect(worker).releaseUnjudgedWork(unknown)).to.be.revertedWithCustomError(escrow, "TaskNotFound").withArgs(unknown);
    });
  });
});
