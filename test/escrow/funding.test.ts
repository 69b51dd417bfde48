import { expect } from "chai";
import hre from "hardhat";
import { loadFixture, time } from "@nomicfoundation/hardhat-network-helpers";
import {
  AMOUNT,
  DAY,
  DURATION,
  Ending,
  POSTER_FUNDS,
  Status,
  deployEscrowFixture,
  extraTokensFixture,
  fundedTaskFixture,
  unapprovedPosterFixture,
} from "../fixtures/escrow";
import { atTime, latest, signPermit } from "./helpers";

const { ethers } = hre;
const ZERO = ethers.ZeroAddress;
const MIN_DURATION = 3_600n;
const MAX_DURATION = 7_776_000n;
const MAX_UINT96 = 2n ** 96n - 1n;
const hashOf = (name: string) => ethers.id(`funding: ${name}`);

describe("TaskEscrow funding", function () {
  describe("createTask", function () {
    it("pulls the amount, records a Funded task and emits TaskCreated with the deadline", async function () {
      const { escrow, escrowAddress, usdc, token, poster } = await loadFixture(deployEscrowFixture);
      const taskHash = hashOf("plain");
      const tx = escrow.connect(poster).createTask(taskHash, token, AMOUNT, DURATION, ZERO);
      await expect(tx).to.emit(usdc, "Transfer").withArgs(poster.address, escrowAddress, AMOUNT);
      const createdAt = await latest();
      await expect(tx)
        .to.emit(escrow, "TaskCreated")
        .withArgs(taskHash, poster.address, token, AMOUNT, createdAt + DURATION, ZERO);

      const task = await escrow.getTask(taskHash);
      expect(task.poster).to.equal(poster.address);
      expect(task.worker).to.equal(ZERO);
      expect(task.verifier).to.equal(ZERO);
      expect(task.token).to.equal(token);
      expect(task.amount).to.equal(AMOUNT);
      expect(task.deadline).to.equal(createdAt + DURATION);
      expect(task.windowEndsAt).to.equal(0n);
      expect(task.status).to.equal(Status.Funded);
      expect(task.rounds).to.equal(0n);
      expect(task.ending).to.equal(Ending.None);
      expect(await usdc.balanceOf(poster.address)).to.equal(POSTER_FUNDS - AMOUNT);
      expect(await usdc.balanceOf(escrowAddress)).to.equal(AMOUNT);
      expect(await escrow.escrowed(token)).to.equal(AMOUNT);
    });

    it("records a per-task verifier agent", async function () {
      const { escrow, token, poster, agentVerifier } = await loadFixture(deployEscrowFixture);
      const taskHash = hashOf("agent");
      const at = (await latest()) + 1n;
      await atTime(at);
      await expect(escrow.connect(poster).createTask(taskHash, token, AMOUNT, DURATION, agentVerifier.address))
        .to.emit(escrow, "TaskCreated")
        .withArgs(taskHash, poster.address, token, AMOUNT, at + DURATION, agentVerifier.address);
      expect((await escrow.getTask(taskHash)).verifier).to.equal(agentVerifier.address);
    });

    it("returns an empty task for an unknown hash", async function () {
      const { escrow } = await loadFixture(deployEscrowFixture);
      const task = await escrow.getTask(hashOf("unknown"));
      expect(task.poster).to.equal(ZERO);
      expect(task.amount).to.equal(0n);
      expect(task.deadline).to.equal(0n);
    });

    it("accepts the duration bounds 3,600 and 7,776,000 seconds and refuses one second outside", async function () {
      const { escrow, token, poster } = await loadFixture(deployEscrowFixture);
      const asPoster = escrow.connect(poster);
      await expect(asPoster.createTask(hashOf("short"), token, AMOUNT, MIN_DURATION - 1n, ZERO))
        .to.be.revertedWithCustomError(escrow, "InvalidDuration")
        .withArgs(MIN_DURATION - 1n);
      await expect(asPoster.createTask(hashOf("long"), token, AMOUNT, MAX_DURATION + 1n, ZERO))
        .to.be.revertedWithCustomError(escrow, "InvalidDuration")
        .withArgs(MAX_DURATION + 1n);
      await asPoster.createTask(hashOf("short"), token, AMOUNT, MIN_DURATION, ZERO);
      expect((await escrow.getTask(hashOf("short"))).deadline).to.equal((await latest()) + MIN_DURATION);
      await asPoster.createTask(hashOf("long"), token, AMOUNT, MAX_DURATION, ZERO);
      expect((await escrow.getTask(hashOf("long"))).deadline).to.equal((await latest()) + MAX_DURATION);
    });

    it("refuses a zero task hash", async function () {
      const { escrow, token, poster } = await loadFixture(deployEscrowFixture);
      await expect(escrow.connect(poster).createTask(ethers.ZeroHash, token, AMOUNT, DURATION, ZERO)).to.be.revertedWithCustomError(
        escrow,
        "ZeroTaskHash",
      );
    });

    it("refuses a zero amount", async function () {
      const { escrow, token, poster } = await loadFixture(deployEscrowFixture);
      await expect(escrow.connect(poster).createTask(hashOf("zero"), token, 0n, DURATION, ZERO)).to.be.revertedWithCustomError(escrow, "ZeroAmount");
    });

    it("refuses the poster as the task's verifier agent", async function () {
      const { escrow, token, poster } = await loadFixture(deployEscrowFixture);
      await expect(escrow.connect(poster).createTask(hashOf("self"), token, AMOUNT, DURATION, poster.address))
        .to.be.revertedWithCustomError(escrow, "VerifierIsPoster")
        .withArgs(poster.address);
    });

    it("refuses a hash in use, by the same or another poster", async function () {
      const { escrow, usdc, token, taskHash, poster, stranger, escrowAddress } = await loadFixture(fundedTaskFixture);
      await expect(escrow.connect(poster).createTask(taskHash, token, AMOUNT, DURATION, ZERO))
        .to.be.revertedWithCustomError(escrow, "TaskHashUsed")
        .withArgs(taskHash);
      await usdc.mint(stranger.address, AMOUNT);
      await usdc.connect(stranger).approve(escrowAddress, AMOUNT);
      await expect(escrow.connect(stranger).createTask(taskHash, token, AMOUNT, DURATION, ZERO))
        .to.be.revertedWithCustomError(escrow, "TaskHashUsed")
        .withArgs(taskHash);
    });

    it("never reuses a hash, even after the task was cancelled and refunded", async function () {
      const { escrow, token, taskHash, poster } = await loadFixture(fundedTaskFixture);
      await escrow.connect(poster).cancelTask(taskHash);
      await expect(escrow.connect(poster).createTask(taskHash, token, AMOUNT, DURATION, ZERO))
        .to.be.revertedWithCustomError(escrow, "TaskHashUsed")
        .withArgs(taskHash);
    });

    it("never reuses a hash after a timeout refund", async function () {
      const { escrow, token, taskHash, poster, deadline } = await loadFixture(fundedTaskFixture);
      await time.increaseTo(deadline);
      await escrow.connect(poster).claimTimeout(taskHash);
      expect((await escrow.getTask(taskHash)).status).to.equal(Status.Refunded);
      await expect(escrow.connect(poster).createTask(taskHash, token, AMOUNT, DURATION, ZERO))
        .to.be.revertedWithCustomError(escrow, "TaskHashUsed")
        .withArgs(taskHash);
    });

    it("refuses address(0) (native currency) as the token", async function () {
      const { escrow, poster } = await loadFixture(deployEscrowFixture);
      await expect(escrow.connect(poster).createTask(hashOf("native"), ZERO, AMOUNT, DURATION, ZERO))
        .to.be.revertedWithCustomError(escrow, "TokenNotAllowed")
        .withArgs(ZERO);
    });

    it("refuses a token the admin never allowed, and one the admin disallowed", async function () {
      const { escrow, admin, token, poster, unlistedToken } = await loadFixture(extraTokensFixture);
      await expect(escrow.connect(poster).createTask(hashOf("unlisted"), unlistedToken, AMOUNT, DURATION, ZERO))
        .to.be.revertedWithCustomError(escrow, "TokenNotAllowed")
        .withArgs(unlistedToken);
      await escrow.connect(admin).setAllowedToken(token, false);
      await expect(escrow.connect(poster).createTask(hashOf("disallowed"), token, AMOUNT, DURATION, ZERO))
        .to.be.revertedWithCustomError(escrow, "TokenNotAllowed")
        .withArgs(token);
    });

    it("accepts 2^96-1 and refuses 2^96 (AmountTooLarge)", async function () {
      const { escrow, usdc, token, poster } = await loadFixture(deployEscrowFixture);
      await expect(escrow.connect(poster).createTask(hashOf("too much"), token, MAX_UINT96 + 1n, DURATION, ZERO))
        .to.be.revertedWithCustomError(escrow, "AmountTooLarge")
        .withArgs(MAX_UINT96 + 1n, MAX_UINT96);
      await usdc.mint(poster.address, MAX_UINT96);
      await escrow.connect(poster).createTask(hashOf("max"), token, MAX_UINT96, DURATION, ZERO);
      expect((await escrow.getTask(hashOf("max"))).amount).to.equal(MAX_UINT96);
      expect(await escrow.escrowed(token)).to.equal(MAX_UINT96);
    });

    it("refuses a fee-on-transfer token that delivers less than the amount", async function () {
      const { escrow, poster, feeTokenAddress } = await loadFixture(extraTokensFixture);
      await expect(escrow.connect(poster).createTask(hashOf("fot"), feeTokenAddress, AMOUNT, DURATION, ZERO))
        .to.be.revertedWithCustomError(escrow, "TokenDeliveredLess")
        .withArgs(feeTokenAddress, AMOUNT, AMOUNT - AMOUNT / 100n);
    });

    it("fails with the token's error when the allowance is missing", async function () {
      const { escrow, escrowAddress, usdc, token, permitPoster } = await loadFixture(unapprovedPosterFixture);
      await expect(escrow.connect(permitPoster).createTask(hashOf("no allowance"), token, AMOUNT, DURATION, ZERO))
        .to.be.revertedWithCustomError(usdc, "ERC20InsufficientAllowance")
        .withArgs(escrowAddress, 0n, AMOUNT);
    });
  });

  describe("createTasks", function () {
    const batchOf = (token: string, count: number, amount = AMOUNT) =>
      Array.from({ length: count }, (_, i) => ({
        taskHash: hashOf(`batch ${i}`),
        token,
        amount: amount + BigInt(i),
        duration: DURATION + BigInt(i * DAY),
        verifier: ZERO,
      }));

    it("funds every task with a single transfer of the total", async function () {
      const { escrow, escrowAddress, usdc, token, poster, agentVerifier } = await loadFixture(deployEscrowFixture);
      const batch = batchOf(token, 3);
      batch[2]!.verifier = agentVerifier.address;
      const total = AMOUNT * 3n + 3n;
      const tx = await escrow.connect(poster).createTasks(batch);
      const receipt = await tx.wait();
      const createdAt = await latest();
      const transfers = receipt!.logs.filter((log) => log.address === token);
      expect(transfers).to.have.length(1);
      await expect(tx).to.emit(usdc, "Transfer").withArgs(poster.address, escrowAddress, total);
      for (const p of batch) {
        await expect(tx)
          .to.emit(escrow, "TaskCreated")
          .withArgs(p.taskHash, poster.address, token, p.amount, createdAt + p.duration, p.verifier);
        const task = await escrow.getTask(p.taskHash);
        expect(task.amount).to.equal(p.amount);
        expect(task.deadline).to.equal(createdAt + p.duration);
        expect(task.verifier).to.equal(p.verifier);
        expect(task.status).to.equal(Status.Funded);
      }
      expect(await escrow.escrowed(token)).to.equal(total);
      expect(await usdc.balanceOf(escrowAddress)).to.equal(total);
      expect(await usdc.balanceOf(poster.address)).to.equal(POSTER_FUNDS - total);
    });

    it("accepts maxBatch() = 20 tasks and refuses 0 and 21 with InvalidBatchSize", async function () {
      const { escrow, token, poster } = await loadFixture(deployEscrowFixture);
      expect(await escrow.maxBatch()).to.equal(20n);
      await expect(escrow.connect(poster).createTasks([])).to.be.revertedWithCustomError(escrow, "InvalidBatchSize").withArgs(0, 20);
      await expect(escrow.connect(poster).createTasks(batchOf(token, 21, 1n)))
        .to.be.revertedWithCustomError(escrow, "InvalidBatchSize")
        .withArgs(21, 20);
      await escrow.connect(poster).createTasks(batchOf(token, 20, 1n));
      expect(await escrow.escrowed(token)).to.equal(20n + 190n);
    });

    it("refuses a batch that mixes tokens, naming the first mismatch", async function () {
      const { escrow, token, poster, blocklistToken } = await loadFixture(extraTokensFixture);
      const batch = batchOf(token, 3);
      batch[1]!.token = blocklistToken;
      await expect(escrow.connect(poster).createTasks(batch))
        .to.be.revertedWithCustomError(escrow, "BatchTokenMismatch")
        .withArgs(1, blocklistToken, token);
    });

    it("refuses a batch whose token is not allowed", async function () {
      const { escrow, poster, unlistedToken } = await loadFixture(extraTokensFixture);
      await expect(escrow.connect(poster).createTasks(batchOf(unlistedToken, 2)))
        .to.be.revertedWithCustomError(escrow, "TokenNotAllowed")
        .withArgs(unlistedToken);
      await expect(escrow.connect(poster).createTasks(batchOf(ZERO, 1)))
        .to.be.revertedWithCustomError(escrow, "TokenNotAllowed")
        .withArgs(ZERO);
    });

    it("refuses a hash twice in one batch and a hash already used, funding nothing", async function () {
      const { escrow, token, poster, taskHash } = await loadFixture(fundedTaskFixture);
      const twice = batchOf(token, 3);
      twice[2]!.taskHash = twice[0]!.taskHash;
      await expect(escrow.connect(poster).createTasks(twice)).to.be.revertedWithCustomError(escrow, "TaskHashUsed").withArgs(twice[0]!.taskHash);
      const reused = batchOf(token, 2);
      reused[1]!.taskHash = taskHash;
      await expect(escrow.connect(poster).createTasks(reused)).to.be.revertedWithCustomError(escrow, "TaskHashUsed").withArgs(taskHash);
      expect((await escrow.getTask(reused[0]!.taskHash)).poster).to.equal(ZERO);
      expect(await escrow.escrowed(token)).to.equal(AMOUNT);
    });

    it("checks every entry like createTask", async function () {
      const { escrow, token, poster } = await loadFixture(deployEscrowFixture);
      const asPoster = escrow.connect(poster);
      const withEntry = (entry: Partial<ReturnType<typeof batchOf>[number]>) => {
        const batch = batchOf(token, 2);
        batch[1] = { ...batch[1]!, ...entry };
        return batch;
      };
      await expect(asPoster.createTasks(withEntry({ taskHash: ethers.ZeroHash }))).to.be.revertedWithCustomError(escrow, "ZeroTaskHash");
      await expect(asPoster.createTasks(withEntry({ amount: 0n }))).to.be.revertedWithCustomError(escrow, "ZeroAmount");
      await expect(asPoster.createTasks(withEntry({ duration: MAX_DURATION + 1n })))
        .to.be.revertedWithCustomError(escrow, "InvalidDuration")
        .withArgs(MAX_DURATION + 1n);
      await expect(asPoster.createTasks(withEntry({ verifier: poster.address })))
        .to.be.revertedWithCustomError(escrow, "VerifierIsPoster")
        .withArgs(poster.address);
      await expect(asPoster.createTasks(withEntry({ amount: MAX_UINT96 + 1n })))
        .to.be.revertedWithCustomError(escrow, "AmountTooLarge")
        .withArgs(MAX_UINT96 + 1n, MAX_UINT96);
    });

    it("refuses a fee-on-transfer token for the batch total", async function () {
      const { escrow, poster, feeTokenAddress } = await loadFixture(extraTokensFixture);
      const total = AMOUNT * 2n + 1n;
      await expect(escrow.connect(poster).createTasks(batchOf(feeTokenAddress, 2)))
        .to.be.revertedWithCustomError(escrow, "TokenDeliveredLess")
        .withArgs(feeTokenAddress, total, total - total / 100n);
    });
  });

  describe("permit", function () {
    it("createTaskWithPermit funds from an account that approved nothing, spending the permit", async function () {
      const { escrow, escrowAddress, usdc, token, permitPoster } = await loadFixture(unapprovedPosterFixture);
      const permitDeadline = (await latest()) + 600n;
      const { v, r, s } = await signPermit(usdc, permitPoster, escrowAddress, AMOUNT, permitDeadline);
      const taskHash = hashOf("permit");
      const at = (await latest()) + 1n;
      await atTime(at);
      await expect(escrow.connect(permitPoster).createTaskWithPermit(taskHash, token, AMOUNT, DURATION, ZERO, permitDeadline, v, r, s))
        .to.emit(escrow, "TaskCreated")
        .withArgs(taskHash, permitPoster.address, token, AMOUNT, at + DURATION, ZERO);
      expect(await usdc.nonces(permitPoster.address)).to.equal(1n);
      expect(await usdc.allowance(permitPoster.address, escrowAddress)).to.equal(0n);
      expect(await usdc.balanceOf(permitPoster.address)).to.equal(POSTER_FUNDS - AMOUNT);
      expect(await escrow.escrowed(token)).to.equal(AMOUNT);
    });

    it("still funds when a front-runner already spent the permit (the allowance exists)", async function () {
      const { escrow, escrowAddress, usdc, token, permitPoster, stranger } = await loadFixture(unapprovedPosterFixture);
      const permitDeadline = (await latest()) + 600n;
      const { v, r, s } = await signPermit(usdc, permitPoster, escrowAddress, AMOUNT, permitDeadline);
      await usdc.connect(stranger).permit(permitPoster.address, escrowAddress, AMOUNT, permitDeadline, v, r, s);
      const taskHash = hashOf("front-run");
      await escrow.connect(permitPoster).createTaskWithPermit(taskHash, token, AMOUNT, DURATION, ZERO, permitDeadline, v, r, s);
      expect((await escrow.getTask(taskHash)).poster).to.equal(permitPoster.address);
      expect(await usdc.balanceOf(permitPoster.address)).to.equal(POSTER_FUNDS - AMOUNT);
    });

    it("fails with the token's allowance error when the permit is invalid and nothing is approved", async function () {
      const { escrow, escrowAddress, usdc, token, permitPoster, stranger } = await loadFixture(unapprovedPosterFixture);
      const permitDeadline = (await latest()) + 600n;
      // Signed by someone else: the permit fails, is ignored, and the transfer finds no allowance.
      const { v, r, s } = await signPermit(usdc, stranger, escrowAddress, AMOUNT, permitDeadline);
      await expect(escrow.connect(permitPoster).createTaskWithPermit(hashOf("bad permit"), token, AMOUNT, DURATION, ZERO, permitDeadline, v, r, s))
        .to.be.revertedWithCustomError(usdc, "ERC20InsufficientAllowance")
        .withArgs(escrowAddress, 0n, AMOUNT);
    });

    it("createTaskWithPermit refuses address(0) and unlisted tokens with TokenNotAllowed", async function () {
      const { escrow, escrowAddress, unlisted, unlistedToken, poster } = await loadFixture(extraTokensFixture);
      const permitDeadline = (await latest()) + 600n;
      const { v, r, s } = await signPermit(unlisted, poster, escrowAddress, AMOUNT, permitDeadline);
      await expect(escrow.connect(poster).createTaskWithPermit(hashOf("native"), ZERO, AMOUNT, DURATION, ZERO, permitDeadline, v, r, s))
        .to.be.revertedWithCustomError(escrow, "TokenNotAllowed")
        .withArgs(ZERO);
      await expect(escrow.connect(poster).createTaskWithPermit(hashOf("unlisted"), unlistedToken, AMOUNT, DURATION, ZERO, permitDeadline, v, r, s))
        .to.be.revertedWithCustomError(escrow, "TokenNotAllowed")
        .withArgs(unlistedToken);
    });

    it("createTasksWithPermit funds a batch with one permit for the total", async function () {
      const { escrow, escrowAddress, usdc, token, permitPoster } = await loadFixture(unapprovedPosterFixture);
      const batch = [1n, 2n, 3n].map((i) => ({
        taskHash: hashOf(`permit batch ${i}`),
        token,
        amount: AMOUNT * i,
        duration: DURATION,
        verifier: ZERO,
      }));
      const total = AMOUNT * 6n;
      const permitDeadline = (await latest()) + 600n;
      const { v, r, s } = await signPermit(usdc, permitPoster, escrowAddress, total, permitDeadline);
      await expect(escrow.connect(permitPoster).createTasksWithPermit(batch, permitDeadline, v, r, s))
        .to.emit(usdc, "Transfer")
        .withArgs(permitPoster.address, escrowAddress, total);
      expect(await usdc.nonces(permitPoster.address)).to.equal(1n);
      expect(await usdc.allowance(permitPoster.address, escrowAddress)).to.equal(0n);
      expect(await escrow.escrowed(token)).to.equal(total);
      for (const p of batch) expect((await escrow.getTask(p.taskHash)).amount).to.equal(p.amount);
    });

    it("createTasksWithPermit still funds after a front-run permit, and refuses bad batches", async function () {
      const { escrow, escrowAddress, usdc, token, permitPoster, stranger } = await loadFixture(unapprovedPosterFixture);
      const batch = [{ taskHash: hashOf("front-run batch"), token, amount: AMOUNT, duration: DURATION, verifier: ZERO }];
      const permitDeadline = (await latest()) + 600n;
      const { v, r, s } = await signPermit(usdc, permitPoster, escrowAddress, AMOUNT, permitDeadline);
      await expect(escrow.connect(permitPoster).createTasksWithPermit([], permitDeadline, v, r, s))
        .to.be.revertedWithCustomError(escrow, "InvalidBatchSize")
        .withArgs(0, 20);
      await expect(escrow.connect(permitPoster).createTasksWithPermit([{ ...batch[0]!, token: ZERO }], permitDeadline, v, r, s))
        .to.be.revertedWithCustomError(escrow, "TokenNotAllowed")
        .withArgs(ZERO);
      await usdc.connect(stranger).permit(permitPoster.address, escrowAddress, AMOUNT, permitDeadline, v, r, s);
      await escrow.connect(permitPoster).createTasksWithPermit(batch, permitDeadline, v, r, s);
      expect((await escrow.getTask(batch[0]!.taskHash)).poster).to.equal(permitPoster.address);
      expect(await usdc.balanceOf(permitPoster.address)).to.equal(POSTER_FUNDS - AMOUNT);
    });
  });
});
