import { expect } from "chai";
import hre from "hardhat";
import { loadFixture, time } from "@nomicfoundation/hardhat-network-helpers";
import { AMOUNT, DURATION, DAY, Ending, Status, deployEscrowFixture, everyStateFixture, everyStateV1Fixture } from "../fixtures/escrow";
import { TaskEscrowV1__factory, TaskEscrowV2__factory, TaskEscrowNextMock__factory, TaskEscrow__factory } from "../../typechain-types";
import { upgradeEscrow } from "../../deploy/escrow";
import { sweepFees } from "./helpers";
import ERC1967Proxy from "@openzeppelin/upgrades-core/artifacts/@openzeppelin/contracts-v5/proxy/ERC1967/ERC1967Proxy.sol/ERC1967Proxy.json";

const { ethers, upgrades } = hre;

/**
 * A TaskEscrow proxy deployed without the upgrades plugin (as on a network whose manifest is lost), from an account
 * that deploys nothing else, so the plugin has no record of it.
 */
async function unregisteredProxyFixture() {
  return unregisteredProxy(false);
}

/** The same with TaskEscrow 1.0.0, recorded as 1.0.0's deploy code recorded it: contract `TaskEscrow`, `1.0.0`. */
async function unregisteredV1ProxyFixture() {
  return unregisteredProxy(true);
}

/** The same with TaskEscrow 2.0.0, recorded as 2.0.0's deploy code recorded it: contract `TaskEscrow`, `2.0.0`. */
async function unregisteredV2ProxyFixture() {
  return unregisteredProxy("v2");
}

async function unregisteredProxy(release: boolean | "v2") {
  const base = await deployEscrowFixture();
  const { admin, verifier, treasury, token, newAdmin: deployer } = base;
  const factory =
    release === "v2" ? new TaskEscrowV2__factory(deployer) : release ? new TaskEscrowV1__factory(deployer) : new TaskEscrow__factory(deployer);
  const implementation = await factory.deploy();
  const init = implementation.interface.encodeFunctionData("initialize", [admin.address, verifier.address, treasury.address, 1000, token]);
  const proxy = await new ethers.ContractFactory(ERC1967Proxy.abi, ERC1967Proxy.bytecode, deployer).deploy(await implementation.getAddress(), init);
  const record = {
    ...base.deployment,
    proxy: await proxy.getAddress(),
    implementation: await implementation.getAddress(),
    contract: "TaskEscrow",
    version: await implementation.version(),
  };
  return { ...base, record, unregistered: TaskEscrow__factory.connect(record.proxy, admin) };
}

type Ctx = Awaited<ReturnType<typeof everyStateFixture>>;

/** Everything the escrow reports: every task, the roles and settings, and the books of both tokens. */
async function snapshot(ctx: Ctx) {
  const { escrow, token, blocklistToken, worker, taskHashes } = ctx;
  const tasks: Record<string, unknown[]> = {};
  for (const [name, hash] of Object.entries(taskHashes)) tasks[name] = Array.from(await escrow.getTask(hash));
  return {
    tasks,
    admin: await escrow.admin(),
    pendingAdmin: await escrow.pendingAdmin(),
    verifier: await escrow.verifier(),
    treasury: await escrow.treasury(),
    feeBps: await escrow.feeBps(),
    paused: await escrow.paused(),
    totalPaused: await escrow.totalPaused(),
    books: await Promise.all(
      [token, blocklistToken].map(async (t) => [
        await escrow.isAllowedToken(t),
        await escrow.escrowed(t),
        await escrow.totalCredited(t),
        await escrow.creditOf(t, worker.address),
      ]),
    ),
  };
}

describe("TaskEscrow upgrade", function () {
  it("the fixture holds a task in every state, a pause and a credit", async function () {
    const ctx = await loadFixture(everyStateFixture);
    const { escrow, taskHashes, blocklistToken, worker } = ctx;
    const statuses = await Promise.all(Object.values(taskHashes).map(async (hash) => Number((await escrow.getTask(hash)).status)));
    expect(statuses).to.deep.equal([
      Status.Funded,
      Status.Assigned,
      Status.Submitted,
      Status.Failed,
      Status.Disputed,
      Status.Escalated,
      Status.Verified,
      Status.Cancelled,
      Status.Refunded,
    ]);
    expect(await escrow.totalPaused()).to.be.greaterThan(0n);
    expect(await escrow.creditOf(blocklistToken, worker.address)).to.equal(7_500_000n);
  });

  it("validates against the deployed implementation", async function () {
    const { escrowAddress, admin } = await loadFixture(everyStateFixture);
    const next = await ethers.getContractFactory("TaskEscrowNextMock", admin);
    await upgrades.validateUpgrade(escrowAddress, next, { kind: "uups" });
  });

  it("keeps every task, role, setting and book across the upgrade, and the new storage works", async function () {
    const ctx = await loadFixture(everyStateFixture);
    const { escrowAddress, admin } = ctx;
    const before = await snapshot(ctx);
    const oldImplementation = await upgrades.erc1967.getImplementationAddress(escrowAddress);

    const next = await ethers.getContractFactory("TaskEscrowNextMock", admin);
    await upgrades.upgradeProxy(escrowAddress, next, { kind: "uups" });
    const v3 = TaskEscrowNextMock__factory.connect(escrowAddress, admin);

    expect(await upgrades.erc1967.getImplementationAddress(escrowAddress)).to.not.equal(oldImplementation);
    expect(await v3.version()).to.equal("5.0.0-mock");
    expect(await snapshot(ctx)).to.deep.equal(before);

    await v3.setUpgradeNote(42n);
    expect(await v3.upgradeNote()).to.equal(42n);
    expect(await snapshot(ctx)).to.deep.equal(before);
  });

  it("live tasks keep running on the new implementation", async function () {
    const ctx = await loadFixture(everyStateFixture);
    const { escrowAddress, admin, poster, worker, agentVerifier, usdc, taskHashes } = ctx;
    await upgrades.upgradeProxy(escrowAddress, await ethers.getContractFactory("TaskEscrowNextMock", admin), {
      kind: "uups",
    });
    const escrow = TaskEscrowNextMock__factory.connect(escrowAddress, admin);
    const workerBefore = await usdc.balanceOf(worker.address);
    // 2500 bps was set before the upgrade
    await expect(escrow.connect(agentVerifier).completeVerification(taskHashes.submitted!, true, 80))
      .to.emit(escrow, "TaskCompleted")
      .withArgs(taskHashes.submitted!, worker.address, 7_500_000n, 2_500_000n, Ending.VerificationPassed);
    await escrow.connect(poster).cancelTask(taskHashes.funded!);
    const escalated = await escrow.getTask(taskHashes.escalated!);
    await time.increaseTo(escalated.windowEndsAt);
    await escrow.connect(worker).releaseUnjudgedWork(taskHashes.escalated!);
    expect(await usdc.balanceOf(worker.address)).to.equal(workerBefore + 2n * 7_500_000n);
    expect((await escrow.getTask(taskHashes.funded!)).status).to.equal(Status.Cancelled);
    expect(await escrow.escrowed(await usdc.getAddress())).to.equal(3n * AMOUNT); // assigned, failed, disputed
  });

  it("refuses an upgrade by anyone but the admin with NotAdmin(caller)", async function () {
    const { escrow, escrowAddress, stranger, poster, admin } = await loadFixture(everyStateFixture);
    const next = await ethers.getContractFactory("TaskEscrowNextMock", admin);
    const implementation = (await upgrades.prepareUpgrade(escrowAddress, next, { kind: "uups" })) as string;
    for (const caller of [stranger, poster]) {
      await expect(escrow.connect(caller).upgradeToAndCall(implementation, "0x"))
        .to.be.revertedWithCustomError(escrow, "NotAdmin")
        .withArgs(caller.address);
    }
    await expect(upgrades.upgradeProxy(escrowAddress, next.connect(stranger), { kind: "uups" }))
      .to.be.revertedWithCustomError(escrow, "NotAdmin")
      .withArgs(stranger.address);
    expect(await escrow.version()).to.equal("4.0.0");
    await escrow.connect(admin).upgradeToAndCall(implementation, "0x");
    expect(await escrow.version()).to.equal("5.0.0-mock");
  });

  it("a handed-over admin upgrades; the old one cannot", async function () {
    const { escrow, escrowAddress, admin, newAdmin } = await loadFixture(everyStateFixture);
    const next = await ethers.getContractFactory("TaskEscrowNextMock", admin);
    const implementation = (await upgrades.prepareUpgrade(escrowAddress, next, { kind: "uups" })) as string;
    await escrow.connect(admin).proposeAdmin(newAdmin.address);
    await escrow.connect(newAdmin).acceptAdmin();
    await expect(escrow.connect(admin).upgradeToAndCall(implementation, "0x"))
      .to.be.revertedWithCustomError(escrow, "NotAdmin")
      .withArgs(admin.address);
    await escrow.connect(newAdmin).upgradeToAndCall(implementation, "0x");
    expect(await escrow.version()).to.equal("5.0.0-mock");
  });

  describe("upgradeEscrow on a proxy the upgrades plugin never registered", function () {
    // One test: registering is kept by the plugin for the rest of the run, so the refusal must come first.
    it("refuses a record naming other code, and registers, validates and upgrades the code it recognises", async function () {
      const { record, unregistered } = await loadFixture(unregisteredProxyFixture);
      await expect(
        upgradeEscrow(hre, { deployment: { ...record, contract: "TaskEscrowNextMock" }, contract: "TaskEscrowNextMock" }),
      ).to.be.rejectedWith(`the implementation at ${record.implementation} is not TaskEscrowNextMock as compiled here`);
      expect(await unregistered.version()).to.equal("4.0.0");
      expect(await upgrades.erc1967.getImplementationAddress(record.proxy)).to.equal(record.implementation);

      const lines: string[] = [];
      const { deployment } = await upgradeEscrow(hre, {
        deployment: record,
        contract: "TaskEscrowNextMock",
        log: (line) => lines.push(line),
      });
      expect(lines).to.include(`registering ${record.proxy} with the upgrades plugin as TaskEscrow`);
      expect(lines).to.include("upgrade to TaskEscrowNextMock validated");
      expect(deployment.version).to.equal("5.0.0-mock");
      expect(await unregistered.version()).to.equal("5.0.0-mock");
    });
  });

  describe("from 1.0.0 to 4.0.0 with the upgrade code (upgradeEscrow)", function () {
    /** 1.0.0 with a task in every state, a paused stretch behind, and two credits of accounts still blocked. */
    async function liveV1Fixture() {
      const ctx = await everyStateV1Fixture();
      const { escrow, poster, blocklist, blocklistToken } = ctx;
      // A second credit: the poster's refund, credited while the poster is blocked.
      const refunded = ethers.id("v1: refund credited to a blocked poster");
      await escrow.connect(poster).createTask(refunded, blocklistToken, AMOUNT, DURATION, ethers.ZeroAddress);
      await blocklist.setBlocked(poster.address, true);
      await escrow.connect(poster).cancelTask(refunded);
      return ctx;
    }

    it("validates 4.0.0 against a deployed 1.0.0 (storage only appended)", async function () {
      const { escrowAddress, admin, escrow } = await loadFixture(liveV1Fixture);
      expect(await escrow.version()).to.equal("1.0.0");
      await upgrades.validateUpgrade(escrowAddress, await ethers.getContractFactory("TaskEscrow", admin), {
        kind: "uups",
      });
    });

    it("keeps every task, setting, book and credit, then settles every live task and pays credits only to their owners", async function () {
      const ctx = await loadFixture(liveV1Fixture);
      const { escrowAddress, deployment, admin, poster, worker, verifier, agentVerifier, treasury, stranger } = ctx;
      const { usdc, token, blocklist, blocklistToken, taskHashes } = ctx;
      const before = await snapshot(ctx);
      const posterCredit = await ctx.escrow.creditOf(blocklistToken, poster.address);
      expect(posterCredit).to.equal(AMOUNT);

      const lines: string[] = [];
      const upgraded = await upgradeEscrow(hre, { deployment, save: false, log: (line) => lines.push(line) });
      expect(lines).to.include("upgrade to TaskEscrow validated");
      expect(upgraded.deployment).to.deep.include({ contract: "TaskEscrow", version: "4.0.0", proxy: escrowAddress });
      const escrow = upgraded.escrow;
      expect(await escrow.version()).to.equal("4.0.0");
      expect(await snapshot(ctx)).to.deep.equal(before);
      expect(await escrow.creditOf(blocklistToken, poster.address)).to.equal(posterCredit);
      expect(await escrow.reputationRegistry()).to.equal(ethers.ZeroAddress);

      // Every live task settles on 4.0.0 (the 2500 bps fee was set on 1.0.0).
      const payout = 7_500_000n;
      const fee = AMOUNT - payout;
      const workerBefore = await usdc.balanceOf(worker.address);
      const posterBefore = await usdc.balanceOf(poster.address);
      const treasuryBefore = await usdc.balanceOf(treasury.address);
      await expect(escrow.connect(agentVerifier).completeVerification(taskHashes.submitted!, true, 80))
        .to.emit(escrow, "TaskCompleted")
        .withArgs(taskHashes.submitted!, worker.address, payout, fee, Ending.VerificationPassed);
      await expect(escrow.connect(admin).resolveDispute(taskHashes.disputed!, true))
        .to.emit(escrow, "TaskCompleted")
        .withArgs(taskHashes.disputed!, worker.address, payout, fee, Ending.DisputeWonByWorker);
      await blocklist.setBlocked(poster.address, false); // unblocked on the blocklist token; usdc never blocked
      await expect(escrow.connect(poster).cancelTask(taskHashes.funded!))
        .to.emit(escrow, "TaskCancelled")
        .withArgs(taskHashes.funded!, poster.address, AMOUNT, Ending.CancelledWhileOpen);
      await blocklist.setBlocked(poster.address, true);
      await time.increase(15 * DAY); // past every deadline, appeal window and ruling window
      await expect(escrow.connect(poster).claimTimeout(taskHashes.assigned!))
        .to.emit(escrow, "DeadlineExpired")
        .withArgs(taskHashes.assigned!, poster.address, AMOUNT, Ending.NeverDelivered);
      await expect(escrow.connect(poster).claimTimeout(taskHashes.failed!))
        .to.emit(escrow, "DeadlineExpired")
        .withArgs(taskHashes.failed!, poster.address, AMOUNT, Ending.FailedUnfixed);
      await expect(escrow.connect(worker).releaseUnjudgedWork(taskHashes.escalated!))
        .to.emit(escrow, "TaskCompleted")
        .withArgs(taskHashes.escalated!, worker.address, payout, fee, Ending.UnjudgedWorkReleased);
      expect(await usdc.balanceOf(worker.address)).to.equal(workerBefore + 3n * payout);
      expect(await usdc.balanceOf(poster.address)).to.equal(posterBefore + 3n * AMOUNT);
      // The fees accrued since the upgrade (4.0.0) reach the treasury with its sweep.
      expect(await sweepFees(escrow, treasury, token)).to.equal(3n * fee);
      expect(await usdc.balanceOf(treasury.address)).to.equal(treasuryBefore + 3n * fee);
      expect(await escrow.escrowed(token)).to.equal(0n);
      expect(await usdc.balanceOf(escrowAddress)).to.equal(0n);
      for (const hash of Object.values(taskHashes)) {
        expect((await escrow.getTask(hash)).ending).to.not.equal(Ending.None);
      }
      expect(await verifier.getAddress()).to.equal(await escrow.verifier());

      // Credits made on 1.0.0: frozen while their owners are blocked, to anyone; paid to the owners once unblocked.
      const v1 = TaskEscrowV1__factory.connect(escrowAddress, worker);
      await expect(v1.withdrawCreditTo(blocklistToken, stranger.address)).to.be.revertedWithoutReason();
      for (const [account, credit] of [
        [worker, payout],
        [poster, posterCredit],
      ] as const) {
        await expect(escrow.connect(account).withdrawCredit(blocklistToken))
          .to.be.revertedWithCustomError(blocklist, "AccountBlocked")
          .withArgs(account.address);
        await blocklist.setBlocked(account.address, false);
        await expect(escrow.connect(account).withdrawCredit(blocklistToken))
          .to.emit(escrow, "CreditWithdrawn")
          .withArgs(blocklistToken, account.address, account.address, credit);
      }
      expect(await blocklist.balanceOf(stranger.address)).to.equal(0n);
      expect(await escrow.totalCredited(blocklistToken)).to.equal(0n);
      expect(await blocklist.balanceOf(escrowAddress)).to.equal(0n);
    });

    it("registers a proxy the plugin never saw from a record that says TaskEscrow 2.0.0, and upgrades it", async function () {
      const { record, unregistered } = await loadFixture(unregisteredV2ProxyFixture);
      expect(record).to.deep.include({ contract: "TaskEscrow", version: "2.0.0" });
      const lines: string[] = [];
      const { deployment } = await upgradeEscrow(hre, { deployment: record, log: (line) => lines.push(line) });
      expect(lines).to.include(`registering ${record.proxy} with the upgrades plugin as TaskEscrowV2`);
      expect(lines).to.include("upgrade to TaskEscrow validated");
      expect(deployment).to.deep.include({ contract: "TaskEscrow", version: "4.0.0" });
      expect(await unregistered.version()).to.equal("4.0.0");
    });

    it("registers a proxy the plugin never saw from a record that says TaskEscrow 1.0.0, and upgrades it", async function () {
      const { record, unregistered } = await loadFixture(unregisteredV1ProxyFixture);
      expect(record).to.deep.include({ contract: "TaskEscrow", version: "1.0.0" });
      const lines: string[] = [];
      const { deployment } = await upgradeEscrow(hre, { deployment: record, log: (line) => lines.push(line) });
      expect(lines).to.include(`registering ${record.proxy} with the upgrades plugin as TaskEscrowV1`);
      expect(lines).to.include("upgrade to TaskEscrow validated");
      expect(deployment).to.deep.include({ contract: "TaskEscrow", version: "4.0.0" });
      expect(await unregistered.version()).to.equal("4.0.0");
    });
  });
});
