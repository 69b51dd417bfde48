/** TaskReputation on its own: only writers write, the numbers and their events, every refusal, upgrades. */
import { expect } from "chai";
import hre from "hardhat";
import { loadFixture } from "@nomicfoundation/hardhat-network-helpers";
import { registriesFixture } from "../fixtures/registries";
import { TaskReputation__factory, type TaskReputation } from "../../typechain-types";

const { ethers, upgrades } = hre;

type Summary = Awaited<ReturnType<TaskReputation["summaryOf"]>>;
const fields = (s: Summary) => ({
  tasksCompleted: s.tasksCompleted,
  scoreSum: s.scoreSum,
  scoreCount: s.scoreCount,
  disputes: s.disputes,
  averageScore: s.averageScore,
});

/** The registries, plus a plain account the admin made a writer (standing in for a second escrow). */
async function writerFixture() {
  const base = await registriesFixture();
  const { reputation, admin, operator: writer } = base;
  await reputation.connect(admin).grantRole(await reputation.WRITER_ROLE(), writer.address);
  return { ...base, writer, writerRole: await reputation.WRITER_ROLE() };
}

describe("TaskReputation", function () {
  describe("set-up", function () {
    it("is initialized behind its proxy with the admin and version 1.0.0", async function () {
      const { reputation, admin } = await loadFixture(registriesFixture);
      expect(await reputation.hasRole(await reputation.DEFAULT_ADMIN_ROLE(), admin.address)).to.equal(true);
      expect(await reputation.version()).to.equal("1.0.0");
    });

    it("refuses a second initialize, an initialize of the implementation, and a zero admin", async function () {
      const { reputation, reputationAddress, admin } = await loadFixture(registriesFixture);
      await expect(reputation.initialize(admin.address)).to.be.revertedWithCustomError(reputation, "InvalidInitialization");
      const implementation = TaskReputation__factory.connect(await upgrades.erc1967.getImplementationAddress(reputationAddress), admin);
      await expect(implementation.initialize(admin.address)).to.be.revertedWithCustomError(reputation, "InvalidInitialization");
      await expect(
        upgrades.deployProxy(await ethers.getContractFactory("TaskReputation", admin), [ethers.ZeroAddress], {
          kind: "uups",
        }),
      ).to.be.revertedWithCustomError(reputation, "ZeroAddress");
    });
  });

  describe("the writer set", function () {
    it("only writers write: anyone else gets AccessControlUnauthorizedAccount(caller, WRITER_ROLE)", async function () {
      const { reputation, admin, poster, stranger, agent, writerRole } = await loadFixture(writerFixture);
      const taskHash = ethers.id("task");
      for (const caller of [admin, poster, stranger, agent]) {
        await expect(reputation.connect(caller).recordCompletion(agent.address, taskHash, true, 80))
          .to.be.revertedWithCustomError(reputation, "AccessControlUnauthorizedAccount")
          .withArgs(caller.address, writerRole);
        await expect(reputation.connect(caller).recordDispute(agent.address, taskHash))
          .to.be.revertedWithCustomError(reputation, "AccessControlUnauthorizedAccount")
          .withArgs(caller.address, writerRole);
      }
      expect((await reputation.summaryOf(agent.address)).tasksCompleted).to.equal(0n);
    });

    it("the admin adds and removes writers, with RoleGranted and RoleRevoked; a removed writer is refused", async function () {
      const { reputation, admin, stranger, agent, writerRole } = await loadFixture(writerFixture);
      await expect(reputation.connect(admin).grantRole(writerRole, stranger.address))
        .to.emit(reputation, "RoleGranted")
        .withArgs(writerRole, stranger.address, admin.address);
      expect(await reputation.isWriter(stranger.address)).to.equal(true);
      await reputation.connect(stranger).recordCompletion(agent.address, ethers.id("one"), false, 0);
      await expect(reputation.connect(admin).revokeRole(writerRole, stranger.address))
        .to.emit(reputation, "RoleRevoked")
        .withArgs(writerRole, stranger.address, admin.address);
      expect(await reputation.isWriter(stranger.address)).to.equal(false);
      await expect(reputation.connect(stranger).recordCompletion(agent.address, ethers.id("two"), false, 0))
        .to.be.revertedWithCustomError(reputation, "AccessControlUnauthorizedAccount")
        .withArgs(stranger.address, writerRole);
    });

    it("only the admin manages the set: AccessControlUnauthorizedAccount(caller, DEFAULT_ADMIN_ROLE)", async function () {
      const { reputation, writer, stranger, writerRole } = await loadFixture(writerFixture);
      const adminRole = await reputation.DEFAULT_ADMIN_ROLE();
      for (const caller of [writer, stranger]) {
        await expect(reputation.connect(caller).grantRole(writerRole, caller.address))
          .to.be.revertedWithCustomError(reputation, "AccessControlUnauthorizedAccount")
          .withArgs(caller.address, adminRole);
      }
    });
  });

  describe("writes", function () {
    it("counts completions, scores and disputes, and emits an event for every write", async function () {
      const { reputation, writer, agent } = await loadFixture(writerFixture);
      const hashes = ["a", "b", "c", "d", "e"].map((name) => ethers.id(name));
      await expect(reputation.connect(writer).recordCompletion(agent.address, hashes[0]!, true, 87))
        .to.emit(reputation, "CompletionRecorded")
        .withArgs(agent.address, writer.address, hashes[0]!, true, 87);
      await expect(reputation.connect(writer).recordCompletion(agent.address, hashes[1]!, true, 100))
        .to.emit(reputation, "CompletionRecorded")
        .withArgs(agent.address, writer.address, hashes[1]!, true, 100);
      await expect(reputation.connect(writer).recordCompletion(agent.address, hashes[2]!, false, 0))
        .to.emit(reputation, "CompletionRecorded")
        .withArgs(agent.address, writer.address, hashes[2]!, false, 0);
      await expect(reputation.connect(writer).recordCompletion(agent.address, hashes[3]!, true, 0))
        .to.emit(reputation, "CompletionRecorded")
        .withArgs(agent.address, writer.address, hashes[3]!, true, 0);
      await expect(reputation.connect(writer).recordDispute(agent.address, hashes[4]!))
        .to.emit(reputation, "DisputeRecorded")
        .withArgs(agent.address, writer.address, hashes[4]!);

      expect(await reputation.tasksCompleted(agent.address)).to.equal(4n);
      expect(await reputation.scoresOf(agent.address)).to.deep.equal([187n, 3n]);
      expect(await reputation.disputesOf(agent.address)).to.equal(1n);
      const summary = await reputation.summaryOf(agent.address);
      expect(fields(summary)).to.deep.equal({
        tasksCompleted: 4n,
        scoreSum: 187n,
        scoreCount: 3n,
        disputes: 1n,
        averageScore: 6233n, // 187 / 3 = 62.33
      });
    });

    it("an unscored completion ignores its score argument; an agent without history sums to zeros", async function () {
      const { reputation, writer, agent, stranger } = await loadFixture(writerFixture);
      await reputation.connect(writer).recordCompletion(agent.address, ethers.id("x"), false, 55);
      expect(await reputation.scoresOf(agent.address)).to.deep.equal([0n, 0n]);
      expect(fields(await reputation.summaryOf(stranger.address))).to.deep.equal({
        tasksCompleted: 0n,
        scoreSum: 0n,
        scoreCount: 0n,
        disputes: 0n,
        averageScore: 0n,
      });
    });

    it("refuses a zero agent with ZeroAddress() and a score above 100 with InvalidScore(score)", async function () {
      const { reputation, writer, agent } = await loadFixture(writerFixture);
      const taskHash = ethers.id("refused");
      await expect(reputation.connect(writer).recordCompletion(ethers.ZeroAddress, taskHash, true, 50)).to.be.revertedWithCustomError(
        reputation,
        "ZeroAddress",
      );
      await expect(reputation.connect(writer).recordDispute(ethers.ZeroAddress, taskHash)).to.be.revertedWithCustomError(reputation, "ZeroAddress");
      for (const score of [101, 255]) {
        await expect(reputation.connect(writer).recordCompletion(agent.address, taskHash, true, score))
          .to.be.revertedWithCustomError(reputation, "InvalidScore")
          .withArgs(score);
        await expect(reputation.connect(writer).recordCompletion(agent.address, taskHash, false, score))
          .to.be.revertedWithCustomError(reputation, "InvalidScore")
          .withArgs(score);
      }
      expect((await reputation.summaryOf(agent.address)).tasksCompleted).to.equal(0n);
    });

    it("keeps agents apart", async function () {
      const { reputation, writer, agent, stranger } = await loadFixture(writerFixture);
      await reputation.connect(writer).recordCompletion(agent.address, ethers.id("x"), true, 90);
      await reputation.connect(writer).recordDispute(stranger.address, ethers.id("y"));
      expect((await reputation.summaryOf(agent.address)).disputes).to.equal(0n);
      expect((await reputation.summaryOf(stranger.address)).tasksCompleted).to.equal(0n);
    });
  });

  describe("upgrades", function () {
    it("only the admin upgrades, and the numbers stay", async function () {
      const { reputation, reputationAddress, admin, writer, agent, stranger } = await loadFixture(writerFixture);
      await reputation.connect(writer).recordCompletion(agent.address, ethers.id("x"), true, 70);
      const next = await ethers.getContractFactory("TaskReputation", admin);
      const implementation = (await upgrades.prepareUpgrade(reputationAddress, next, {
        kind: "uups",
        redeployImplementation: "always",
      })) as string;
      await expect(reputation.connect(stranger).upgradeToAndCall(implementation, "0x"))
        .to.be.revertedWithCustomError(reputation, "AccessControlUnauthorizedAccount")
        .withArgs(stranger.address, await reputation.DEFAULT_ADMIN_ROLE());
      await reputation.connect(admin).upgradeToAndCall(implementation, "0x");
      expect(await upgrades.erc1967.getImplementationAddress(reputationAddress)).to.equal(implementation);
      expect(await reputation.scoresOf(agent.address)).to.deep.equal([70n, 1n]);
    });
  });
});
