import { expect } from "chai";
import hre from "hardhat";
import { loadFixture, mine, time } from "@nomicfoundation/hardhat-network-helpers";
import type { ContractTransactionResponse } from "ethers";
import {
  AMOUNT,
  APPEAL_WINDOW,
  DAY,
  DURATION,
  Ending,
  HOUR,
  RULING_WINDOW,
  Status,
  assignedTaskFixture,
  creditedWorkerFixture,
  deployEscrowFixture,
  disputedTaskFixture,
  escalatedTaskFixture,
  failedTaskFixture,
  fundedTaskFixture,
  submittedTaskFixture,
  unapprovedPosterFixture,
} from "../fixtures/escrow";
import { atTime, latest, refusedUntil, signPermit } from "./helpers";

const { ethers } = hre;
const ZERO = ethers.ZeroAddress;
const PAUSE = 5n * BigInt(HOUR) + 17n; // an odd length, so an off-by-one shows

type Escrow = Awaited<ReturnType<typeof deployEscrowFixture>>["escrow"];

/** The admin pauses at `from` and unpauses exactly `length` seconds later. */
async function pauseFor(escrow: Escrow, from: bigint, length: bigint) {
  const admin = await ethers.getSigner(await escrow.admin());
  await atTime(from);
  await escrow.connect(admin).pause();
  await atTime(from + length);
  await escrow.connect(admin).unpause();
}

describe("TaskEscrow pause", function () {
  describe("pause and unpause", function () {
    it("pauses and unpauses with events, counting the paused seconds", async function () {
      const { escrow, admin } = await loadFixture(deployEscrowFixture);
      const from = (await latest()) + 10n;
      await atTime(from);
      await expect(escrow.connect(admin).pause()).to.emit(escrow, "EscrowPausedAt").withArgs(from);
      expect(await escrow.paused()).to.equal(true);
      expect(await escrow.totalPaused()).to.equal(0n);
      await atTime(from + PAUSE);
      await expect(escrow.connect(admin).unpause()).to.emit(escrow, "EscrowUnpaused").withArgs(PAUSE, PAUSE);
      expect(await escrow.paused()).to.equal(false);
      expect(await escrow.totalPaused()).to.equal(PAUSE);

      const again = (await latest()) + 100n;
      await atTime(again);
      await escrow.connect(admin).pause();
      await atTime(again + 60n);
      await expect(escrow.connect(admin).unpause())
        .to.emit(escrow, "EscrowUnpaused")
        .withArgs(60n, PAUSE + 60n);
      expect(await escrow.totalPaused()).to.equal(PAUSE + 60n);
    });

    it("refuses a second pause and an unpause while live", async function () {
      const { escrow, admin } = await loadFixture(deployEscrowFixture);
      await expect(escrow.connect(admin).unpause()).to.be.revertedWithCustomError(escrow, "EscrowNotPaused");
      await escrow.connect(admin).pause();
      await expect(escrow.connect(admin).pause()).to.be.revertedWithCustomError(escrow, "EscrowPaused");
    });
  });

  describe("every state change but a ruling waits while paused", function () {
    type Ctx = Awaited<ReturnType<typeof fundedTaskFixture>> & { escalatedAt?: bigint };
    type Case = {
      name: string;
      fixture: () => Promise<Ctx>;
      /** Brings the task to where the call is legal, when the fixture alone does not. */
      prepare?: (c: Ctx) => Promise<unknown>;
      call: (c: Ctx) => Promise<ContractTransactionResponse>;
    };
    const cases: Case[] = [
      {
        name: "createTask",
        fixture: fundedTaskFixture,
        call: (c) => c.escrow.connect(c.poster).createTask(ethers.id("new"), c.token, AMOUNT, DURATION, ZERO),
      },
      {
        name: "createTasks",
        fixture: fundedTaskFixture,
        call: (c) =>
          c.escrow
            .connect(c.poster)
            .createTasks([{ taskHash: ethers.id("new"), token: c.token, amount: AMOUNT, duration: DURATION, verifier: ZERO }]),
      },
      {
        name: "cancelTask",
        fixture: fundedTaskFixture,
        call: (c) => c.escrow.connect(c.poster).cancelTask(c.taskHash),
      },
      {
        name: "assignWorker",
        fixture: fundedTaskFixture,
        call: (c) => c.escrow.connect(c.poster).assignWorker(c.taskHash, c.worker.address),
      },
      {
        name: "marketplaceAssign",
        fixture: fundedTaskFixture,
        call: (c) => c.escrow.connect(c.verifier).marketplaceAssign(c.taskHash, c.worker.address),
      },
      {
        name: "submitEvidence",
        fixture: assignedTaskFixture,
        call: (c) => c.escrow.connect(c.worker).submitEvidence(c.taskHash, ethers.id("result")),
      },
      {
        name: "completeVerification (pass)",
        fixture: submittedTaskFixture,
        call: (c) => c.escrow.connect(c.verifier).completeVerification(c.taskHash, true, 100),
      },
      {
        name: "completeVerification (fail)",
        fixture: submittedTaskFixture,
        call: (c) => c.escrow.connect(c.verifier).completeVerification(c.taskHash, false, 0),
      },
      {
        name: "raiseDispute (poster)",
        fixture: assignedTaskFixture,
        call: (c) => c.escrow.connect(c.poster).raiseDispute(c.taskHash),
      },
      {
        name: "raiseDispute (worker appeal)",
        fixture: failedTaskFixture,
        call: (c) => c.escrow.connect(c.worker).raiseDispute(c.taskHash),
      },
      {
        name: "claimTimeout",
        fixture: fundedTaskFixture,
        prepare: (c) => time.increaseTo(c.deadline),
        call: (c) => c.escrow.connect(c.poster).claimTimeout(c.taskHash),
      },
      {
        name: "releaseUnjudgedWork",
        fixture: escalatedTaskFixture,
        prepare: (c) => time.increaseTo(c.escalatedAt! + RULING_WINDOW),
        call: (c) => c.escrow.connect(c.worker).releaseUnjudgedWork(c.taskHash),
      },
    ];

    for (const { name, fixture, prepare, call } of cases) {
      it(`${name} reverts EscrowPaused, then goes through after unpause`, async function () {
        const ctx = await loadFixture(fixture);
        await prepare?.(ctx);
        const { escrow, admin } = ctx;
        await escrow.connect(admin).pause();
        await expect(call(ctx)).to.be.revertedWithCustomError(escrow, "EscrowPaused");
        await escrow.connect(admin).unpause();
        await expect(call(ctx)).not.to.be.reverted;
      });
    }

    it("permit funding reverts EscrowPaused, then goes through after unpause", async function () {
      const { escrow, escrowAddress, usdc, token, admin, permitPoster } = await loadFixture(unapprovedPosterFixture);
      const permitDeadline = (await latest()) + 600n;
      const { v, r, s } = await signPermit(usdc, permitPoster, escrowAddress, AMOUNT, permitDeadline);
      const single = () =>
        escrow.connect(permitPoster).createTaskWithPermit(ethers.id("permit"), token, AMOUNT, DURATION, ZERO, permitDeadline, v, r, s);
      const batch = () =>
        escrow
          .connect(permitPoster)
          .createTasksWithPermit(
            [{ taskHash: ethers.id("permit batch"), token, amount: AMOUNT, duration: DURATION, verifier: ZERO }],
            permitDeadline,
            v,
            r,
            s,
          );
      await escrow.connect(admin).pause();
      await expect(single()).to.be.revertedWithCustomError(escrow, "EscrowPaused");
      await expect(batch()).to.be.revertedWithCustomError(escrow, "EscrowPaused");
      await escrow.connect(admin).unpause();
      await expect(single()).not.to.be.reverted;
    });

    it("withdrawCredit reverts EscrowPaused, then goes through after unpause", async function () {
      const { escrow, admin, worker, blocklistToken } = await loadFixture(creditedWorkerFixture);
      await escrow.connect(admin).pause();
      await expect(escrow.connect(worker).withdrawCredit(blocklistToken)).to.be.revertedWithCustomError(escrow, "EscrowPaused");
      await escrow.connect(admin).unpause();
      await expect(escrow.connect(worker).withdrawCredit(blocklistToken)).not.to.be.reverted;
    });

    for (const workerWins of [true, false]) {
      it(`resolveDispute still rules while paused (workerWins=${workerWins})`, async function () {
        const { escrow, admin, taskHash, poster, worker } = await loadFixture(disputedTaskFixture);
        await escrow.connect(admin).pause();
        const tx = escrow.connect(admin).resolveDispute(taskHash, workerWins);
        if (workerWins) {
          await expect(tx)
            .to.emit(escrow, "TaskCompleted")
            .withArgs(taskHash, worker.address, AMOUNT - AMOUNT / 10n, AMOUNT / 10n, Ending.DisputeWonByWorker);
        } else {
          await expect(tx).to.emit(escrow, "TaskRefunded").withArgs(taskHash, poster.address, AMOUNT, Ending.DisputeWonByPoster);
        }
        expect(await escrow.paused()).to.equal(true);
      });
    }

    it("resolveDispute rules on escalated work while paused", async function () {
      const { escrow, admin, taskHash } = await loadFixture(escalatedTaskFixture);
      await escrow.connect(admin).pause();
      await escrow.connect(admin).resolveDispute(taskHash, true);
      expect((await escrow.getTask(taskHash)).status).to.equal(Status.Paid);
    });

    it("admin settings still work while paused", async function () {
      const { escrow, admin, stranger, newAdmin, token } = await loadFixture(deployEscrowFixture);
      await escrow.connect(admin).pause();
      await escrow.connect(admin).setFeeBps(500);
      await escrow.connect(admin).setTreasury(stranger.address);
      await escrow.connect(admin).setVerifier(stranger.address);
      await escrow.connect(admin).setAllowedToken(token, false);
      await escrow.connect(admin).proposeAdmin(newAdmin.address);
      await escrow.connect(newAdmin).acceptAdmin();
      expect(await escrow.feeBps()).to.equal(500n);
      expect(await escrow.treasury()).to.equal(stranger.address);
      expect(await escrow.verifier()).to.equal(stranger.address);
      expect(await escrow.isAllowedToken(token)).to.equal(false);
      expect(await escrow.admin()).to.equal(newAdmin.address);
      await escrow.connect(newAdmin).unpause();
      expect(await escrow.paused()).to.equal(false);
    });
  });

  describe("the paused time moves every deadline and window", function () {
    it("getTask projects the deadline while paused and keeps the full extension after", async function () {
      const { escrow, admin, taskHash, deadline } = await loadFixture(fundedTaskFixture);
      const from = (await latest()) + 100n;
      await atTime(from);
      await escrow.connect(admin).pause();
      expect((await escrow.getTask(taskHash)).deadline).to.equal(deadline);
      await time.increaseTo(from + 1_000n);
      expect((await escrow.getTask(taskHash)).deadline).to.equal(deadline + 1_000n);
      await atTime(from + PAUSE);
      await escrow.connect(admin).unpause();
      expect((await escrow.getTask(taskHash)).deadline).to.equal(deadline + PAUSE);
      await mine(10, { interval: 3_600 });
      expect((await escrow.getTask(taskHash)).deadline).to.equal(deadline + PAUSE);
    });

    it("moves the deadline for assignment and refunds by exactly the paused time", async function () {
      const { escrow, taskHash, poster, worker, deadline } = await loadFixture(fundedTaskFixture);
      await pauseFor(escrow, (await latest()) + 1n, PAUSE);
      const moved = deadline + PAUSE;
      expect((await escrow.getTask(taskHash)).deadline).to.equal(moved);
      await atTime(moved - 1n);
      await expect(escrow.connect(poster).claimTimeout(taskHash))
        .to.be.revertedWithCustomError(escrow, "DeadlineNotReached")
        .withArgs(taskHash, moved);
      await atTime(moved);
      await expect(escrow.connect(poster).assignWorker(taskHash, worker.address))
        .to.be.revertedWithCustomError(escrow, "DeadlinePassed")
        .withArgs(taskHash, moved);
      await expect(escrow.connect(poster).claimTimeout(taskHash))
        .to.emit(escrow, "DeadlineExpired")
        .withArgs(taskHash, poster.address, AMOUNT, Ending.NeverDelivered);

      const again = await loadFixture(fundedTaskFixture);
      await pauseFor(again.escrow, (await latest()) + 1n, PAUSE);
      await atTime(moved - 1n);
      await again.escrow.connect(again.poster).assignWorker(again.taskHash, again.worker.address);
      expect((await again.escrow.getTask(again.taskHash)).status).to.equal(Status.Assigned);
    });

    it("moves the refund of an assigned task to exactly the projected deadline", async function () {
      const { escrow, taskHash, poster, deadline } = await loadFixture(assignedTaskFixture);
      await pauseFor(escrow, (await latest()) + 1n, PAUSE);
      await atTime(deadline + PAUSE);
      await expect(escrow.connect(poster).claimTimeout(taskHash))
        .to.emit(escrow, "DeadlineExpired")
        .withArgs(taskHash, poster.address, AMOUNT, Ending.NeverDelivered);
    });

    it("moves the deadline for evidence by exactly the paused time", async function () {
      const { escrow, taskHash, worker, deadline } = await loadFixture(assignedTaskFixture);
      await pauseFor(escrow, (await latest()) + 1n, PAUSE);
      const moved = deadline + PAUSE;
      expect((await escrow.getTask(taskHash)).deadline).to.equal(moved);
      await atTime(moved);
      await expect(escrow.connect(worker).submitEvidence(taskHash, ethers.id("late")))
        .to.be.revertedWithCustomError(escrow, "DeadlinePassed")
        .withArgs(taskHash, moved);
      const again = await loadFixture(assignedTaskFixture);
      await pauseFor(again.escrow, (await latest()) + 1n, PAUSE);
      await atTime(moved - 1n);
      await again.escrow.connect(again.worker).submitEvidence(again.taskHash, ethers.id("in time"));
      expect((await again.escrow.getTask(again.taskHash)).status).to.equal(Status.Submitted);
    });

    it("moves the poster's dispute deadline by exactly the paused time", async function () {
      const { escrow, taskHash, poster, deadline } = await loadFixture(assignedTaskFixture);
      await pauseFor(escrow, (await latest()) + 1n, PAUSE);
      await atTime(deadline + PAUSE);
      await expect(escrow.connect(poster).raiseDispute(taskHash))
        .to.be.revertedWithCustomError(escrow, "DeadlinePassed")
        .withArgs(taskHash, deadline + PAUSE);
      const again = await loadFixture(assignedTaskFixture);
      await pauseFor(again.escrow, (await latest()) + 1n, PAUSE);
      await atTime(deadline + PAUSE - 1n);
      await expect(again.escrow.connect(again.poster).raiseDispute(again.taskHash)).not.to.be.reverted;
    });

    it("moves the 3-day appeal window by exactly the paused time", async function () {
      const { escrow, taskHash, worker, poster, failedAt } = await loadFixture(failedTaskFixture);
      await pauseFor(escrow, failedAt + 2n * BigInt(DAY), PAUSE);
      const closes = failedAt + APPEAL_WINDOW + PAUSE;
      expect((await escrow.getTask(taskHash)).windowEndsAt).to.equal(closes);
      await atTime(closes - 1n);
      await expect(escrow.connect(poster).claimTimeout(taskHash)).to.be.revertedWithCustomError(escrow, "WindowStillOpen").withArgs(taskHash, closes);
      await expect(escrow.connect(worker).raiseDispute(taskHash))
        .to.be.revertedWithCustomError(escrow, "AppealWindowClosed")
        .withArgs(taskHash, closes);

      const again = await loadFixture(failedTaskFixture);
      await pauseFor(again.escrow, again.failedAt + 2n * BigInt(DAY), PAUSE);
      await atTime(closes - 1n);
      await expect(again.escrow.connect(again.worker).raiseDispute(again.taskHash))
        .to.emit(again.escrow, "DisputeRaised")
        .withArgs(again.taskHash, again.worker.address);
    });

    it("moves the failed-unfixed refund by exactly the paused time", async function () {
      const { escrow, taskHash, poster, failedAt } = await loadFixture(failedTaskFixture);
      await pauseFor(escrow, failedAt + 1n, PAUSE);
      await atTime(failedAt + APPEAL_WINDOW + PAUSE);
      await expect(escrow.connect(poster).claimTimeout(taskHash))
        .to.emit(escrow, "DeadlineExpired")
        .withArgs(taskHash, poster.address, AMOUNT, Ending.FailedUnfixed);
    });

    it("moves the 14-day dispute window by exactly the paused time", async function () {
      const { escrow, taskHash, poster, disputedAt } = await loadFixture(disputedTaskFixture);
      await pauseFor(escrow, disputedAt + 3n * BigInt(DAY), PAUSE);
      const opens = disputedAt + RULING_WINDOW + PAUSE;
      expect((await escrow.getTask(taskHash)).windowEndsAt).to.equal(opens);
      await expect(refusedUntil(escrow, taskHash, () => escrow.connect(poster).claimTimeout(taskHash), "WindowStillOpen", opens))
        .to.emit(escrow, "DeadlineExpired")
        .withArgs(taskHash, poster.address, AMOUNT, Ending.DisputeUnruled);
    });

    it("moves the 14-day escalation window by exactly the paused time", async function () {
      const { escrow, taskHash, worker, escalatedAt } = await loadFixture(escalatedTaskFixture);
      await pauseFor(escrow, escalatedAt + 10n * BigInt(DAY), PAUSE);
      const opens = escalatedAt + RULING_WINDOW + PAUSE;
      expect((await escrow.getTask(taskHash)).windowEndsAt).to.equal(opens);
      await expect(refusedUntil(escrow, taskHash, () => escrow.connect(worker).releaseUnjudgedWork(taskHash), "WindowStillOpen", opens))
        .to.emit(escrow, "TaskCompleted")
        .withArgs(taskHash, worker.address, AMOUNT - AMOUNT / 10n, AMOUNT / 10n, Ending.UnjudgedWorkReleased);
    });

    it("adds up several pauses", async function () {
      const { escrow, taskHash, poster, deadline } = await loadFixture(fundedTaskFixture);
      await pauseFor(escrow, (await latest()) + 1n, PAUSE);
      await pauseFor(escrow, (await latest()) + 1_000n, 61n);
      const moved = deadline + PAUSE + 61n;
      expect((await escrow.getTask(taskHash)).deadline).to.equal(moved);
      await expect(refusedUntil(escrow, taskHash, () => escrow.connect(poster).claimTimeout(taskHash), "DeadlineNotReached", moved)).to.emit(
        escrow,
        "DeadlineExpired",
      );
    });

    it("a claim that came due during the pause waits for the unpause, then goes through at once", async function () {
      const { escrow, admin, taskHash, poster, deadline } = await loadFixture(fundedTaskFixture);
      await atTime(deadline + 10n);
      await escrow.connect(admin).pause();
      await time.increase(DAY);
      await expect(escrow.connect(poster).claimTimeout(taskHash)).to.be.revertedWithCustomError(escrow, "EscrowPaused");
      await escrow.connect(admin).unpause();
      await expect(escrow.connect(poster).claimTimeout(taskHash))
        .to.emit(escrow, "DeadlineExpired")
        .withArgs(taskHash, poster.address, AMOUNT, Ending.NeverDelivered);
    });

    it("a claim that came due before the pause waits for the unpause, then goes through at once", async function () {
      const { escrow, admin, taskHash, poster, deadline } = await loadFixture(fundedTaskFixture);
      await atTime(deadline - 10n);
      await escrow.connect(admin).pause();
      await time.increaseTo(deadline + BigInt(DAY));
      await expect(escrow.connect(poster).claimTimeout(taskHash)).to.be.revertedWithCustomError(escrow, "EscrowPaused");
      await escrow.connect(admin).unpause();
      // 10 seconds of the deadline were left at the pause, and they are still left after it
      const unpausedAt = await latest();
      expect((await escrow.getTask(taskHash)).deadline).to.equal(unpausedAt + 10n);
      await atTime(unpausedAt + 9n);
      await expect(escrow.connect(poster).claimTimeout(taskHash))
        .to.be.revertedWithCustomError(escrow, "DeadlineNotReached")
        .withArgs(taskHash, unpausedAt + 10n);
      await expect(escrow.connect(poster).claimTimeout(taskHash)).to.emit(escrow, "DeadlineExpired");
    });

    it("a task funded after a pause gets its full duration from funding", async function () {
      const { escrow, token, poster } = await loadFixture(deployEscrowFixture);
      await pauseFor(escrow, (await latest()) + 1n, PAUSE);
      const taskHash = ethers.id("after the pause");
      await escrow.connect(poster).createTask(taskHash, token, AMOUNT, DURATION, ZERO);
      expect((await escrow.getTask(taskHash)).deadline).to.equal((await latest()) + DURATION);
    });
  });
});
