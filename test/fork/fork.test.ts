/**
 * Fork test: a local Hardhat node gets the chain as production has it before this release: Circle's USDC deployed as
 * Circle deploys it, and a TaskEscrow 1.0.0 deployed by the deploy script (the `arc` network from CHAIN_ARC_RPC_URL,
 * a deployer key from DEPLOYER_PRIVATE_KEY, roles and the chain's USDC from ESCROW_*), recorded as 1.0.0's deploy
 * code recorded it, with live tasks and a credit on it. The in-process Hardhat network then forks that node; the
 * registries' deploy code (deployRegistries) upgrades the forked proxy to the current version (4.0.0) with the upgrade code, deploys the
 * identity and reputation registries and wires them; the live tasks settle, the credit is withdrawn, and all eight
 * endings are driven on real USDC and on a mock token with exact balances and the reputation they write.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { expect } from "chai";
import hre from "hardhat";
import { JsonRpcProvider, NonceManager, Wallet, type Signer } from "ethers";
import { clearSnapshots } from "@nomicfoundation/hardhat-network-helpers";
import type { HardhatEthersSigner } from "@nomicfoundation/hardhat-ethers/signers";
import { deploymentPath, readDeployment, type EscrowDeployment } from "../../deploy/deployments";
import { deployRegistries } from "../../deploy/registries";
import { connectUsdc, deployUsdc, type FiatToken } from "../../deploy/usdc";
import { freePort, hardhatAccountKeys, startLocalChain, type LocalChain } from "../../scripts/lib/local-chain";
import { MockUSDC__factory, TaskEscrowV1__factory, type MockUSDC, type TaskEscrow, type TaskReputation } from "../../typechain-types";
import { Ending, EscrowStatus } from "@market/core/escrow";
import { ENDING_DRIVES, type EndingDrive } from "../fixtures/endings";

const run = promisify(execFile);
const DAY = 86_400;
const AMOUNT = 12_345_679n; // odd, so the fee rounds down
const FEE_BPS = 1000n;
const FEE = (AMOUNT * FEE_BPS) / 10_000n;

describe("fork: a deployed 1.0.0 escrow with live tasks, upgraded to 4.0.0 with its registries, eight endings on USDC and a mock", function () {
  this.timeout(300_000);
  let chain: LocalChain;
  let dir: string;
  let deployment: EscrowDeployment;
  let escrow: TaskEscrow;
  let reputation: TaskReputation;
  let usdcAddress: string;
  let mockAddress: string;
  let usdcOwner: HardhatEthersSigner;
  let admin: HardhatEthersSigner, verifier: HardhatEthersSigner, treasury: HardhatEthersSigner;
  let poster: HardhatEthersSigner, worker: HardhatEthersSigner;
  const live = {
    funded: hre.ethers.id("fork live: funded"),
    submitted: hre.ethers.id("fork live: submitted"),
    disputed: hre.ethers.id("fork live: disputed"),
    credited: hre.ethers.id("fork live: paid to a blacklisted worker"),
  };
  let counter = 0;

  before(async function () {
    chain = await startLocalChain({ port: await freePort(), quiet: true });
    dir = mkdtempSync(path.join(tmpdir(), "market-fork-"));
    const signers = await hre.ethers.getSigners();
    [admin, verifier, treasury, poster, worker] = signers as [
      HardhatEthersSigner,
      HardhatEthersSigner,
      HardhatEthersSigner,
      HardhatEthersSigner,
      HardhatEthersSigner,
    ];
    usdcOwner = signers[15]!;

    // The chain's tokens exist before the escrow, as on arc: USDC as Circle deploys it (accounts 13 to 18 hold its
    // roles), and a mock for the second run of the endings.
    const node = new JsonRpcProvider(chain.url, undefined, { staticNetwork: true });
    const keys = hardhatAccountKeys();
    const onNode = (index: number): Signer => new NonceManager(new Wallet(keys[index]!, node));
    const usdc = await deployUsdc(hre, {
      deployer: onNode(13),
      proxyAdmin: onNode(14),
      owner: onNode(15),
      masterMinterOwner: onNode(16),
      controller: onNode(17),
      minter: onNode(18),
    });
    usdcAddress = usdc.address;
    const mock = await new MockUSDC__factory(onNode(6)).deploy();
    await mock.waitForDeployment();
    mockAddress = await mock.getAddress();

    // 1.0.0 deployed by the deploy script, from a deployer that holds no role.
    const env = {
      ...process.env,
      CHAIN_ARC_RPC_URL: chain.url,
      DEPLOYER_PRIVATE_KEY: keys[5],
      ESCROW_ADMIN: admin.address,
      ESCROW_VERIFIER: verifier.address,
      ESCROW_TREASURY: treasury.address,
      ESCROW_TOKEN: usdcAddress,
      ESCROW_CONTRACT: "TaskEscrowV1",
      DEPLOYMENTS_DIR: dir,
      HARDHAT_NETWORK: "",
    };
    const cli = require.resolve("hardhat/internal/cli/cli");
    const deploy = () =>
      run(process.execPath, [cli, "run", "--no-compile", "--network", "arc", "deploy/deploy.ts"], {
        env,
        cwd: path.resolve(__dirname, "../.."),
      });
    await deploy();
    const recorded = readDeployment("arc", dir);
    if (!recorded) throw new Error("the deploy script wrote no deployment record");
    expect(recorded).to.deep.include({
      network: "arc",
      admin: admin.address,
      verifier: verifier.address,
      treasury: treasury.address,
      token: usdcAddress,
      version: "1.0.0",
    });
    // Re-running the deploy script where a live deployment is recorded sends nothing.
    expect((await deploy()).stdout).to.contain("nothing sent");
    // The record as 1.0.0's deploy code wrote it: its source was then contracts/TaskEscrow.sol.
    deployment = { ...recorded, contract: "TaskEscrow" };
    writeFileSync(deploymentPath("arc", dir), `${JSON.stringify(deployment, null, 2)}\n`);

    // Live tasks on 1.0.0: funded, submitted, disputed, and a payout credited to a blacklisted worker.
    await usdc.mint(poster.address, 1_000n * AMOUNT);
    const v1 = (signer: Signer) => TaskEscrowV1__factory.connect(deployment.proxy, signer);
    const [asPoster, asVerifier, asWorker] = [onNode(3), onNode(1), onNode(4)];
    await (await usdc.token.connect(asPoster).approve(deployment.proxy, hre.ethers.MaxUint256)).wait();
    const none = hre.ethers.ZeroAddress;
    for (const hash of Object.values(live)) {
      await (await v1(asPoster).createTask(hash, usdcAddress, AMOUNT, 20 * DAY, none)).wait();
    }
    for (const hash of [live.submitted, live.disputed, live.credited]) {
      await (await v1(asVerifier).marketplaceAssign(hash, worker.address)).wait();
    }
    for (const hash of [live.submitted, live.credited]) {
      await (await v1(asWorker).submitEvidence(hash, hre.ethers.id(hash))).wait();
    }
    await (await v1(asPoster).raiseDispute(live.disputed)).wait();
    await (await usdc.token.connect(onNode(15)).blacklist(worker.address)).wait();
    await (await v1(asVerifier).completeVerification(live.credited, true, 70)).wait();
    expect(await v1(asWorker).creditOf(usdcAddress, worker.address)).to.equal(AMOUNT - FEE);
    node.destroy();

    await hre.network.provider.request({ method: "hardhat_reset", params: [{ forking: { jsonRpcUrl: chain.url } }] });
    // EDR refuses calls against the forked block itself until a new block exists.
    await hre.network.provider.request({ method: "hardhat_mine", params: ["0x1"] });
    await clearSnapshots();

    const lines: string[] = [];
    const result = await deployRegistries(hre, { deployment, save: false, log: (line) => lines.push(line) });
    expect(lines).to.include(`registering ${deployment.proxy} with the upgrades plugin as TaskEscrowV1`);
    expect(result.actions).to.include(`escrow ${deployment.proxy} upgraded from 1.0.0 to 4.0.0`);
    expect(result.deployment.implementation).to.not.equal(deployment.implementation);
    expect(result.deployment.reputation?.writers).to.deep.equal([deployment.proxy]);
    escrow = result.escrow;
    reputation = result.reputation;
    expect(await escrow.version()).to.equal("4.0.0");
    expect(await escrow.reputationRegistry()).to.equal(await reputation.getAddress());
  });

  after(async function () {
    await hre.network.provider.request({ method: "hardhat_reset", params: [] });
    await clearSnapshots();
    chain?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const usdcAs = (signer: HardhatEthersSigner): FiatToken => connectUsdc(usdcAddress, signer);

  it("the live tasks of 1.0.0 settle on 4.0.0, writing no reputation (their assigner is unknown), and the credit goes to its owner only", async function () {
    const usdc = usdcAs(poster);
    const before = await usdc.balanceOf(worker.address);
    expect(await escrow.creditOf(usdcAddress, worker.address)).to.equal(AMOUNT - FEE);

    await expect(escrow.connect(poster).cancelTask(live.funded))
      .to.emit(escrow, "TaskCancelled")
      .withArgs(live.funded, poster.address, AMOUNT, Ending.CancelledWhileOpen);
    // 1.0.0 did not record who assigned a worker, so 3.0.0 and later do not vouch for these outcomes (docs/escrow.md).
    await expect(escrow.connect(admin).resolveDispute(live.disputed, false))
      .to.emit(escrow, "TaskRefunded")
      .withArgs(live.disputed, poster.address, AMOUNT, Ending.DisputeWonByPoster)
      .and.not.to.emit(reputation, "DisputeRecorded");
    // Still blacklisted: the payout of the live submitted task is credited too.
    const verdict = escrow.connect(verifier).completeVerification(live.submitted, true, 90);
    await expect(verdict)
      .to.emit(escrow, "Credited")
      .withArgs(usdcAddress, worker.address, AMOUNT - FEE);
    await expect(verdict).not.to.emit(reputation, "CompletionRecorded");
    await expect(escrow.connect(worker).withdrawCredit(usdcAddress)).to.be.revertedWith("Blacklistable: account is blacklisted");
    await (await usdcAs(usdcOwner).unBlacklist(worker.address)).wait();
    await expect(escrow.connect(worker).withdrawCredit(usdcAddress))
      .to.emit(escrow, "CreditWithdrawn")
      .withArgs(usdcAddress, worker.address, worker.address, 2n * (AMOUNT - FEE));
    expect(await usdc.balanceOf(worker.address)).to.equal(before + 2n * (AMOUNT - FEE));
    expect(await escrow.escrowed(usdcAddress)).to.equal(0n);
    expect(await escrow.totalCredited(usdcAddress)).to.equal(0n);

    const summary = await reputation.summaryOf(worker.address);
    expect([summary.tasksCompleted, summary.scoreSum, summary.scoreCount, summary.disputes]).to.deep.equal([0n, 0n, 0n, 0n]);
  });

  for (const tokenName of ["real USDC", "a mock token"] as const) {
    describe(`the eight endings on ${tokenName}`, function () {
      let token: string;
      let balanceOf: (account: string) => Promise<bigint>;

      before(async function () {
        if (tokenName === "real USDC") {
          token = usdcAddress;
          balanceOf = (account) => usdcAs(poster).balanceOf(account);
        } else {
          token = mockAddress;
          await (await escrow.connect(admin).setAllowedToken(token, true)).wait();
          const mock: MockUSDC = MockUSDC__factory.connect(token, poster);
          await (await mock.mint(poster.address, 1_000n * AMOUNT)).wait();
          await (await mock.approve(deployment.proxy, hre.ethers.MaxUint256)).wait();
          balanceOf = (account) => mock.balanceOf(account);
        }
      });

      const balances = async () => ({
        poster: await balanceOf(poster.address),
        worker: await balanceOf(worker.address),
        treasury: await balanceOf(treasury.address),
        escrow: await balanceOf(deployment.proxy),
      });
      const record = async () => {
        const s = await reputation.summaryOf(worker.address);
        return { completed: s.tasksCompleted, scoreSum: s.scoreSum, disputes: s.disputes };
      };

      for (const drive of ENDING_DRIVES) {
        it(`${drive.name}: exact balances and reputation`, async function () {
          await expectEnding(drive);
        });
      }

      /** Funds a task, drives it, then checks the ending event, the balance moves and the reputation written. */
      async function expectEnding(drive: EndingDrive) {
        const taskHash = hre.ethers.id(`fork task ${counter++}`);
        await (await escrow.connect(poster).createTask(taskHash, token, AMOUNT, DAY, hre.ethers.ZeroAddress)).wait();
        // Fees accrued by earlier settlements (the live tasks') go first, so this ending's fee is counted alone.
        if ((await escrow.accruedFees(token)) > 0n) await (await escrow.connect(treasury).sweepFees(token)).wait();
        const before = await balances();
        const recordBefore = await record();
        const tx = await drive.drive({ escrow, admin, verifier, poster, worker }, taskHash);
        if (drive.payout) {
          await expect(tx)
            .to.emit(escrow, drive.event)
            .withArgs(taskHash, worker.address, AMOUNT - FEE, FEE, drive.ending);
        } else {
          await expect(tx).to.emit(escrow, drive.event).withArgs(taskHash, poster.address, AMOUNT, drive.ending);
        }
        await expect(tx).not.to.emit(escrow, "ReputationWriteFailed");
        // 4.0.0 keeps the fee in the escrow until the treasury sweeps it.
        expect(await escrow.accruedFees(token)).to.equal(drive.payout ? FEE : 0n);
        if (drive.payout) await (await escrow.connect(treasury).sweepFees(token)).wait();
        const after = await balances();
        expect(after.escrow).to.equal(before.escrow - AMOUNT);
        expect(after.poster - before.poster).to.equal(drive.payout ? 0n : AMOUNT);
        expect(after.worker - before.worker).to.equal(drive.payout ? AMOUNT - FEE : 0n);
        expect(after.treasury - before.treasury).to.equal(drive.payout ? FEE : 0n);
        const recordAfter = await record();
        expect(recordAfter.completed - recordBefore.completed).to.equal(drive.reputation.completed);
        expect(recordAfter.scoreSum - recordBefore.scoreSum).to.equal(BigInt(drive.reputation.score ?? 0));
        expect(recordAfter.disputes - recordBefore.disputes).to.equal(drive.reputation.disputes);
        const task = await escrow.getTask(taskHash);
        expect(task.ending).to.equal(drive.ending);
        if (drive.ending === Ending.VerificationPassed) expect(task.status).to.equal(EscrowStatus.Verified);
      }
    });
  }
});
