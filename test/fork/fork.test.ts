/**
 * Fork test: a local Hardhat node gets a deployment made by the deploy script as production gets one (the `arc`
 * network from CHAIN_ARC_RPC_URL, a deployer key from DEPLOYER_PRIVATE_KEY, roles and the chain's existing USDC from
 * ESCROW_*), then the in-process Hardhat network forks that node, the upgrade script upgrades the forked proxy to the
 * current source, and all eight endings are driven on the forked proxy with exact balances.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { expect } from "chai";
import hre from "hardhat";
import { JsonRpcProvider, Wallet } from "ethers";
import { clearSnapshots, time } from "@nomicfoundation/hardhat-network-helpers";
import type { HardhatEthersSigner } from "@nomicfoundation/hardhat-ethers/signers";
import { upgradeEscrow } from "../../deploy/escrow";
import { readDeployment, type EscrowDeployment } from "../../deploy/deployments";
import { freePort, hardhatAccountKeys, startLocalChain, type LocalChain } from "../../scripts/lib/local-chain";
import { MockUSDC__factory, type MockUSDC, type TaskEscrow } from "../../typechain-types";
import { Ending, EscrowStatus } from "../../core/escrow";

const run = promisify(execFile);
const DAY = 86_400;
const AMOUNT = 12_345_679n; // odd, so the fee rounds down
const FEE_BPS = 1000n;


describe("fork: eight endings on an upgraded fork of a deployed escrow", function () {
  this.timeout(180_000);
  let chain: LocalChain;
  let dir: string;
  let deployment: EscrowDeployment;
  let escrow: TaskEscrow;
  let usdc: MockUSDC;
  let admin: HardhatEthersSigner, verifier: HardhatEthersSigner, treasury: HardhatEthersSigner;
  let poster: HardhatEthersSigner, worker: HardhatEthersSigner;
  let counter = 0;

  before(async function () {
    chain = await startLocalChain({ port: await freePort(), quiet: true });
    dir = mkdtempSync(path.join(tmpdir(), "market-fork-"));
    [admin, verifier, treasury, poster, worker] = (await hre.ethers.getSigners()) as [
      HardhatEthersSigner, HardhatEthersSigner, HardhatEthersSigner, HardhatEthersSigner, HardhatEthersSigner,
    ];
    // The chain's USDC exists before the escrow, as on arc; a deployer that holds no role deploys.
    const node = new JsonRpcProvider(chain.url, undefined, { staticNetwork: true });
    const [, , , , , deployerKey, tokenOwnerKey] = hardhatAccountKeys();
    const existingUsdc = await new MockUSDC__factory(new Wallet(tokenOwnerKey!, node)).deploy();
    await existingUsdc.waitForDeployment();
    const env = {
      ...process.env,
      CHAIN_ARC_RPC_URL: chain.url,
      DEPLOYER_PRIVATE_KEY: deployerKey,
      ESCROW_ADMIN: admin.address,
      ESCROW_VERIFIER: verifier.address,
      ESCROW_TREASURY: treasury.address,
      ESCROW_TOKEN: await existingUsdc.getAddress(),
      DEPLOYMENTS_DIR: dir,
      HARDHAT_NETWORK: "",
    };
    const cli = require.resolve("hardhat/internal/cli/cli");
    const deploy = () => run(process.execPath, [cli, "run", "--no-compile", "--network", "arc", "deploy/deploy.ts"], { env, cwd: path.resolve(__dirname, "../..") });
    await deploy();
    node.destroy();
    const recorded = readDeployment("arc", dir);
    if (!recorded) throw new Error("the deploy script wrote no deployment record");
    deployment = recorded;
    expect(deployment).to.deep.include({
      network: "arc",
      admin: admin.address,
      verifier: verifier.address,
      treasury: treasury.address,
      token: await existingUsdc.getAddress(),
    });

    // Re-running the deploy script where a live deployment is recorded sends nothing.
    expect((await deploy()).stdout).to.contain("nothing sent");
    expect(readDeployment("arc", dir)).to.deep.equal(recorded);

    await hre.network.provider.request({ method: "hardhat_reset", params: [{ forking: { jsonRpcUrl: chain.url } }] });
    // EDR refuses calls against the forked block itself until a new block exists.
    await hre.network.provider.request({ method: "hardhat_mine", params: ["0x1"] });
    await clearSnapshots();

    const upgraded = await upgradeEscrow(hre, { deployment, redeployImplementation: "always", save: false });
    expect(upgraded.deployment.implementation).to.not.equal(deployment.implementation);
    escrow = upgraded.escrow;
    usdc = MockUSDC__factory.connect(deployment.token, poster);
    await usdc.mint(poster.address, 1_000n * AMOUNT);
    await usdc.approve(deployment.proxy, hre.ethers.MaxUint256);
  });

  after(async function () {
    await hre.network.provider.request({ method: "hardhat_reset", params: [] });
    await clearSnapshots();
    chain?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const balances = async () => ({
    poster: await usdc.balanceOf(poster.address),
    worker: await usdc.balanceOf(worker.address),
    treasury: await usdc.balanceOf(treasury.address),
    escrow: await usdc.balanceOf(deployment.proxy),
  });

  /** Funds a task, runs `steps`, then checks the ending event and that the balances moved by exactly the split. */
  async function expectEnding(
    ending: (typeof Ending)[keyof typeof Ending],
    steps: (taskHash: string) => Promise<unknown>,
  ) {
    const taskHash = hre.ethers.id(`fork task ${counter++}`);
    await escrow.connect(poster).createTask(taskHash, deployment.token, AMOUNT, DAY, hre.ethers.ZeroAddress);
    const before = await balances();
    const tx = (await steps(taskHash)) as { wait(): Promise<unknown> };
    const fee = (AMOUNT * FEE_BPS) / 10_000n;
    const payout = ending <= Ending.UnjudgedWorkReleased;
    const event = payout
      ? "TaskCompleted"
      : ending === Ending.CancelledWhileOpen
        ? "TaskCancelled"
        : ending === Ending.DisputeWonByPoster
          ? "TaskRefunded"
          : "DeadlineExpired";
    if (payout) await expect(tx).to.emit(escrow, event).withArgs(taskHash, worker.address, AMOUNT - fee, fee, ending);
    else await expect(tx).to.emit(escrow, event).withArgs(taskHash, poster.address, AMOUNT, ending);

    const after = await balances();
    expect(after.escrow).to.equal(before.escrow - AMOUNT);
    expect(after.poster - before.poster).to.equal(payout ? 0n : AMOUNT);
    expect(after.worker - before.worker).to.equal(payout ? AMOUNT - fee : 0n);
    expect(after.treasury - before.treasury).to.equal(payout ? fee : 0n);
    const task = await escrow.getTask(taskHash);
    expect(task.ending).to.equal(ending);
    return task;
  }

  const assign = (h: string) => escrow.connect(verifier).marketplaceAssign(h, worker.address);
  const submit = (h: string, n = 1) => escrow.connect(worker).submitEvidence(h, hre.ethers.id(`result ${n}`));

  it("pays on passed verification", async function () {
    const task = await expectEnding(Ending.VerificationPassed, async (h) => {
      await assign(h);
      await submit(h);
      return escrow.connect(verifier).completeVerification(h, true, 95);
    });
    expect(task.status).to.equal(EscrowStatus.Verified);
  });

  it("pays on a dispute ruled for the worker", async function () {
    await expectEnding(Ending.DisputeWonByWorker, async (h) => {
      await assign(h);
      await submit(h);
      await escrow.connect(verifier).completeVerification(h, false, 10);
      await escrow.connect(worker).raiseDispute(h);
      return escrow.connect(admin).resolveDispute(h, true);
    });
  });

  it("pays unjudged work released after 14 days", async function () {
    await expectEnding(Ending.UnjudgedWorkReleased, async (h) => {
      await assign(h);
      await submit(h);
      await time.increase(DAY);
      await expect(escrow.connect(poster).claimTimeout(h)).to.emit(escrow, "UnjudgedWorkEscalated");
      await time.increase(14 * DAY);
      return escrow.connect(worker).releaseUnjudgedWork(h);
    });
  });

  it("refunds a task cancelled while open", async function () {
    const task = await expectEnding(Ending.CancelledWhileOpen, (h) => escrow.connect(poster).cancelTask(h));
    expect(task.status).to.equal(EscrowStatus.Cancelled);
  });

  it("refunds a task never delivered", async function () {
    await expectEnding(Ending.NeverDelivered, async (h) => {
      await assign(h);
      await time.increase(DAY);
      return escrow.connect(poster).claimTimeout(h);
    });
  });

  it("refunds a failed result never fixed", async function () {
    await expectEnding(Ending.FailedUnfixed, async (h) => {
      await assign(h);
      await submit(h, 1);
      await escrow.connect(verifier).completeVerification(h, false, 30);
      await submit(h, 2);
      await escrow.connect(verifier).completeVerification(h, false, 40);
      await time.increase(DAY + 3 * DAY);
      return escrow.connect(poster).claimTimeout(h);
    });
  });

  it("refunds on a dispute ruled for the poster", async function () {
    await expectEnding(Ending.DisputeWonByPoster, async (h) => {
      await assign(h);
      await escrow.connect(poster).raiseDispute(h);
      return escrow.connect(admin).resolveDispute(h, false);
    });
  });

  it("refunds a dispute left without a ruling for 14 days", async function () {
    await expectEnding(Ending.DisputeUnruled, async (h) => {
      await assign(h);
      await submit(h);
      await escrow.connect(poster).raiseDispute(h);
      await time.increase(14 * DAY);
      return escrow.connect(poster).claimTimeout(h);
    });
  });
});
