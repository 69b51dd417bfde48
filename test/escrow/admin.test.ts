import { expect } from "chai";
import hre from "hardhat";
import { loadFixture } from "@nomicfoundation/hardhat-network-helpers";
import {
  AMOUNT,
  FEE_BPS,
  Status,
  assignedTaskFixture,
  deployEscrowFixture,
  disputedTaskFixture,
  fundedTaskFixture,
  submittedTaskFixture,
} from "../fixtures/escrow";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { TaskEscrow__factory } from "../../typechain-types";
import { deployEscrow } from "../../deploy/escrow";
import { readDeployment, writeDeployment } from "../../deploy/deployments";

const { ethers, upgrades } = hre;
const ZERO = ethers.ZeroAddress;

describe("TaskEscrow admin", function () {
  it("is deployed with the roles, fee and token the deploy code chose", async function () {
    const { escrow, deployment, admin, verifier, treasury, token } = await loadFixture(deployEscrowFixture);
    expect(await escrow.admin()).to.equal(admin.address);
    expect(await escrow.verifier()).to.equal(verifier.address);
    expect(await escrow.treasury()).to.equal(treasury.address);
    expect(await escrow.feeBps()).to.equal(FEE_BPS);
    expect(await escrow.pendingAdmin()).to.equal(ZERO);
    expect(await escrow.isAllowedToken(token)).to.equal(true);
    expect(await escrow.isAllowedToken(ZERO)).to.equal(false);
    expect(await escrow.paused()).to.equal(false);
    expect(await escrow.version()).to.equal("4.0.0");
    expect(deployment.implementation).to.equal(await upgrades.erc1967.getImplementationAddress(await escrow.getAddress()));
    expect([deployment.admin, deployment.verifier, deployment.treasury, deployment.feeBps]).to.deep.equal([
      admin.address,
      verifier.address,
      treasury.address,
      Number(FEE_BPS),
    ]);
  });

  describe("deploy code (deploy/escrow.ts)", function () {
    let dir: string;
    beforeEach(() => {
      dir = mkdtempSync(path.join(tmpdir(), "market-deploy-"));
    });
    afterEach(() => rmSync(dir, { recursive: true, force: true }));

    it("sends nothing where a live escrow is recorded", async function () {
      await loadFixture(deployEscrowFixture);
      const first = await deployEscrow(hre, { save: true, dir });
      expect(first.created).to.equal(true);
      expect(readDeployment("hardhat", dir)).to.deep.equal(first.deployment);
      const blockBefore = await ethers.provider.getBlockNumber();
      const again = await deployEscrow(hre, { save: true, dir });
      expect(again.created).to.equal(false);
      expect(again.deployment).to.deep.equal(first.deployment);
      expect(await ethers.provider.getBlockNumber()).to.equal(blockBefore);
    });

    it("deploys afresh where the recorded address has no code, and refuses one holding other code", async function () {
      const { deployment } = await loadFixture(deployEscrowFixture);
      writeDeployment({ ...deployment, proxy: ethers.Wallet.createRandom().address }, dir);
      const fresh = await deployEscrow(hre, { save: true, dir });
      expect(fresh.created).to.equal(true);
      expect(await fresh.escrow.version()).to.equal("4.0.0");

      // The mock token has code but is no proxy: a stale record on a reused chain must not pass for the escrow.
      writeDeployment({ ...deployment, proxy: deployment.token }, dir);
      const blockBefore = await ethers.provider.getBlockNumber();
      await expect(deployEscrow(hre, { save: true, dir })).to.be.rejectedWith(
        `the deployment record for hardhat names ${deployment.token} as the escrow, but the code there is not an ERC-1967 proxy`,
      );
      expect(await ethers.provider.getBlockNumber()).to.equal(blockBefore);
    });
  });

  describe("only the admin", function () {
    it("refuses every admin call from anyone else with NotAdmin(caller)", async function () {
      const { escrow, token, poster, verifier, treasury, stranger, newAdmin } = await loadFixture(deployEscrowFixture);
      for (const caller of [poster, verifier, treasury, stranger, newAdmin]) {
        const as = escrow.connect(caller);
        const calls = [
          () => as.setFeeBps(500),
          () => as.setTreasury(caller.address),
          () => as.setVerifier(caller.address),
          () => as.setAllowedToken(token, false),
          () => as.pause(),
          () => as.unpause(),
          () => as.proposeAdmin(caller.address),
          () => as.rescueSurplus(token, caller.address, 0n),
        ];
        for (const call of calls) {
          await expect(call()).to.be.revertedWithCustomError(escrow, "NotAdmin").withArgs(caller.address);
        }
      }
    });

    it("refuses unpause from anyone else while paused", async function () {
      const { escrow, admin, stranger } = await loadFixture(deployEscrowFixture);
      await escrow.connect(admin).pause();
      await expect(escrow.connect(stranger).unpause()).to.be.revertedWithCustomError(escrow, "NotAdmin").withArgs(stranger.address);
    });
  });

  describe("setters", function () {
    it("setTreasury and setVerifier emit the previous and new address", async function () {
      const { escrow, admin, verifier, treasury, stranger } = await loadFixture(deployEscrowFixture);
      await expect(escrow.connect(admin).setTreasury(stranger.address))
        .to.emit(escrow, "TreasuryUpdated")
        .withArgs(treasury.address, stranger.address);
      await expect(escrow.connect(admin).setVerifier(stranger.address))
        .to.emit(escrow, "VerifierUpdated")
        .withArgs(verifier.address, stranger.address);
      expect(await escrow.treasury()).to.equal(stranger.address);
      expect(await escrow.verifier()).to.equal(stranger.address);
    });

    it("refuses the zero address for the treasury, the verifier and a token", async function () {
      const { escrow, admin } = await loadFixture(deployEscrowFixture);
      await expect(escrow.connect(admin).setTreasury(ZERO)).to.be.revertedWithCustomError(escrow, "ZeroAddress");
      await expect(escrow.connect(admin).setVerifier(ZERO)).to.be.revertedWithCustomError(escrow, "ZeroAddress");
      await expect(escrow.connect(admin).setAllowedToken(ZERO, true)).to.be.revertedWithCustomError(escrow, "ZeroAddress");
    });

    it("a new marketplace verifier takes over assignment and verdicts; the old one loses both", async function () {
      const { escrow, admin, verifier, stranger, worker, taskHash } = await loadFixture(fundedTaskFixture);
      await escrow.connect(admin).setVerifier(stranger.address);
      await expect(escrow.connect(verifier).marketplaceAssign(taskHash, worker.address))
        .to.be.revertedWithCustomError(escrow, "NotMarketplaceVerifier")
        .withArgs(verifier.address);
      await escrow.connect(stranger).marketplaceAssign(taskHash, worker.address);
      await escrow.connect(worker).submitEvidence(taskHash, ethers.id("result"));
      await expect(escrow.connect(verifier).completeVerification(taskHash, true, 100))
        .to.be.revertedWithCustomError(escrow, "NotTaskVerifier")
        .withArgs(taskHash, verifier.address);
      await escrow.connect(stranger).completeVerification(taskHash, true, 100);
      expect((await escrow.getTask(taskHash)).status).to.equal(Status.Verified);
    });

    it("a disallowed token keeps settling its live tasks", async function () {
      const { escrow, admin, token, verifier, worker, taskHash } = await loadFixture(assignedTaskFixture);
      await expect(escrow.connect(admin).setAllowedToken(token, false)).to.emit(escrow, "TokenAllowed").withArgs(token, false);
      expect(await escrow.isAllowedToken(token)).to.equal(false);
      await escrow.connect(worker).submitEvidence(taskHash, ethers.id("result"));
      await escrow.connect(verifier).completeVerification(taskHash, true, 100);
      expect(await escrow.escrowed(token)).to.equal(0n);
      await expect(escrow.connect(admin).setAllowedToken(token, true)).to.emit(escrow, "TokenAllowed").withArgs(token, true);
    });
  });

  describe("two-step admin handover", function () {
    it("hands over on acceptance; the old admin loses every power", async function () {
      const { escrow, admin, newAdmin, taskHash } = await loadFixture(disputedTaskFixture);
      await expect(escrow.connect(admin).proposeAdmin(newAdmin.address)).to.emit(escrow, "AdminProposed").withArgs(admin.address, newAdmin.address);
      expect(await escrow.pendingAdmin()).to.equal(newAdmin.address);
      // nothing changes until the proposed admin accepts
      expect(await escrow.admin()).to.equal(admin.address);
      await expect(escrow.connect(newAdmin).setFeeBps(0)).to.be.revertedWithCustomError(escrow, "NotAdmin").withArgs(newAdmin.address);

      await expect(escrow.connect(newAdmin).acceptAdmin()).to.emit(escrow, "AdminTransferred").withArgs(admin.address, newAdmin.address);
      expect(await escrow.admin()).to.equal(newAdmin.address);
      expect(await escrow.pendingAdmin()).to.equal(ZERO);

      for (const call of [
        () => escrow.connect(admin).setFeeBps(0),
        () => escrow.connect(admin).pause(),
        () => escrow.connect(admin).proposeAdmin(admin.address),
        () => escrow.connect(admin).resolveDispute(taskHash, true),
      ]) {
        await expect(call()).to.be.revertedWithCustomError(escrow, "NotAdmin").withArgs(admin.address);
      }
      await expect(escrow.connect(newAdmin).resolveDispute(taskHash, false)).to.emit(escrow, "TaskRefunded");
      await expect(escrow.connect(newAdmin).acceptAdmin()).to.be.revertedWithCustomError(escrow, "NotPendingAdmin").withArgs(newAdmin.address);
    });

    it("refuses acceptance by anyone but the proposed admin", async function () {
      const { escrow, admin, newAdmin, stranger } = await loadFixture(deployEscrowFixture);
      await expect(escrow.connect(newAdmin).acceptAdmin()).to.be.revertedWithCustomError(escrow, "NotPendingAdmin").withArgs(newAdmin.address);
      await escrow.connect(admin).proposeAdmin(newAdmin.address);
      for (const caller of [stranger, admin]) {
        await expect(escrow.connect(caller).acceptAdmin()).to.be.revertedWithCustomError(escrow, "NotPendingAdmin").withArgs(caller.address);
      }
    });

    it("a new proposal replaces the old one, and zero withdraws it", async function () {
      const { escrow, admin, newAdmin, stranger } = await loadFixture(deployEscrowFixture);
      await escrow.connect(admin).proposeAdmin(newAdmin.address);
      await escrow.connect(admin).proposeAdmin(stranger.address);
      await expect(escrow.connect(newAdmin).acceptAdmin()).to.be.revertedWithCustomError(escrow, "NotPendingAdmin").withArgs(newAdmin.address);
      await expect(escrow.connect(admin).proposeAdmin(ZERO)).to.emit(escrow, "AdminProposed").withArgs(admin.address, ZERO);
      await expect(escrow.connect(stranger).acceptAdmin()).to.be.revertedWithCustomError(escrow, "NotPendingAdmin").withArgs(stranger.address);
      expect(await escrow.admin()).to.equal(admin.address);
    });
  });

  describe("initialization", function () {
    it("cannot initialize the proxy twice", async function () {
      const { escrow, stranger, token } = await loadFixture(deployEscrowFixture);
      await expect(escrow.connect(stranger).initialize(stranger.address, stranger.address, stranger.address, 0, token)).to.be.revertedWithCustomError(
        escrow,
        "InvalidInitialization",
      );
      expect(await escrow.admin()).to.not.equal(stranger.address);
    });

    it("cannot initialize the implementation", async function () {
      const { escrow, escrowAddress, stranger, token } = await loadFixture(deployEscrowFixture);
      const implementation = TaskEscrow__factory.connect(await upgrades.erc1967.getImplementationAddress(escrowAddress), stranger);
      await expect(implementation.initialize(stranger.address, stranger.address, stranger.address, 0, token)).to.be.revertedWithCustomError(
        escrow,
        "InvalidInitialization",
      );
      expect(await implementation.admin()).to.equal(ZERO);
    });

    it("refuses zero roles or token and a fee above the cap", async function () {
      const { admin, verifier, treasury, token } = await loadFixture(deployEscrowFixture);
      const factory = await ethers.getContractFactory("TaskEscrow", admin);
      const good = [admin.address, verifier.address, treasury.address, 1000, token];
      for (const index of [0, 1, 2, 4]) {
        const args = [...good];
        args[index] = ZERO;
        await expect(upgrades.deployProxy(factory, args, { kind: "uups" })).to.be.revertedWithCustomError(factory, "ZeroAddress");
      }
      const args = [...good];
      args[3] = 3001;
      await expect(upgrades.deployProxy(factory, args, { kind: "uups" }))
        .to.be.revertedWithCustomError(factory, "FeeExceedsMax")
        .withArgs(3001, 3000);
    });
  });

  it("keeps the poster's funds out of the admin's reach: a live task is no surplus", async function () {
    const { escrow, admin, token } = await loadFixture(submittedTaskFixture);
    await expect(escrow.connect(admin).rescueSurplus(token, admin.address, AMOUNT))
      .to.be.revertedWithCustomError(escrow, "RescueExceedsSurplus")
      .withArgs(token, AMOUNT, 0n);
  });
});
