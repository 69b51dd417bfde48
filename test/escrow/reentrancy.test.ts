import { expect } from "chai";
import hre from "hardhat";
import { loadFixture } from "@nomicfoundation/hardhat-network-helpers";
import type { Interface } from "ethers";
import { AMOUNT, DURATION, POSTER_FUNDS, Status, reentrantTokenFixture } from "../fixtures/escrow";
import { balancesOf, sweepFees } from "./helpers";

const { ethers } = hre;
const ZERO = ethers.ZeroAddress;
const FEE = AMOUNT / 10n;
const hashOf = (name: string) => ethers.id(`reentrancy: ${name}`);

type Ctx = Awaited<ReturnType<typeof reentrantTokenFixture>>;

/** Arms the token to call `fn(...args)` on the escrow from inside its next transfers. */
async function armWith(ctx: Ctx, fn: string, args: unknown[]) {
  await ctx.reentrant.arm(ctx.escrowAddress, (ctx.escrow.interface as Interface).encodeFunctionData(fn, args));
}

/** The call back from inside the transfer was refused by the reentrancy guard, not by any later check. */
async function expectGuardRefusedCallBack(ctx: Ctx) {
  expect(await ctx.reentrant.callBackSucceeded()).to.equal(false);
  expect(await ctx.reentrant.callBackRevert()).to.equal(ctx.escrow.interface.getError("ReentrancyGuardReentrantCall")!.selector);
}

/** A task in the reentrant token, assigned to the worker and delivered, with the hook still disarmed. */
async function submittedInReentrantToken(ctx: Ctx) {
  const { escrow, poster, verifier, worker, reentrantToken } = ctx;
  const taskHash = hashOf("delivered");
  await escrow.connect(poster).createTask(taskHash, reentrantToken, AMOUNT, DURATION, ZERO);
  await escrow.connect(verifier).marketplaceAssign(taskHash, worker.address);
  await escrow.connect(worker).submitEvidence(taskHash, ethers.id("result"));
  return taskHash;
}

describe("TaskEscrow reentrancy", function () {
  it("createTask books the task before pulling the tokens, and a call back from the pull is refused", async function () {
    const ctx = await loadFixture(reentrantTokenFixture);
    const { escrow, escrowAddress, poster, reentrant, reentrantToken } = ctx;
    await armWith(ctx, "createTask", [hashOf("nested"), reentrantToken, AMOUNT, DURATION, ZERO]);
    await escrow.connect(poster).createTask(hashOf("outer"), reentrantToken, AMOUNT, DURATION, ZERO);
    await expectGuardRefusedCallBack(ctx);
    // The books already counted the task while the token was moving.
    expect(await reentrant.escrowedSeen()).to.equal(AMOUNT);
    expect(await escrow.escrowed(reentrantToken)).to.equal(AMOUNT);
    expect((await escrow.getTask(hashOf("nested"))).poster).to.equal(ZERO);
    expect(await balancesOf(reentrant, [poster, escrowAddress])).to.deep.equal([POSTER_FUNDS - AMOUNT, AMOUNT]);
  });

  it("createTasks books the whole batch before its single pull", async function () {
    const ctx = await loadFixture(reentrantTokenFixture);
    const { escrow, poster, reentrant, reentrantToken } = ctx;
    await armWith(ctx, "cancelTask", [hashOf("batch 0")]);
    const batch = [0, 1, 2].map((i) => ({
      taskHash: hashOf(`batch ${i}`),
      token: reentrantToken,
      amount: AMOUNT,
      duration: DURATION,
      verifier: ZERO,
    }));
    await escrow.connect(poster).createTasks(batch);
    await expectGuardRefusedCallBack(ctx);
    expect(await reentrant.escrowedSeen()).to.equal(3n * AMOUNT);
    expect((await escrow.getTask(hashOf("batch 0"))).status).to.equal(Status.Funded);
  });

  it("a payout closes the task before paying, and a call back from the payout is refused", async function () {
    const ctx = await loadFixture(reentrantTokenFixture);
    const { escrow, escrowAddress, verifier, worker, treasury, reentrant } = ctx;
    const taskHash = await submittedInReentrantToken(ctx);
    await armWith(ctx, "completeVerification", [taskHash, true, 100]);
    await expect(escrow.connect(verifier).completeVerification(taskHash, true, 100)).not.to.emit(escrow, "Credited");
    await expectGuardRefusedCallBack(ctx);
    expect(await reentrant.escrowedSeen()).to.equal(0n);
    expect(await balancesOf(reentrant, [worker, treasury, escrowAddress])).to.deep.equal([AMOUNT - FEE, 0n, FEE]);
    expect(await sweepFees(escrow, treasury, await reentrant.getAddress())).to.equal(FEE);
    expect(await balancesOf(reentrant, [worker, treasury, escrowAddress])).to.deep.equal([AMOUNT - FEE, FEE, 0n]);
    expect((await escrow.getTask(taskHash)).status).to.equal(Status.Verified);
  });

  it("a refund closes the task before paying, and a call back from the refund is refused", async function () {
    const ctx = await loadFixture(reentrantTokenFixture);
    const { escrow, escrowAddress, poster, reentrant, reentrantToken } = ctx;
    const taskHash = hashOf("refunded");
    await escrow.connect(poster).createTask(taskHash, reentrantToken, AMOUNT, DURATION, ZERO);
    await armWith(ctx, "cancelTask", [taskHash]);
    await expect(escrow.connect(poster).cancelTask(taskHash)).not.to.emit(escrow, "Credited");
    await expectGuardRefusedCallBack(ctx);
    expect(await reentrant.escrowedSeen()).to.equal(0n);
    expect(await balancesOf(reentrant, [poster, escrowAddress])).to.deep.equal([POSTER_FUNDS, 0n]);
  });
});
