/**
 * The escrow writing the reputation registry at settlement: the right numbers for all eight endings, nothing for
 * refunds, only what the marketplace vouches for (3.0.0; issue 23's farming and griefing, shown working on 2.0.0), and
 * no registry (reverting, gas-burning, calling back, missing, not authorized, or starved of gas on purpose) ever
 * blocking or changing a settlement.
 */
import { expect } from "chai";
import hre from "hardhat";
import { loadFixture, takeSnapshot } from "@nomicfoundation/hardhat-network-helpers";
import type { ContractTransactionResponse } from "ethers";
import { AMOUNT, DURATION, FEE_BPS, Status } from "../fixtures/escrow";
import { ENDING_DRIVES, PASS_SCORE, type EndingDrive } from "../fixtures/endings";
import { misbehavingRegistryFixture, registriesFixture, registriesV2Fixture } from "../fixtures/registries";
import { MisbehavingReputation__factory } from "../../typechain-types";
import { balancesOf, sweepFees } from "./helpers";

const { ethers } = hre;
const FEE = (AMOUNT * FEE_BPS) / 10_000n;
const PAYOUT = AMOUNT - FEE;
const REPUTATION_GAS = 60_000n;
const WRITING_DRIVES = ENDING_DRIVES.filter((d) => d.reputation.completed > 0n || d.reputation.disputes > 0n);
const SILENT_DRIVES = ENDING_DRIVES.filter((d) => !WRITING_DRIVES.includes(d));

type Ctx = Awaited<ReturnType<typeof registriesFixture>>;
let counter = 0;

async function fund(ctx: Ctx): Promise<string> {
  const taskHash = ethers.id(`reputation task ${counter++}`);
  await ctx.escrow.connect(ctx.poster).createTask(taskHash, ctx.token, AMOUNT, DURATION, ethers.ZeroAddress);
  return taskHash;
}

/** Drives a new task to `drive`'s ending and checks the ending event and the exact balance moves. */
async function settle(ctx: Ctx, drive: EndingDrive): Promise<{ taskHash: string; tx: ContractTransactionResponse }> {
  const { escrow, usdc, poster, worker, treasury, escrowAddress } = ctx;
  const taskHash = await fund(ctx);
  const accounts = [poster, worker, treasury, escrowAddress];
  const before = await balancesOf(usdc, accounts);
  const tx = await drive.drive(ctx, taskHash);
  if (drive.payout) {
    await expect(tx).to.emit(escrow, drive.event).withArgs(taskHash, worker.address, PAYOUT, FEE, drive.ending);
  } else {
    await expect(tx).to.emit(escrow, drive.event).withArgs(taskHash, poster.address, AMOUNT, drive.ending);
  }
  // Since 4.0.0 the fee accrues in the escrow; swept, the moves read as when the payout sent it to the treasury.
  if (Number((await escrow.version()).split(".")[0]) >= 4) await sweepFees(escrow, treasury, ctx.token);
  const after = await balancesOf(usdc, accounts);
  const moved = after.map((b, i) => b - before[i]!);
  expect(moved).to.deep.equal(drive.payout ? [0n, PAYOUT, FEE, -AMOUNT] : [AMOUNT, 0n, 0n, -AMOUNT]);
  expect((await escrow.getTask(taskHash)).ending).to.equal(drive.ending);
  return { taskHash, tx };
}

describe("TaskEscrow reputation writes", function () {
  describe("wiring by the deploy code", function () {
    it("puts the escrow in the writer set, the registry in the escrow, and the minter role on the verifier", async function () {
      const { escrow, escrowAddress, reputation, reputationAddress, identity, verifier, actions } = await loadFixture(registriesFixture);
      expect(await escrow.reputationRegistry()).to.equal(reputationAddress);
      expect(await escrow.reputationGasLimit()).to.equal(REPUTATION_GAS);
      expect(await reputation.isWriter(escrowAddress)).to.equal(true);
      expect(await identity.hasRole(await identity.MINTER_ROLE(), verifier.address)).to.equal(true);
      expect(actions.join("\n")).to.contain("TaskReputation deployed");
    });

    it("sends nothing when everything is in place", async function () {
      const ctx = await loadFixture(registriesFixture);
      const { deployRegistries } = await import("../../deploy/registries");
      const again = await deployRegistries(hre, { deployment: ctx.deployment, save: false });
      expect(again.actions).to.deep.equal([]);
      expect(again.deployment.reputation?.proxy).to.equal(ctx.reputationAddress);
      expect(again.deployment.identity?.proxy).to.equal(ctx.identityAddress);
    });
  });

  describe("setReputationRegistry", function () {
    it("is the admin's: sets, replaces and unsets with ReputationRegistryUpdated", async function () {
      const { escrow, admin, reputationAddress, stranger } = await loadFixture(registriesFixture);
      await expect(escrow.connect(admin).setReputationRegistry(stranger.address))
        .to.emit(escrow, "ReputationRegistryUpdated")
        .withArgs(reputationAddress, stranger.address);
      await expect(escrow.connect(admin).setReputationRegistry(ethers.ZeroAddress))
        .to.emit(escrow, "ReputationRegistryUpdated")
        .withArgs(stranger.address, ethers.ZeroAddress);
      expect(await escrow.reputationRegistry()).to.equal(ethers.ZeroAddress);
    });

    it("refuses anyone else with NotAdmin(caller)", async function () {
      const { escrow, verifier, poster, stranger } = await loadFixture(registriesFixture);
      for (const caller of [verifier, poster, stranger]) {
        await expect(escrow.connect(caller).setReputationRegistry(stranger.address))
          .to.be.revertedWithCustomError(escrow, "NotAdmin")
          .withArgs(caller.address);
      }
    });
  });

  describe("the numbers each ending writes", function () {
    for (const drive of ENDING_DRIVES) {
      it(`${drive.name}: ${describeWrite(drive)}`, async function () {
        const ctx = await loadFixture(registriesFixture);
        const { reputation, escrowAddress, worker } = ctx;
        const { taskHash, tx } = await settle(ctx, drive);
        const { completed, score, disputes } = drive.reputation;
        if (completed > 0n) {
          await expect(tx)
            .to.emit(reputation, "CompletionRecorded")
            .withArgs(worker.address, escrowAddress, taskHash, score !== undefined, score ?? 0);
        } else {
          await expect(tx).not.to.emit(reputation, "CompletionRecorded");
        }
        if (disputes > 0n) {
          await expect(tx).to.emit(reputation, "DisputeRecorded").withArgs(worker.address, escrowAddress, taskHash);
        } else {
          await expect(tx).not.to.emit(reputation, "DisputeRecorded");
        }
        await expect(tx).not.to.emit(ctx.escrow, "ReputationWriteFailed");
        const summary = await reputation.summaryOf(worker.address);
        expect(summary.tasksCompleted).to.equal(completed);
        expect(summary.scoreSum).to.equal(BigInt(score ?? 0));
        expect(summary.scoreCount).to.equal(score === undefined ? 0n : 1n);
        expect(summary.disputes).to.equal(disputes);
        expect(await reputation.tasksCompleted(worker.address)).to.equal(completed);
        expect(await reputation.disputesOf(worker.address)).to.equal(disputes);
        // The poster's record never moves.
        expect((await reputation.summaryOf(ctx.poster.address)).tasksCompleted).to.equal(0n);
      });
    }

    it("adds up across all eight endings; a verifier agent's verdict adds nothing", async function () {
      const ctx = await loadFixture(registriesFixture);
      for (const drive of ENDING_DRIVES) await settle(ctx, drive);
      const { escrow, poster, worker, agentVerifier, reputation, token } = ctx;
      const judged = ethers.id("judged by an agent");
      await escrow.connect(poster).createTask(judged, token, AMOUNT, DURATION, agentVerifier.address);
      await escrow.connect(ctx.verifier).marketplaceAssign(judged, worker.address);
      await escrow.connect(worker).submitEvidence(judged, ethers.id("agent-judged result"));
      await expect(escrow.connect(agentVerifier).completeVerification(judged, true, 100)).not.to.emit(reputation, "CompletionRecorded");
      const summary = await reputation.summaryOf(worker.address);
      expect(summary.tasksCompleted).to.equal(3n);
      expect(summary.scoreSum).to.equal(BigInt(PASS_SCORE));
      expect(summary.scoreCount).to.equal(1n);
      expect(summary.disputes).to.equal(1n);
      expect(summary.averageScore).to.equal(BigInt(PASS_SCORE * 100));
      expect(await reputation.scoresOf(worker.address)).to.deep.equal([BigInt(PASS_SCORE), 1n]);
    });

    it("a failed verdict is no ending and writes nothing", async function () {
      const ctx = await loadFixture(registriesFixture);
      const { escrow, reputation, verifier, worker } = ctx;
      const taskHash = await fund(ctx);
      await escrow.connect(verifier).marketplaceAssign(taskHash, worker.address);
      await escrow.connect(worker).submitEvidence(taskHash, ethers.id("r"));
      await expect(escrow.connect(verifier).completeVerification(taskHash, false, 12)).not.to.emit(reputation, "CompletionRecorded");
      expect((await reputation.summaryOf(worker.address)).scoreCount).to.equal(0n);
    });

    it("writes nothing when no registry is set", async function () {
      const ctx = await loadFixture(registriesFixture);
      await ctx.escrow.connect(ctx.admin).setReputationRegistry(ethers.ZeroAddress);
      for (const drive of WRITING_DRIVES) {
        const { tx } = await settle(ctx, drive);
        await expect(tx).not.to.emit(ctx.reputation, "CompletionRecorded");
        await expect(tx).not.to.emit(ctx.reputation, "DisputeRecorded");
        await expect(tx).not.to.emit(ctx.escrow, "ReputationWriteFailed");
      }
      expect((await ctx.reputation.summaryOf(ctx.worker.address)).tasksCompleted).to.equal(0n);
    });
  });

  describe("only what the marketplace vouches for (issue 23: farming and griefing on 2.0.0, closed by 3.0.0)", function () {
    const MIN_REWARD = 1_000_000n; // core/limits.ts REPUTATION_MIN_CREDITED_REWARD_RAW
    const versions = [
      { version: "2.0.0", fixture: registriesV2Fixture, abused: true },
      { version: "4.0.0", fixture: registriesFixture, abused: false },
    ] as const;

    /** A task funded by the poster, judged by `judge` (zero: the marketplace verifier), assigned by `assignedBy`. */
    async function delivered(ctx: Ctx, o: { amount: bigint; judge?: string; workerAddress: string; byPoster: boolean }) {
      const { escrow, poster, verifier } = ctx;
      const taskHash = ethers.id(`vouched task ${counter++}`);
      await escrow.connect(poster).createTask(taskHash, ctx.token, o.amount, DURATION, o.judge ?? ethers.ZeroAddress);
      if (o.byPoster) await escrow.connect(poster).assignWorker(taskHash, o.workerAddress);
      else await escrow.connect(verifier).marketplaceAssign(taskHash, o.workerAddress);
      const signer = await ethers.getSigner(o.workerAddress);
      await escrow.connect(signer).submitEvidence(taskHash, ethers.id(taskHash));
      return taskHash;
    }

    for (const { version, fixture, abused } of versions) {
      it(`${version}: ten self-assigned, self-judged 1-raw-unit tasks ${abused ? "farm a perfect record" : "write nothing"}`, async function () {
        const ctx = await loadFixture(fixture);
        const { escrow, reputation, agentVerifier, stranger: farmer } = ctx;
        expect(await escrow.version()).to.equal(version);
        for (let i = 0; i < 10; i += 1) {
          const taskHash = await delivered(ctx, { amount: 1n, judge: agentVerifier.address, workerAddress: farmer.address, byPoster: true });
          const verdict = escrow.connect(agentVerifier).completeVerification(taskHash, true, 100);
          if (abused) await expect(verdict).to.emit(reputation, "CompletionRecorded");
          else await expect(verdict).not.to.emit(reputation, "CompletionRecorded");
        }
        const summary = await reputation.summaryOf(farmer.address);
        expect([summary.tasksCompleted, summary.scoreSum, summary.averageScore]).to.deep.equal(abused ? [10n, 1000n, 10000n] : [0n, 0n, 0n]);
      });

      it(`${version}: a poster's verifier agent passing honest work with score 0 ${abused ? "halves" : "leaves"} the worker's average`, async function () {
        const ctx = await loadFixture(fixture);
        const { escrow, reputation, verifier, agentVerifier, worker } = ctx;
        const honest = await delivered(ctx, { amount: AMOUNT, workerAddress: worker.address, byPoster: false });
        await escrow.connect(verifier).completeVerification(honest, true, 100);
        expect((await reputation.summaryOf(worker.address)).averageScore).to.equal(10000n);
        const griefed = await delivered(ctx, { amount: AMOUNT, judge: agentVerifier.address, workerAddress: worker.address, byPoster: false });
        await escrow.connect(agentVerifier).completeVerification(griefed, true, 0);
        expect((await reputation.summaryOf(worker.address)).averageScore).to.equal(abused ? 5000n : 10000n);
      });

      it(`${version}: a dispute over a wallet the poster assigned itself ${abused ? "is charged to that wallet" : "is charged to nobody"}`, async function () {
        const ctx = await loadFixture(fixture);
        const { escrow, reputation, admin, poster, worker } = ctx;
        const taskHash = ethers.id(`assigned by the poster ${counter++}`);
        await escrow.connect(poster).createTask(taskHash, ctx.token, AMOUNT, DURATION, ethers.ZeroAddress);
        await escrow.connect(poster).assignWorker(taskHash, worker.address);
        await escrow.connect(poster).raiseDispute(taskHash);
        const ruling = escrow.connect(admin).resolveDispute(taskHash, false);
        if (abused) await expect(ruling).to.emit(reputation, "DisputeRecorded").withArgs(worker.address, ctx.escrowAddress, taskHash);
        else await expect(ruling).not.to.emit(reputation, "DisputeRecorded");
        expect(await reputation.disputesOf(worker.address)).to.equal(abused ? 1n : 0n);
      });
    }

    it("3.0.0 writes a verdict only when the marketplace verifier both assigned and judged, for at least 1 USDC", async function () {
      const ctx = await loadFixture(registriesFixture);
      const { escrow, reputation, verifier, agentVerifier, worker, escrowAddress } = ctx;
      const cases = [
        { amount: MIN_REWARD, judge: agentVerifier, byPoster: false, written: false },
        { amount: MIN_REWARD, judge: verifier, byPoster: true, written: false },
        { amount: MIN_REWARD - 1n, judge: verifier, byPoster: false, written: false },
        { amount: MIN_REWARD, judge: verifier, byPoster: false, written: true },
      ];
      for (const c of cases) {
        const judge = c.judge === agentVerifier ? agentVerifier.address : undefined;
        const taskHash = await delivered(ctx, { amount: c.amount, judge, workerAddress: worker.address, byPoster: c.byPoster });
        const verdict = escrow.connect(c.judge).completeVerification(taskHash, true, 90);
        await expect(verdict).to.emit(escrow, "TaskCompleted");
        if (c.written) await expect(verdict).to.emit(reputation, "CompletionRecorded").withArgs(worker.address, escrowAddress, taskHash, true, 90);
        else await expect(verdict).not.to.emit(reputation, "CompletionRecorded");
      }
      expect(await reputation.tasksCompleted(worker.address)).to.equal(1n);
    });

    it("3.0.0 records rulings and released work for marketplace-assigned tasks, a verifier agent or not", async function () {
      const ctx = await loadFixture(registriesFixture);
      const { escrow, reputation, admin, poster, agentVerifier, worker } = ctx;
      const won = await delivered(ctx, { amount: AMOUNT, judge: agentVerifier.address, workerAddress: worker.address, byPoster: false });
      await escrow.connect(poster).raiseDispute(won);
      await expect(escrow.connect(admin).resolveDispute(won, true)).to.emit(reputation, "CompletionRecorded");
      const lost = await delivered(ctx, { amount: AMOUNT, judge: agentVerifier.address, workerAddress: worker.address, byPoster: false });
      await escrow.connect(poster).raiseDispute(lost);
      await expect(escrow.connect(admin).resolveDispute(lost, false)).to.emit(reputation, "DisputeRecorded");
      const summary = await reputation.summaryOf(worker.address);
      expect([summary.tasksCompleted, summary.scoreCount, summary.disputes]).to.deep.equal([1n, 0n, 1n]);
    });
  });

  describe("a failing registry never blocks or changes a settlement", function () {
    const modes = [
      { mode: 0, name: "a reverting registry" },
      { mode: 1, name: "a gas-burning registry" },
      { mode: 2, name: "a registry reverting with 100,000 bytes" },
      { mode: 3, name: "a registry calling back into the escrow" },
    ] as const;

    for (const { mode, name } of modes) {
      for (const drive of WRITING_DRIVES) {
        it(`${name}: ${drive.name} settles unchanged and reports ReputationWriteFailed`, async function () {
          const ctx = await loadFixture(misbehavingRegistryFixture);
          const { escrow, escrowAddress, misbehaving, misbehavingAddress, worker } = ctx;
          if (mode === 3) {
            // The callback tries to take the payout again mid-settlement; the reentrancy guard refuses it.
            await misbehaving.arm(escrowAddress, escrow.interface.encodeFunctionData("withdrawCredit", [ctx.token]));
          } else {
            await misbehaving.setMode(mode);
          }
          const { taskHash, tx } = await settle(ctx, drive);
          const reason =
            mode === 0
              ? misbehaving.interface.encodeErrorResult("Refused", [worker.address, taskHash])
              : mode === 1
                ? "0x"
                : mode === 2
                  ? (data: string) => ethers.dataLength(data) === 256 // cut from 100,000 bytes
                  : escrow.interface.encodeErrorResult("ReentrancyGuardReentrantCall", []);
          await expect(tx).to.emit(escrow, "ReputationWriteFailed").withArgs(taskHash, misbehavingAddress, reason);
          if (mode === 1) {
            // Bounded: the registry burnt its whole budget and not a unit more.
            const receipt = await tx.wait();
            expect(receipt!.gasUsed).to.be.lessThan(REPUTATION_GAS + 200_000n);
          }
        });
      }
    }

    it("refund endings do not call the registry at all", async function () {
      const ctx = await loadFixture(misbehavingRegistryFixture);
      await ctx.misbehaving.setMode(0);
      for (const drive of SILENT_DRIVES) {
        const { tx } = await settle(ctx, drive);
        await expect(tx).not.to.emit(ctx.escrow, "ReputationWriteFailed");
      }
    });

    it("an address without code: the settlement goes through and the failure is reported", async function () {
      const ctx = await loadFixture(registriesFixture);
      const { escrow, admin, stranger } = ctx;
      await escrow.connect(admin).setReputationRegistry(stranger.address);
      for (const drive of WRITING_DRIVES) {
        const { taskHash, tx } = await settle(ctx, drive);
        await expect(tx).to.emit(escrow, "ReputationWriteFailed").withArgs(taskHash, stranger.address, "0x");
      }
    });

    it("a registry that does not count the escrow as a writer refuses; the settlement goes through", async function () {
      const ctx = await loadFixture(registriesFixture);
      const { escrow, escrowAddress, reputation, reputationAddress, admin } = ctx;
      const writerRole = await reputation.WRITER_ROLE();
      await reputation.connect(admin).revokeRole(writerRole, escrowAddress);
      const { taskHash, tx } = await settle(ctx, ENDING_DRIVES[0]!);
      await expect(tx)
        .to.emit(escrow, "ReputationWriteFailed")
        .withArgs(
          taskHash,
          reputationAddress,
          reputation.interface.encodeErrorResult("AccessControlUnauthorizedAccount", [escrowAddress, writerRole]),
        );
      expect((await reputation.summaryOf(ctx.worker.address)).tasksCompleted).to.equal(0n);
    });
  });

  describe("no caller can starve the write and still settle (63/64 rule)", function () {
    it("at every gas limit a passed verification either writes the reputation or reverts", async function () {
      const ctx = await loadFixture(registriesFixture);
      const { escrow, reputation, verifier, worker } = ctx;
      const taskHash = await fund(ctx);
      await escrow.connect(verifier).marketplaceAssign(taskHash, worker.address);
      await escrow.connect(worker).submitEvidence(taskHash, ethers.id("r"));
      const estimate = await escrow.connect(verifier).completeVerification.estimateGas(taskHash, true, 90);
      const outcomes = { written: 0, refused: 0, outOfGas: 0 };
      const snapshot = await takeSnapshot();
      // From far below what the write needs to above the estimate, in steps finer than the registry's budget.
      for (let gasLimit = estimate - 90_000n; gasLimit <= estimate + 2_000n; gasLimit += 1_500n) {
        await snapshot.restore();
        let receiptStatus: number | null;
        try {
          const tx = await escrow.connect(verifier).completeVerification(taskHash, true, 90, { gasLimit });
          receiptStatus = (await tx.wait())!.status;
        } catch (error) {
          // Refused by the gas check, or out of gas later: either way the whole settlement reverted.
          if (String((error as Error).message).includes("InsufficientGasForReputation")) outcomes.refused++;
          else outcomes.outOfGas++;
          expect((await escrow.getTask(taskHash)).status).to.equal(Status.Submitted);
          expect((await reputation.summaryOf(worker.address)).tasksCompleted).to.equal(0n);
          continue;
        }
        expect(receiptStatus).to.equal(1);
        // It settled: then the registry had its whole budget and the write is there.
        expect((await reputation.summaryOf(worker.address)).tasksCompleted, `gas limit ${gasLimit}`).to.equal(1n);
        outcomes.written++;
      }
      await snapshot.restore();
      expect(outcomes.written).to.be.greaterThan(0);
      expect(outcomes.refused).to.be.greaterThan(0);
    });

    it("refuses with InsufficientGasForReputation(available, required) below the budget", async function () {
      const ctx = await loadFixture(misbehavingRegistryFixture);
      const { escrow, misbehaving, verifier, worker } = ctx;
      await misbehaving.setMode(1); // burns all it gets: the settlement needs the whole budget to spare
      const taskHash = await fund(ctx);
      await escrow.connect(verifier).marketplaceAssign(taskHash, worker.address);
      await escrow.connect(worker).submitEvidence(taskHash, ethers.id("r"));
      const estimate = await escrow.connect(verifier).completeVerification.estimateGas(taskHash, true, 90);
      const required = REPUTATION_GAS + REPUTATION_GAS / 63n + 1_000n;
      const short = estimate - REPUTATION_GAS - 20_000n;
      await expect(escrow.connect(verifier).completeVerification(taskHash, true, 90, { gasLimit: short })).to.be.revertedWithCustomError(
        escrow,
        "InsufficientGasForReputation",
      );
      const error = await escrow
        .connect(verifier)
        .completeVerification.staticCall(taskHash, true, 90, { gasLimit: short })
        .catch((e: { data?: string }) => e.data);
      const decoded = escrow.interface.parseError(error as string);
      expect(decoded?.name).to.equal("InsufficientGasForReputation");
      expect(decoded?.args[1]).to.equal(required);
      expect(decoded?.args[0]).to.be.lessThan(required);
      await expect(escrow.connect(verifier).completeVerification(taskHash, true, 90, { gasLimit: estimate }))
        .to.emit(escrow, "ReputationWriteFailed")
        .and.to.emit(escrow, "TaskCompleted");
    });
  });

  it("a registry swapped for a misbehaving one mid-life leaves the recorded numbers alone", async function () {
    const ctx = await loadFixture(registriesFixture);
    const { escrow, admin, reputation, worker } = ctx;
    await settle(ctx, ENDING_DRIVES[0]!);
    const misbehaving = await new MisbehavingReputation__factory(admin).deploy();
    await escrow.connect(admin).setReputationRegistry(await misbehaving.getAddress());
    await settle(ctx, ENDING_DRIVES[0]!);
    expect((await reputation.summaryOf(worker.address)).tasksCompleted).to.equal(1n);
  });
});

function describeWrite(drive: EndingDrive): string {
  const { completed, score, disputes } = drive.reputation;
  if (completed > 0n) return score === undefined ? "records a completion without a score" : `records a completion scored ${score}`;
  if (disputes > 0n) return "records a dispute against the worker";
  return "writes nothing";
}
