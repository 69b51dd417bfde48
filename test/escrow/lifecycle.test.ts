import { expect } from "chai";
import hre from "hardhat";
import { loadFixture } from "@nomicfoundation/hardhat-network-helpers";
import {
  APPEAL_WINDOW,
  AMOUNT,
  DURATION,
  Status,
  agentVerifiedTaskFixture,
  assignedTaskFixture,
  deployEscrowFixture,
  disputedTaskFixture,
  escalatedTaskFixture,
  failedTaskFixture,
  fundedTaskFixture,
  lastRoundFailedTaskFixture,
  submittedTaskFixture,
} from "../fixtures/escrow";
import { atTime, latest } from "./helpers";

const { ethers } = hre;
const ZERO = ethers.ZeroAddress;
const UNKNOWN = ethers.id("no such task");

describe("TaskEscrow life cycle", function () {
  describe("cancelTask", function () {
    it("refuses anyone but the poster", async function () {
      const { escrow, taskHash, stranger, verifier } = await loadFixture(fundedTaskFixture);
      for (const caller of [stranger, verifier]) {
        await expect(escrow.connect(caller).cancelTask(taskHash))
          .to.be.revertedWithCustomError(escrow, "NotPoster")
          .withArgs(taskHash, caller.address);
      }
    });

    it("refuses once a worker is assigned", async function () {
      const { escrow, taskHash, poster } = await loadFixture(assignedTaskFixture);
      await expect(escrow.connect(poster).cancelTask(taskHash))
        .to.be.revertedWithCustomError(escrow, "InvalidStatus")
        .withArgs(taskHash, Status.Assigned);
    });

    it("works after the deadline while still Funded", async function () {
      const { escrow, taskHash, poster, deadline } = await loadFixture(fundedTaskFixture);
      await atTime(deadline + 1n);
      await escrow.connect(poster).cancelTask(taskHash);
      expect((await escrow.getTask(taskHash)).status).to.equal(Status.Cancelled);
    });

    it("refuses an unknown task", async function () {
      const { escrow, poster } = await loadFixture(deployEscrowFixture);
      await expect(escrow.connect(poster).cancelTask(UNKNOWN)).to.be.revertedWithCustomError(escrow, "TaskNotFound").withArgs(UNKNOWN);
    });
  });

  describe("assignWorker (poster)", function () {
    it("assigns the worker and emits WorkerAssigned by the poster", async function () {
      const { escrow, taskHash, poster, worker } = await loadFixture(fundedTaskFixture);
      await expect(escrow.connect(poster).assignWorker(taskHash, worker.address))
        .to.emit(escrow, "WorkerAssigned")
        .withArgs(taskHash, worker.address, poster.address);
      const task = await escrow.getTask(taskHash);
      expect(task.worker).to.equal(worker.address);
      expect(task.status).to.equal(Status.Assigned);
    });

    it("refuses anyone but the poster, the marketplace verifier included", async function () {
      const { escrow, taskHash, worker, verifier, stranger } = await loadFixture(fundedTaskFixture);
      for (const caller of [verifier, stranger, worker]) {
        await expect(escrow.connect(caller).assignWorker(taskHash, worker.address))
          .to.be.revertedWithCustomError(escrow, "NotPoster")
          .withArgs(taskHash, caller.address);
      }
    });

    it("refuses the zero address and the poster as worker", async function () {
      const { escrow, taskHash, poster } = await loadFixture(fundedTaskFixture);
      for (const candidate of [ZERO, poster.address]) {
        await expect(escrow.connect(poster).assignWorker(taskHash, candidate))
          .to.be.revertedWithCustomError(escrow, "InvalidWorker")
          .withArgs(taskHash, candidate);
      }
    });

    it("refuses the task's verifier agent as worker", async function () {
      const { escrow, token, poster, agentVerifier } = await loadFixture(deployEscrowFixture);
      const taskHash = ethers.id("agent-judged, unassigned");
      await escrow.connect(poster).createTask(taskHash, token, AMOUNT, DURATION, agentVerifier.address);
      await expect(escrow.connect(poster).assignWorker(taskHash, agentVerifier.address))
        .to.be.revertedWithCustomError(escrow, "InvalidWorker")
        .withArgs(taskHash, agentVerifier.address);
    });

    it("refuses a second assignment", async function () {
      const { escrow, taskHash, poster, stranger } = await loadFixture(assignedTaskFixture);
      await expect(escrow.connect(poster).assignWorker(taskHash, stranger.address))
        .to.be.revertedWithCustomError(escrow, "InvalidStatus")
        .withArgs(taskHash, Status.Assigned);
    });

    it("refuses at the deadline", async function () {
      const { escrow, taskHash, poster, worker, deadline } = await loadFixture(fundedTaskFixture);
      await atTime(deadline);
      await expect(escrow.connect(poster).assignWorker(taskHash, worker.address))
        .to.be.revertedWithCustomError(escrow, "DeadlinePassed")
        .withArgs(taskHash, deadline);
    });

    it("works at deadline - 1", async function () {
      const { escrow, taskHash, poster, worker, deadline } = await loadFixture(fundedTaskFixture);
      await atTime(deadline - 1n);
      await escrow.connect(poster).assignWorker(taskHash, worker.address);
      expect((await escrow.getTask(taskHash)).status).to.equal(Status.Assigned);
    });

    it("refuses an unknown task", async function () {
      const { escrow, poster, worker } = await loadFixture(deployEscrowFixture);
      await expect(escrow.connect(poster).assignWorker(UNKNOWN, worker.address))
        .to.be.revertedWithCustomError(escrow, "TaskNotFound")
        .withArgs(UNKNOWN);
    });
  });

  describe("marketplaceAssign (marketplace verifier)", function () {
    it("assigns the worker and emits WorkerAssigned by the verifier", async function () {
      const { escrow, taskHash, verifier, worker } = await loadFixture(fundedTaskFixture);
      await expect(escrow.connect(verifier).marketplaceAssign(taskHash, worker.address))
        .to.emit(escrow, "WorkerAssigned")
        .withArgs(taskHash, worker.address, verifier.address);
      expect((await escrow.getTask(taskHash)).worker).to.equal(worker.address);
    });

    it("refuses anyone but the marketplace verifier, the poster and a verifier agent included", async function () {
      const { escrow, taskHash, poster, worker, stranger, agentVerifier } = await loadFixture(fundedTaskFixture);
      for (const caller of [poster, stranger, agentVerifier]) {
        await expect(escrow.connect(caller).marketplaceAssign(taskHash, worker.address))
          .to.be.revertedWithCustomError(escrow, "NotMarketplaceVerifier")
          .withArgs(caller.address);
      }
    });

    it("refuses the zero address, the poster and the task's verifier agent as worker", async function () {
      const { escrow, token, poster, verifier, agentVerifier } = await loadFixture(deployEscrowFixture);
      const taskHash = ethers.id("agent-judged, unassigned");
      await escrow.connect(poster).createTask(taskHash, token, AMOUNT, DURATION, agentVerifier.address);
      for (const candidate of [ZERO, poster.address, agentVerifier.address]) {
        await expect(escrow.connect(verifier).marketplaceAssign(taskHash, candidate))
          .to.be.revertedWithCustomError(escrow, "InvalidWorker")
          .withArgs(taskHash, candidate);
      }
    });

    it("refuses the marketplace verifier as worker: it would judge its own work", async function () {
      const { escrow, taskHash, poster, verifier } = await loadFixture(fundedTaskFixture);
      await expect(escrow.connect(verifier).marketplaceAssign(taskHash, verifier.address))
        .to.be.revertedWithCustomError(escrow, "InvalidWorker")
        .withArgs(taskHash, verifier.address);
      await expect(escrow.connect(poster).assignWorker(taskHash, verifier.address))
        .to.be.revertedWithCustomError(escrow, "InvalidWorker")
        .withArgs(taskHash, verifier.address);
    });

    it("refuses a task that is not Funded, at the deadline, or unknown", async function () {
      const { escrow, taskHash, verifier, stranger } = await loadFixture(assignedTaskFixture);
      await expect(escrow.connect(verifier).marketplaceAssign(taskHash, stranger.address))
        .to.be.revertedWithCustomError(escrow, "InvalidStatus")
        .withArgs(taskHash, Status.Assigned);
      await expect(escrow.connect(verifier).marketplaceAssign(UNKNOWN, stranger.address))
        .to.be.revertedWithCustomError(escrow, "TaskNotFound")
        .withArgs(UNKNOWN);

      const funded = await loadFixture(fundedTaskFixture);
      await atTime(funded.deadline);
      await expect(funded.escrow.connect(funded.verifier).marketplaceAssign(funded.taskHash, funded.worker.address))
        .to.be.revertedWithCustomError(funded.escrow, "DeadlinePassed")
        .withArgs(funded.taskHash, funded.deadline);
    });
  });

  describe("releaseTask (worker hands the task back)", function () {
    it("reopens an assigned task: Funded again, no worker, and any agent may be assigned", async function () {
      const { escrow, taskHash, worker, verifier, stranger, deadline } = await loadFixture(assignedTaskFixture);
      await expect(escrow.connect(worker).releaseTask(taskHash)).to.emit(escrow, "WorkerReleased").withArgs(taskHash, worker.address);
      const task = await escrow.getTask(taskHash);
      expect(task.status).to.equal(Status.Funded);
      expect(task.worker).to.equal(ZERO);
      expect(task.deadline).to.equal(deadline);
      await expect(escrow.connect(verifier).marketplaceAssign(taskHash, stranger.address))
        .to.emit(escrow, "WorkerAssigned")
        .withArgs(taskHash, stranger.address, verifier.address);
    });

    it("refuses anyone but the worker", async function () {
      const { escrow, taskHash, poster, verifier, stranger } = await loadFixture(assignedTaskFixture);
      for (const caller of [poster, verifier, stranger]) {
        await expect(escrow.connect(caller).releaseTask(taskHash))
          .to.be.revertedWithCustomError(escrow, "NotWorker")
          .withArgs(taskHash, caller.address);
      }
    });

    it("refuses once evidence was delivered, and after a failed round", async function () {
      const submitted = await loadFixture(submittedTaskFixture);
      await expect(submitted.escrow.connect(submitted.worker).releaseTask(submitted.taskHash))
        .to.be.revertedWithCustomError(submitted.escrow, "InvalidStatus")
        .withArgs(submitted.taskHash, Status.Submitted);
      const failed = await loadFixture(failedTaskFixture);
      await expect(failed.escrow.connect(failed.worker).releaseTask(failed.taskHash))
        .to.be.revertedWithCustomError(failed.escrow, "InvalidStatus")
        .withArgs(failed.taskHash, Status.Failed);
    });

    it("refuses an unknown task and a paused escrow", async function () {
      const { escrow, taskHash, worker, admin } = await loadFixture(assignedTaskFixture);
      await expect(escrow.connect(worker).releaseTask(UNKNOWN)).to.be.revertedWithCustomError(escrow, "TaskNotFound").withArgs(UNKNOWN);
      await escrow.connect(admin).pause();
      await expect(escrow.connect(worker).releaseTask(taskHash)).to.be.revertedWithCustomError(escrow, "EscrowPaused");
    });
  });

  describe("submitEvidence", function () {
    it("records round 1 and moves to Submitted", async function () {
      const { escrow, taskHash, worker } = await loadFixture(assignedTaskFixture);
      const resultHash = ethers.id("result");
      await expect(escrow.connect(worker).submitEvidence(taskHash, resultHash))
        .to.emit(escrow, "EvidenceSubmitted")
        .withArgs(taskHash, worker.address, resultHash, 1);
      const task = await escrow.getTask(taskHash);
      expect(task.status).to.equal(Status.Submitted);
      expect(task.rounds).to.equal(1n);
    });

    it("refuses anyone but the worker", async function () {
      const { escrow, taskHash, poster, verifier, stranger } = await loadFixture(assignedTaskFixture);
      for (const caller of [poster, verifier, stranger]) {
        await expect(escrow.connect(caller).submitEvidence(taskHash, ethers.id("x")))
          .to.be.revertedWithCustomError(escrow, "NotWorker")
          .withArgs(taskHash, caller.address);
      }
    });

    it("refuses a Funded task (no worker yet) with NotWorker", async function () {
      const { escrow, taskHash, worker } = await loadFixture(fundedTaskFixture);
      await expect(escrow.connect(worker).submitEvidence(taskHash, ethers.id("x")))
        .to.be.revertedWithCustomError(escrow, "NotWorker")
        .withArgs(taskHash, worker.address);
    });

    it("refuses a zero result hash", async function () {
      const { escrow, taskHash, worker } = await loadFixture(assignedTaskFixture);
      await expect(escrow.connect(worker).submitEvidence(taskHash, ethers.ZeroHash)).to.be.revertedWithCustomError(escrow, "ZeroResultHash");
    });

    it("refuses a second submission while one awaits its verdict", async function () {
      const { escrow, taskHash, worker } = await loadFixture(submittedTaskFixture);
      await expect(escrow.connect(worker).submitEvidence(taskHash, ethers.id("again")))
        .to.be.revertedWithCustomError(escrow, "InvalidStatus")
        .withArgs(taskHash, Status.Submitted);
    });

    it("refuses while Disputed or Escalated", async function () {
      const disputed = await loadFixture(disputedTaskFixture);
      await expect(disputed.escrow.connect(disputed.worker).submitEvidence(disputed.taskHash, ethers.id("x")))
        .to.be.revertedWithCustomError(disputed.escrow, "InvalidStatus")
        .withArgs(disputed.taskHash, Status.Disputed);
      const escalated = await loadFixture(escalatedTaskFixture);
      await expect(escalated.escrow.connect(escalated.worker).submitEvidence(escalated.taskHash, ethers.id("x")))
        .to.be.revertedWithCustomError(escalated.escrow, "InvalidStatus")
        .withArgs(escalated.taskHash, Status.Escalated);
    });

    it("works at deadline - 1 and refuses at the deadline", async function () {
      const { escrow, taskHash, worker, deadline } = await loadFixture(assignedTaskFixture);
      await atTime(deadline);
      await expect(escrow.connect(worker).submitEvidence(taskHash, ethers.id("late")))
        .to.be.revertedWithCustomError(escrow, "DeadlinePassed")
        .withArgs(taskHash, deadline);

      const again = await loadFixture(assignedTaskFixture);
      await atTime(again.deadline - 1n);
      await again.escrow.connect(again.worker).submitEvidence(again.taskHash, ethers.id("just in time"));
      expect((await again.escrow.getTask(again.taskHash)).status).to.equal(Status.Submitted);
    });

    it("accepts a new round after a failed verdict, up to three rounds", async function () {
      const { escrow, taskHash, worker, verifier } = await loadFixture(failedTaskFixture);
      for (const round of [2, 3]) {
        const resultHash = ethers.id(`round ${round}`);
        await expect(escrow.connect(worker).submitEvidence(taskHash, resultHash))
          .to.emit(escrow, "EvidenceSubmitted")
          .withArgs(taskHash, worker.address, resultHash, round);
        expect((await escrow.getTask(taskHash)).rounds).to.equal(BigInt(round));
        await escrow.connect(verifier).completeVerification(taskHash, false, 0);
      }
      await expect(escrow.connect(worker).submitEvidence(taskHash, ethers.id("round 4")))
        .to.be.revertedWithCustomError(escrow, "NoRoundsLeft")
        .withArgs(taskHash);
    });

    it("refuses a new round after a failed verdict at the deadline", async function () {
      const { escrow, taskHash, worker, deadline } = await loadFixture(failedTaskFixture);
      await atTime(deadline);
      await expect(escrow.connect(worker).submitEvidence(taskHash, ethers.id("late")))
        .to.be.revertedWithCustomError(escrow, "DeadlinePassed")
        .withArgs(taskHash, deadline);
    });

    it("refuses an unknown task", async function () {
      const { escrow, worker } = await loadFixture(deployEscrowFixture);
      await expect(escrow.connect(worker).submitEvidence(UNKNOWN, ethers.id("x")))
        .to.be.revertedWithCustomError(escrow, "TaskNotFound")
        .withArgs(UNKNOWN);
    });
  });

  describe("completeVerification", function () {
    it("a failed verdict records the time, opens the 3-day appeal window and pays nothing", async function () {
      const { escrow, escrowAddress, usdc, taskHash, verifier, worker } = await loadFixture(submittedTaskFixture);
      await expect(escrow.connect(verifier).completeVerification(taskHash, false, 35))
        .to.emit(escrow, "VerificationCompleted")
        .withArgs(taskHash, verifier.address, false, 35, 1)
        .and.not.to.emit(escrow, "TaskCompleted");
      const failedAt = await latest();
      const task = await escrow.getTask(taskHash);
      expect(task.status).to.equal(Status.Failed);
      expect(task.windowEndsAt).to.equal(failedAt + APPEAL_WINDOW);
      expect(task.rounds).to.equal(1n);
      expect(await usdc.balanceOf(escrowAddress)).to.equal(AMOUNT);
      expect(await usdc.balanceOf(worker.address)).to.equal(0n);
    });

    it("the latest failed verdict restarts the appeal window", async function () {
      const { escrow, taskHash, verifier, worker, failedAt } = await loadFixture(failedTaskFixture);
      await escrow.connect(worker).submitEvidence(taskHash, ethers.id("round 2"));
      await atTime(failedAt + 3_600n);
      await escrow.connect(verifier).completeVerification(taskHash, false, 10);
      expect((await escrow.getTask(taskHash)).windowEndsAt).to.equal(failedAt + 3_600n + APPEAL_WINDOW);
    });

    it("accepts scores 0 and 100 and refuses 101", async function () {
      const { escrow, taskHash, verifier } = await loadFixture(submittedTaskFixture);
      await expect(escrow.connect(verifier).completeVerification(taskHash, true, 101))
        .to.be.revertedWithCustomError(escrow, "InvalidScore")
        .withArgs(101);
      await expect(escrow.connect(verifier).completeVerification(taskHash, false, 255))
        .to.be.revertedWithCustomError(escrow, "InvalidScore")
        .withArgs(255);
      await escrow.connect(verifier).completeVerification(taskHash, false, 0);
      const again = await loadFixture(submittedTaskFixture);
      await again.escrow.connect(again.verifier).completeVerification(again.taskHash, true, 100);
      expect((await again.escrow.getTask(again.taskHash)).status).to.equal(Status.Verified);
    });

    it("refuses anyone but the marketplace verifier when the task has no verifier agent", async function () {
      const { escrow, taskHash, poster, worker, admin, agentVerifier } = await loadFixture(submittedTaskFixture);
      for (const caller of [poster, worker, admin, agentVerifier]) {
        await expect(escrow.connect(caller).completeVerification(taskHash, true, 100))
          .to.be.revertedWithCustomError(escrow, "NotTaskVerifier")
          .withArgs(taskHash, caller.address);
      }
    });

    it("lets only the verifier agent judge its task, not the marketplace verifier", async function () {
      const { escrow, taskHash, verifier, agentVerifier, poster } = await loadFixture(agentVerifiedTaskFixture);
      for (const caller of [verifier, poster]) {
        await expect(escrow.connect(caller).completeVerification(taskHash, true, 100))
          .to.be.revertedWithCustomError(escrow, "NotTaskVerifier")
          .withArgs(taskHash, caller.address);
      }
      await expect(escrow.connect(agentVerifier).completeVerification(taskHash, false, 50))
        .to.emit(escrow, "VerificationCompleted")
        .withArgs(taskHash, agentVerifier.address, false, 50, 1);
    });

    it("refuses a task without evidence awaiting a verdict", async function () {
      const { escrow, taskHash, verifier } = await loadFixture(assignedTaskFixture);
      await expect(escrow.connect(verifier).completeVerification(taskHash, true, 100))
        .to.be.revertedWithCustomError(escrow, "InvalidStatus")
        .withArgs(taskHash, Status.Assigned);
      const failed = await loadFixture(failedTaskFixture);
      await expect(failed.escrow.connect(failed.verifier).completeVerification(failed.taskHash, true, 100))
        .to.be.revertedWithCustomError(failed.escrow, "InvalidStatus")
        .withArgs(failed.taskHash, Status.Failed);
      const escalated = await loadFixture(escalatedTaskFixture);
      await expect(escalated.escrow.connect(escalated.verifier).completeVerification(escalated.taskHash, true, 100))
        .to.be.revertedWithCustomError(escalated.escrow, "InvalidStatus")
        .withArgs(escalated.taskHash, Status.Escalated);
    });

    it("still judges delivered work after the deadline until the poster escalates it", async function () {
      const { escrow, taskHash, verifier, deadline } = await loadFixture(submittedTaskFixture);
      await atTime(deadline + 3_600n);
      await escrow.connect(verifier).completeVerification(taskHash, false, 5);
      expect((await escrow.getTask(taskHash)).status).to.equal(Status.Failed);
    });

    it("a last-round fail leaves no rounds", async function () {
      const { escrow, taskHash, worker } = await loadFixture(lastRoundFailedTaskFixture);
      expect((await escrow.getTask(taskHash)).rounds).to.equal(3n);
      await expect(escrow.connect(worker).submitEvidence(taskHash, ethers.id("round 4")))
        .to.be.revertedWithCustomError(escrow, "NoRoundsLeft")
        .withArgs(taskHash);
    });

    it("refuses an unknown task", async function () {
      const { escrow, verifier } = await loadFixture(deployEscrowFixture);
      await expect(escrow.connect(verifier).completeVerification(UNKNOWN, true, 100))
        .to.be.revertedWithCustomError(escrow, "TaskNotFound")
        .withArgs(UNKNOWN);
    });
  });
});
