import { expect } from "chai";
import hre from "hardhat";
import { loadFixture } from "@nomicfoundation/hardhat-network-helpers";
import type { ContractTransactionResponse } from "ethers";
import {
  AMOUNT,
  APPEAL_WINDOW,
  Ending,
  POSTER_FUNDS,
  RULING_WINDOW,
  Status,
  assignedTaskFixture,
  disputedTaskFixture,
  escalatedTaskFixture,
  failedTaskFixture,
  fundedTaskFixture,
  submittedTaskFixture,
} from "../fixtures/escrow";
import { atTime, balancesOf, sweepFees } from "./helpers";

const { ethers } = hre;
const FEE = AMOUNT / 10n; // 1000 bps
const PAYOUT = AMOUNT - FEE;
const ENDING_EVENTS = ["TaskCompleted", "TaskCancelled", "DeadlineExpired", "TaskRefunded"];

type Ctx = Awaited<ReturnType<typeof fundedTaskFixture>> & {
  failedAt?: bigint;
  disputedAt?: bigint;
  escalatedAt?: bigint;
};

interface Scenario {
  ending: (typeof Ending)[keyof typeof Ending];
  name: string;
  fixture: () => Promise<Ctx>;
  end: (ctx: Ctx) => Promise<ContractTransactionResponse>;
  status: (typeof Status)[keyof typeof Status];
  event: string;
  args: (ctx: Ctx) => unknown[];
  payout: boolean;
  /** Events the ending transaction also emits, with their args. */
  also?: (ctx: Ctx) => [string, unknown[]][];
}

const scenarios: Scenario[] = [
  {
    ending: Ending.VerificationPassed,
    name: "verification passed",
    fixture: submittedTaskFixture,
    end: (c) => c.escrow.connect(c.verifier).completeVerification(c.taskHash, true, 90),
    status: Status.Verified,
    event: "TaskCompleted",
    args: (c) => [c.taskHash, c.worker.address, PAYOUT, FEE, Ending.VerificationPassed],
    payout: true,
    also: (c) => [["VerificationCompleted", [c.taskHash, c.verifier.address, true, 90, 1]]],
  },
  {
    ending: Ending.DisputeWonByWorker,
    name: "dispute ruled for the worker",
    fixture: disputedTaskFixture,
    end: (c) => c.escrow.connect(c.admin).resolveDispute(c.taskHash, true),
    status: Status.Paid,
    event: "TaskCompleted",
    args: (c) => [c.taskHash, c.worker.address, PAYOUT, FEE, Ending.DisputeWonByWorker],
    payout: true,
    also: (c) => [["DisputeResolved", [c.taskHash, true]]],
  },
  {
    ending: Ending.UnjudgedWorkReleased,
    name: "unjudged work released",
    fixture: escalatedTaskFixture,
    end: async (c) => {
      await atTime(c.escalatedAt! + RULING_WINDOW);
      return c.escrow.connect(c.worker).releaseUnjudgedWork(c.taskHash);
    },
    status: Status.Paid,
    event: "TaskCompleted",
    args: (c) => [c.taskHash, c.worker.address, PAYOUT, FEE, Ending.UnjudgedWorkReleased],
    payout: true,
  },
  {
    ending: Ending.CancelledWhileOpen,
    name: "cancelled while open",
    fixture: fundedTaskFixture,
    end: (c) => c.escrow.connect(c.poster).cancelTask(c.taskHash),
    status: Status.Cancelled,
    event: "TaskCancelled",
    args: (c) => [c.taskHash, c.poster.address, AMOUNT, Ending.CancelledWhileOpen],
    payout: false,
  },
  {
    ending: Ending.NeverDelivered,
    name: "never delivered",
    fixture: assignedTaskFixture,
    end: async (c) => {
      await atTime(c.deadline);
      return c.escrow.connect(c.poster).claimTimeout(c.taskHash);
    },
    status: Status.Refunded,
    event: "DeadlineExpired",
    args: (c) => [c.taskHash, c.poster.address, AMOUNT, Ending.NeverDelivered],
    payout: false,
  },
  {
    ending: Ending.FailedUnfixed,
    name: "failed and unfixed",
    fixture: failedTaskFixture,
    end: async (c) => {
      await atTime(c.failedAt! + APPEAL_WINDOW);
      return c.escrow.connect(c.poster).claimTimeout(c.taskHash);
    },
    status: Status.Refunded,
    event: "DeadlineExpired",
    args: (c) => [c.taskHash, c.poster.address, AMOUNT, Ending.FailedUnfixed],
    payout: false,
  },
  {
    ending: Ending.DisputeWonByPoster,
    name: "dispute ruled for the poster",
    fixture: disputedTaskFixture,
    end: (c) => c.escrow.connect(c.admin).resolveDispute(c.taskHash, false),
    status: Status.Refunded,
    event: "TaskRefunded",
    args: (c) => [c.taskHash, c.poster.address, AMOUNT, Ending.DisputeWonByPoster],
    payout: false,
    also: (c) => [["DisputeResolved", [c.taskHash, false]]],
  },
  {
    ending: Ending.DisputeUnruled,
    name: "dispute unruled for 14 days",
    fixture: disputedTaskFixture,
    end: async (c) => {
      await atTime(c.disputedAt! + RULING_WINDOW);
      return c.escrow.connect(c.poster).claimTimeout(c.taskHash);
    },
    status: Status.Refunded,
    event: "DeadlineExpired",
    args: (c) => [c.taskHash, c.poster.address, AMOUNT, Ending.DisputeUnruled],
    payout: false,
  },
];

describe("TaskEscrow endings", function () {
  it("covers each of the eight endings once", function () {
    expect(scenarios.map((s) => s.ending).sort()).to.deep.equal([1, 2, 3, 4, 5, 6, 7, 8]);
  });

  for (const scenario of scenarios) {
    describe(`${scenario.name} (Ending ${scenario.ending})`, function () {
      it(`ends the task with exact balances and one ${scenario.event}`, async function () {
        const ctx = await loadFixture(scenario.fixture);
        const { escrow, escrowAddress, usdc, token, poster, worker, treasury } = ctx;
        const tx = await scenario.end(ctx);
        await expect(tx)
          .to.emit(escrow, scenario.event)
          .withArgs(...scenario.args(ctx));
        for (const [event, args] of scenario.also?.(ctx) ?? []) {
          await expect(tx)
            .to.emit(escrow, event)
            .withArgs(...args);
        }
        const receipt = await tx.wait();
        const endingLogs = receipt!.logs
          .map((log) => escrow.interface.parseLog(log))
          .filter((parsed) => parsed && ENDING_EVENTS.includes(parsed.name));
        expect(endingLogs).to.have.length(1);

        // The fee accrued in the escrow (4.0.0); swept, it reaches the treasury.
        expect(await escrow.accruedFees(token)).to.equal(scenario.payout ? FEE : 0n);
        await sweepFees(escrow, treasury, token);
        const [posterBalance, workerBalance, treasuryBalance, escrowBalance] = await balancesOf(usdc, [poster, worker, treasury, escrowAddress]);
        if (scenario.payout) {
          expect(posterBalance).to.equal(POSTER_FUNDS - AMOUNT);
          expect(workerBalance).to.equal(PAYOUT);
          expect(treasuryBalance).to.equal(FEE);
        } else {
          expect(posterBalance).to.equal(POSTER_FUNDS);
          expect(workerBalance).to.equal(0n);
          expect(treasuryBalance).to.equal(0n);
        }
        expect(escrowBalance).to.equal(0n);
        expect(await escrow.escrowed(token)).to.equal(0n);
        expect(await escrow.totalCredited(token)).to.equal(0n);

        const task = await escrow.getTask(ctx.taskHash);
        expect(task.status).to.equal(scenario.status);
        expect(task.ending).to.equal(scenario.ending);
        expect(task.amount).to.equal(AMOUNT);
        expect(task.windowEndsAt).to.equal(0n);
      });

      it("is final: every further transition is refused with the ended status", async function () {
        const ctx = await loadFixture(scenario.fixture);
        await scenario.end(ctx);
        const { escrow, taskHash, poster, worker, verifier, admin, stranger } = ctx;
        // Past every window, so only the status can refuse.
        await atTime(ctx.deadline + 30n * 86_400n);
        const isWorkerSet = (await escrow.getTask(taskHash)).worker === worker.address;
        const calls = [
          () => escrow.connect(poster).cancelTask(taskHash),
          () => escrow.connect(poster).assignWorker(taskHash, stranger.address),
          () => escrow.connect(verifier).marketplaceAssign(taskHash, stranger.address),
          () => escrow.connect(verifier).completeVerification(taskHash, true, 100),
          () => escrow.connect(poster).raiseDispute(taskHash),
          () => escrow.connect(worker).raiseDispute(taskHash),
          () => escrow.connect(admin).resolveDispute(taskHash, true),
          () => escrow.connect(poster).claimTimeout(taskHash),
        ];
        if (isWorkerSet) {
          calls.push(() => escrow.connect(worker).submitEvidence(taskHash, ethers.id("late")));
          calls.push(() => escrow.connect(worker).releaseUnjudgedWork(taskHash));
        }
        for (const call of calls) {
          await expect(call()).to.be.revertedWithCustomError(escrow, "InvalidStatus").withArgs(taskHash, scenario.status);
        }
        const task = await escrow.getTask(taskHash);
        expect(task.status).to.equal(scenario.status);
        expect(task.ending).to.equal(scenario.ending);
      });
    });
  }
});
