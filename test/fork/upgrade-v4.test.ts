/**
 * 3.0.0 -> 4.0.0 as an operator runs it: a local Hardhat node gets a TaskEscrow 3.0.0 deployed by deploy/deploy.ts (the
 * `arc` network from CHAIN_ARC_RPC_URL, a mock USDC as on every local chain), recorded as 3.0.0's deploy code recorded
 * it, with a task in every state (funded, assigned, submitted to a verifier agent, failed within its appeal window,
 * disputed, escalated, and the ended verified, cancelled and refunded), a finished pause and a fee changed to 2500
 * bps. deploy/upgrade.ts then upgrades it; every live task is finished with exact balances (the fees now accrue and are
 * swept), every ended one stays ended, no hash is fundable again, and a new task runs beside them.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { expect } from "chai";
import hre from "hardhat";
import { JsonRpcProvider, Wallet, type Signer } from "ethers";
import { deploymentPath, readDeployment } from "../../deploy/deployments";
import { freePort, hardhatAccountKeys, startLocalChain, type LocalChain } from "../../scripts/lib/local-chain";
import { MockUSDC__factory, TaskEscrow__factory, type MockUSDC, type TaskEscrow } from "../../typechain-types";
import { Ending, EscrowStatus as Status } from "@market/core/escrow";

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, "../..");
const CLI = require.resolve("hardhat/internal/cli/cli");
const DAY = 86_400;
const AMOUNT = 10_000_001n; // odd, so the fee rounds down
const FEE = (AMOUNT * 2500n) / 10_000n;
const PAYOUT = AMOUNT - FEE;
const NAMES = ["funded", "assigned", "submitted", "failed", "disputed", "escalated", "verified", "cancelled", "refunded"] as const;
type Name = (typeof NAMES)[number];

describe("deploy/upgrade.ts: a 3.0.0 escrow with a task in every state, upgraded to 4.0.0 and every task finished", function () {
  this.timeout(300_000);
  let chain: LocalChain;
  let node: JsonRpcProvider;
  let dir: string;

  before(async function () {
    chain = await startLocalChain({ port: await freePort(), quiet: true });
    // No response cache: a nonce read right after the previous transaction must see it.
    node = new JsonRpcProvider(chain.url, undefined, { staticNetwork: true, cacheTimeout: -1 });
    dir = mkdtempSync(path.join(tmpdir(), "market-upgrade-v4-"));
  });

  after(function () {
    node?.destroy();
    chain?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const script = (file: string, extra: NodeJS.ProcessEnv = {}) =>
    run(process.execPath, [CLI, "run", "--no-compile", "--network", "arc", file], {
      env: { ...process.env, CHAIN_ARC_RPC_URL: chain.url, DEPLOYMENTS_DIR: dir, HARDHAT_NETWORK: "", ...extra },
      cwd: ROOT,
    });

  it("upgrades through the script and finishes every task with exact balances", async function () {
    const keys = hardhatAccountKeys();
    // Plain wallets (each call awaited before the next): a refused call must not use up a nonce.
    const account = (index: number): Wallet => new Wallet(keys[index]!, node);
    const [admin, verifier, treasury, poster, worker, agent] = [0, 1, 2, 3, 4, 6].map(account) as [
      ReturnType<typeof account>,
      ReturnType<typeof account>,
      ReturnType<typeof account>,
      ReturnType<typeof account>,
      ReturnType<typeof account>,
      ReturnType<typeof account>,
    ];
    const advance = async (seconds: number) => {
      await node.send("evm_increaseTime", [seconds]);
      await node.send("evm_mine", []);
    };
    const send = async (tx: Promise<{ wait(): Promise<unknown> }>) => void (await (await tx).wait());

    // 3.0.0 deployed by the deploy script, recorded as 3.0.0's deploy code recorded it (its source was then TaskEscrow).
    await script("deploy/deploy.ts", { ESCROW_CONTRACT: "TaskEscrowV3" });
    const recorded = readDeployment("arc", dir)!;
    expect(recorded).to.deep.include({ network: "arc", contract: "TaskEscrowV3", version: "3.0.0", mockToken: true });
    writeFileSync(deploymentPath("arc", dir), `${JSON.stringify({ ...recorded, contract: "TaskEscrow" }, null, 2)}\n`);
    const as = (signer: Signer): TaskEscrow => TaskEscrow__factory.connect(recorded.proxy, signer);
    const usdc: MockUSDC = MockUSDC__factory.connect(recorded.token, admin);
    const token = recorded.token;
    const escrowAddress = recorded.proxy;

    const hash = (name: Name) => hre.ethers.id(`3.0.0 every state: ${name}`);
    await send(usdc.mint(poster.address, 100n * AMOUNT));
    await send(usdc.connect(poster).approve(escrowAddress, hre.ethers.MaxUint256));
    const create = (name: Name, judge = hre.ethers.ZeroAddress) => send(as(poster).createTask(hash(name), token, AMOUNT, DAY, judge));
    const assign = (name: Name) => send(as(verifier).marketplaceAssign(hash(name), worker.address));
    const submit = (name: Name) => send(as(worker).submitEvidence(hash(name), hre.ethers.id(name)));
    await create("escalated");
    await assign("escalated");
    await submit("escalated");
    await create("refunded");
    await send(as(admin).pause());
    await advance(3_600);
    await send(as(admin).unpause());
    await advance(DAY);
    await send(as(poster).claimTimeout(hash("escalated")));
    await send(as(poster).claimTimeout(hash("refunded")));
    await create("funded");
    await create("cancelled");
    await send(as(poster).cancelTask(hash("cancelled")));
    for (const name of ["assigned", "submitted", "failed", "disputed", "verified"] as const) {
      await create(name, name === "submitted" ? agent.address : hre.ethers.ZeroAddress);
      await assign(name);
    }
    for (const name of ["submitted", "failed", "verified"] as const) await submit(name);
    await send(as(verifier).completeVerification(hash("failed"), false, 40));
    await send(as(worker).raiseDispute(hash("disputed")));
    await send(as(admin).setFeeBps(2500));
    await send(as(verifier).completeVerification(hash("verified"), true, 90));
    const statuses = await Promise.all(NAMES.map(async (name) => Number((await as(admin).getTask(hash(name))).status)));
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
    const before = await Promise.all(NAMES.map(async (name) => Array.from(await as(admin).getTask(hash(name)))));
    expect(await as(admin).escrowed(token)).to.equal(6n * AMOUNT);

    // The upgrade, as an operator runs it: the admin is one of the node's accounts.
    const upgrade = await script("deploy/upgrade.ts");
    expect(upgrade.stdout).to.contain("upgrade to TaskEscrow validated");
    expect(upgrade.stdout).to.contain(`escrow ${escrowAddress} now runs TaskEscrow 4.0.0`);
    const record = readDeployment("arc", dir)!;
    expect(record).to.deep.include({ proxy: escrowAddress, contract: "TaskEscrow", version: "4.0.0" });
    expect(record.implementation).to.not.equal(recorded.implementation);
    const escrow = as(admin);
    expect(await escrow.version()).to.equal("4.0.0");
    // Read through: every task, the books and the allowance read as before; nothing has accrued yet.
    expect(await Promise.all(NAMES.map(async (name) => Array.from(await escrow.getTask(hash(name)))))).to.deep.equal(before);
    expect(await escrow.escrowed(token)).to.equal(6n * AMOUNT);
    expect(await escrow.isAllowedToken(token)).to.equal(true);
    expect(await escrow.accruedFees(token)).to.equal(0n);
    for (const name of NAMES) {
      await expect(as(poster).createTask(hash(name), token, AMOUNT, DAY, hre.ethers.ZeroAddress))
        .to.be.revertedWithCustomError(escrow, "TaskHashUsed")
        .withArgs(hash(name));
    }
    for (const [name, call] of [
      ["verified", () => as(admin).resolveDispute(hash("verified"), true)],
      ["cancelled", () => as(poster).cancelTask(hash("cancelled"))],
      ["refunded", () => as(poster).claimTimeout(hash("refunded"))],
    ] as const) {
      await expect(call()).to.be.revertedWithCustomError(escrow, "InvalidStatus").withArgs(hash(name), before[NAMES.indexOf(name)]![7]);
    }

    const accounts = [poster.address, worker.address, treasury.address, escrowAddress];
    const balances = () => Promise.all(accounts.map((a) => usdc.balanceOf(a)));
    const start = await balances();

    // Submitted, judged by its verifier agent; failed, delivered again and passed; disputed, ruled for the worker.
    await expect(as(verifier).completeVerification(hash("submitted"), true, 80))
      .to.be.revertedWithCustomError(escrow, "NotTaskVerifier")
      .withArgs(hash("submitted"), verifier.address);
    await expect(as(agent).completeVerification(hash("submitted"), true, 80))
      .to.emit(escrow, "TaskCompleted")
      .withArgs(hash("submitted"), worker.address, PAYOUT, FEE, Ending.VerificationPassed);
    await expect(as(worker).submitEvidence(hash("failed"), hre.ethers.id("round 2")))
      .to.emit(escrow, "EvidenceSubmitted")
      .withArgs(hash("failed"), worker.address, hre.ethers.id("round 2"), 2);
    await expect(as(verifier).completeVerification(hash("failed"), true, 70))
      .to.emit(escrow, "TaskCompleted")
      .withArgs(hash("failed"), worker.address, PAYOUT, FEE, Ending.VerificationPassed);
    await expect(as(admin).resolveDispute(hash("disputed"), true))
      .to.emit(escrow, "TaskCompleted")
      .withArgs(hash("disputed"), worker.address, PAYOUT, FEE, Ending.DisputeWonByWorker);
    // Funded: cancelled. Then past every deadline and the ruling window: the assigned task was never delivered, and
    // the escalated work is released to the worker.
    await expect(as(poster).cancelTask(hash("funded")))
      .to.emit(escrow, "TaskCancelled")
      .withArgs(hash("funded"), poster.address, AMOUNT, Ending.CancelledWhileOpen);
    await advance(15 * DAY);
    await expect(as(poster).claimTimeout(hash("assigned")))
      .to.emit(escrow, "DeadlineExpired")
      .withArgs(hash("assigned"), poster.address, AMOUNT, Ending.NeverDelivered);
    await expect(as(worker).releaseUnjudgedWork(hash("escalated")))
      .to.emit(escrow, "TaskCompleted")
      .withArgs(hash("escalated"), worker.address, PAYOUT, FEE, Ending.UnjudgedWorkReleased);

    // Four payouts kept their fees in the escrow; the treasury sweeps them in one transfer.
    const settled = await balances();
    expect(settled.map((b, i) => b - start[i]!)).to.deep.equal([2n * AMOUNT, 4n * PAYOUT, 0n, -(2n * AMOUNT + 4n * PAYOUT)]);
    expect(await escrow.accruedFees(token)).to.equal(4n * FEE);
    await expect(as(treasury).sweepFees(token))
      .to.emit(escrow, "FeesSwept")
      .withArgs(token, treasury.address, 4n * FEE);
    const end = await balances();
    expect(end.map((b, i) => b - start[i]!)).to.deep.equal([2n * AMOUNT, 4n * PAYOUT, 4n * FEE, -(6n * AMOUNT)]);
    expect(await escrow.escrowed(token)).to.equal(0n);
    expect(await escrow.accruedFees(token)).to.equal(0n);
    for (const name of NAMES) expect((await escrow.getTask(hash(name))).ending, name).to.not.equal(Ending.None);

    // A new task beside them, from funding to a swept fee.
    const fresh = hre.ethers.id("4.0.0: a new task");
    await send(as(poster).createTask(fresh, token, AMOUNT, DAY, hre.ethers.ZeroAddress));
    await send(as(verifier).marketplaceAssign(fresh, worker.address));
    await send(as(worker).submitEvidence(fresh, hre.ethers.id("fresh")));
    await expect(as(verifier).completeVerification(fresh, true, 100))
      .to.emit(escrow, "TaskCompleted")
      .withArgs(fresh, worker.address, PAYOUT, FEE, Ending.VerificationPassed);
    await send(as(treasury).sweepFees(token));
    expect(await usdc.balanceOf(escrowAddress)).to.equal(0n);
  });
});
