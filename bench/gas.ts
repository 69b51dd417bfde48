/**
 * Gas benchmark of the escrow (steady state, as on a live chain: the poster, the worker, the treasury and the escrow
 * already hold the token, so no transfer fills a fresh balance slot; the token already has its id and its ledger; and
 * allowances are finite so every funding updates one). Writes bench/gas.json and prints tables:
 *   - the top-level keys: every operation with the mock USDC (no reputation registry set);
 *   - `realUsdc`: the same operations with Circle's USDC (FiatTokenV2_2 behind FiatTokenProxy, deployed as Circle
 *     does), side by side with the mock in the printed table;
 *   - `wholeTask`: a whole task on Circle's USDC (createTask + submitEvidence + a passing verdict) and on the mock,
 *     beside issue 30's goals (whole task <= 220,000 and createTask <= 100,000 on Circle's USDC);
 *   - `before`: the same on Circle's USDC with the previous release (3.0.0, contracts/test/v3), measured in the same
 *     run, and `upgradedFromPrevious`: the current version on a proxy deployed at 3.0.0 and upgraded by the upgrade
 *     code (it keeps looking up tasks funded before 3.0.0, and reads the registry's slot until one is set again);
 *   - `reputation`: each settlement that writes the reputation registry on 1.0.0, on 2.0.0 and on the current version
 *     without a registry, and on the current version with TaskReputation set (a worker's first write, which fills a
 *     fresh storage slot, and a later one), with the gas each write adds;
 *   - `machine`: the load average, cores and calibration loops of bench/lib/machine.ts, as every bench writes them
 *     (gas itself does not depend on the machine, so no figure is divided by them).
 *   npm run bench:gas
 */
import { writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import path from "node:path";
import hre from "hardhat";
import { time } from "@nomicfoundation/hardhat-network-helpers";
import type { ContractTransactionResponse, Signer } from "ethers";
import { deployEscrow, upgradeEscrow } from "../deploy/escrow";
import { deployRegistries } from "../deploy/registries";
import { USDC_DOMAIN_VERSION, deployUsdc } from "../deploy/usdc";
import { signPermit } from "../scripts/lib/permit";
import { MockUSDC__factory, type TaskEscrow } from "../typechain-types";
import { machineFigures } from "./lib/machine";

const BARS: Record<string, number> = {
  createTask: 125_000,
  createTasks20PerTask: 65_000,
  submitEvidence: 60_000,
  completeVerificationPass: 100_000,
};
/** Goal per settlement for a later reputation write (issue 13). */
const REPUTATION_WRITE_BAR = 30_000;
/** Issue 30's goals on Circle's USDC: printed beside the figures; the bars above are the ones that fail the run. */
const REAL_USDC_GOALS = { createTask: 100_000, wholeTask: 220_000 };
const WHOLE_TASK = ["createTask", "submitEvidence", "completeVerificationPass"] as const;
/** The release before the current one, measured beside it: its source as kept in contracts/test/v3. */
const PREVIOUS = { version: "3.0.0", contract: "TaskEscrowV3" };
const AMOUNT = 1_000_000n;
const DAY = 86_400n;

type Gas = Record<string, number>;

/** A settlement token as the benchmark drives it. */
interface BenchToken {
  address: string;
  /** Gives `to` tokens out of thin air (the mock's open mint, USDC's minter). */
  mint(to: string, amount: bigint): Promise<void>;
  approve(owner: Signer, spender: string, amount: bigint): Promise<void>;
  signPermit(owner: Signer & { address: string }, spender: string, value: bigint): Promise<{ v: number; r: string; s: string }>;
}

async function signers() {
  const all = await hre.ethers.getSigners();
  const [admin, verifier, treasury, poster, worker, agentVerifier] = all;
  /** One worker per writing settlement, so each one's first write fills a fresh reputation slot. */
  const settlementWorkers = all.slice(9, 13);
  if (!admin || !verifier || !treasury || !poster || !worker || !agentVerifier || settlementWorkers.length !== 4) {
    throw new Error("needs 13 accounts");
  }
  return { all, admin, verifier, treasury, poster, worker, agentVerifier, settlementWorkers };
}

async function mockToken(): Promise<BenchToken> {
  const { admin } = await signers();
  const mock = await new MockUSDC__factory(admin).deploy();
  await mock.waitForDeployment();
  const address = await mock.getAddress();
  return {
    address,
    mint: async (to, amount) => void (await (await mock.mint(to, amount)).wait()),
    approve: async (owner, spender, amount) => void (await (await mock.connect(owner).approve(spender, amount)).wait()),
    signPermit: (owner, spender, value) => signPermit(mock, owner, spender, value, hre.ethers.MaxUint256),
  };
}

async function realUsdc(): Promise<BenchToken> {
  const { all } = await signers();
  const [deployer, proxyAdmin, owner, masterMinterOwner, controller, minter] = all.slice(13, 19);
  if (!deployer || !proxyAdmin || !owner || !masterMinterOwner || !controller || !minter) throw new Error("needs 19 accounts");
  const usdc = await deployUsdc(hre, { deployer, proxyAdmin, owner, masterMinterOwner, controller, minter });
  return {
    address: usdc.address,
    mint: (to, amount) => usdc.mint(to, amount),
    approve: async (holder, spender, amount) => void (await (await usdc.token.connect(holder).approve(spender, amount)).wait()),
    signPermit: (holder, spender, value) =>
      signPermit(usdc.token.connect(holder), holder, spender, value, hre.ethers.MaxUint256, USDC_DOMAIN_VERSION),
  };
}

const used = async (tx: Promise<ContractTransactionResponse>) => Number((await (await tx).wait())!.gasUsed);
let hashes = 0;
const nextHash = () => hre.ethers.id(`bench-${hashes++}`);

/** One full cycle (fund, assign, deliver, pass): the token's id and ledger exist afterwards, as in steady state. */
async function cycle(escrow: TaskEscrow, token: BenchToken) {
  const { poster, worker, verifier } = await signers();
  const warm = nextHash();
  await (await escrow.connect(poster).createTask(warm, token.address, AMOUNT, DAY, hre.ethers.ZeroAddress)).wait();
  await (await escrow.connect(verifier).marketplaceAssign(warm, worker.address)).wait();
  await (await escrow.connect(worker).submitEvidence(warm, hre.ethers.id("r"))).wait();
  await (await escrow.connect(verifier).completeVerification(warm, true, 100)).wait();
}

/**
 * An escrow taking `token`, in steady state: the poster, the workers, the treasury and the escrow hold the token (no
 * transfer fills a fresh balance slot, as on a live chain), and one full cycle has run. `upgrade` deploys `contract`
 * (the previous release) and upgrades it to the current source with the upgrade code, after a cycle on each.
 */
async function steadyEscrow(token: BenchToken, contract?: string, upgrade = false) {
  const { poster, worker, treasury, settlementWorkers } = await signers();
  const deployed = await deployEscrow(hre, { save: false, token: token.address, contract });
  let { escrow } = deployed;
  const { deployment } = deployed;
  const escrowAddress = await escrow.getAddress();
  await token.mint(poster.address, 10n ** 15n);
  for (const account of [worker, treasury, ...settlementWorkers]) await token.mint(account.address, 1n);
  await token.mint(escrowAddress, 1n); // the escrow's balance slot is never fresh in steady state
  await token.approve(poster, escrowAddress, 10n ** 14n);
  await cycle(escrow, token);
  // The poster has used a permit before (its nonce slot is not fresh), whichever escrow is measured first.
  const sig = await token.signPermit(poster, escrowAddress, AMOUNT);
  const warm = escrow
    .connect(poster)
    .createTaskWithPermit(nextHash(), token.address, AMOUNT, DAY, hre.ethers.ZeroAddress, hre.ethers.MaxUint256, sig.v, sig.r, sig.s);
  await (await warm).wait();
  await token.approve(poster, escrowAddress, 10n ** 14n);
  if (upgrade) {
    ({ escrow } = await upgradeEscrow(hre, { deployment, save: false }));
    await cycle(escrow, token);
  }
  return { escrow, deployment };
}

/** Every operation once, in steady state. */
async function operations(token: BenchToken, contract?: string, upgrade = false): Promise<Gas> {
  const { poster, worker, verifier, agentVerifier, treasury } = await signers();
  const { escrow } = await steadyEscrow(token, contract, upgrade);
  const escrowAddress = await escrow.getAddress();
  const asPoster = escrow.connect(poster);
  const none = hre.ethers.ZeroAddress;
  const gas: Gas = {};

  const h = nextHash();
  gas.createTask = await used(asPoster.createTask(h, token.address, AMOUNT, DAY, none));
  gas.createTaskWithVerifier = await used(asPoster.createTask(nextHash(), token.address, AMOUNT, DAY, agentVerifier.address));
  for (const size of [1, 5, 20]) {
    const batch = Array.from({ length: size }, () => ({
      taskHash: nextHash(),
      token: token.address,
      amount: AMOUNT,
      duration: DAY,
      verifier: none,
    }));
    gas[`createTasks${size}PerTask`] = Math.round((await used(asPoster.createTasks(batch))) / size);
  }

  const sig = await token.signPermit(poster, escrowAddress, AMOUNT);
  gas.createTaskWithPermit = await used(
    asPoster.createTaskWithPermit(nextHash(), token.address, AMOUNT, DAY, none, hre.ethers.MaxUint256, sig.v, sig.r, sig.s),
  );
  await token.approve(poster, escrowAddress, 10n ** 14n); // the permit replaced the allowance

  gas.marketplaceAssign = await used(escrow.connect(verifier).marketplaceAssign(h, worker.address));
  gas.submitEvidence = await used(escrow.connect(worker).submitEvidence(h, hre.ethers.id("first")));
  gas.completeVerificationFail = await used(escrow.connect(verifier).completeVerification(h, false, 20));
  gas.submitEvidenceSecondRound = await used(escrow.connect(worker).submitEvidence(h, hre.ethers.id("second")));
  gas.completeVerificationPass = await used(escrow.connect(verifier).completeVerification(h, true, 90));

  const open = nextHash();
  await (await asPoster.createTask(open, token.address, AMOUNT, DAY, none)).wait();
  gas.cancelTask = await used(asPoster.cancelTask(open));

  const lapsed = nextHash();
  await (await asPoster.createTask(lapsed, token.address, AMOUNT, 3600n, none)).wait();
  await (await escrow.connect(verifier).marketplaceAssign(lapsed, worker.address)).wait();
  const unjudged = nextHash();
  await (await asPoster.createTask(unjudged, token.address, AMOUNT, 3600n, none)).wait();
  await (await escrow.connect(verifier).marketplaceAssign(unjudged, worker.address)).wait();
  await (await escrow.connect(worker).submitEvidence(unjudged, hre.ethers.id("unjudged"))).wait();
  await time.increase(3600);
  gas.claimTimeout = await used(asPoster.claimTimeout(lapsed));
  gas.claimTimeoutEscalate = await used(asPoster.claimTimeout(unjudged));
  await time.increase(14 * 86_400);
  gas.releaseUnjudgedWork = await used(escrow.connect(worker).releaseUnjudgedWork(unjudged));
  // 4.0.0: the fees kept by the payouts above go to the treasury in one transfer (3.0.0 paid them one by one).
  if ((await escrow.version()) !== PREVIOUS.version) gas.sweepFees = await used(escrow.connect(treasury).sweepFees(token.address));
  return gas;
}

const SETTLEMENTS = ["completeVerificationPass", "resolveDisputeForWorker", "releaseUnjudgedWork", "resolveDisputeForPoster"] as const;
type Settlement = (typeof SETTLEMENTS)[number];

/** The four settlements that write reputation, each once, each paying a worker of its own. */
async function settlements(escrow: TaskEscrow, token: BenchToken) {
  const { admin, poster, verifier, settlementWorkers } = await signers();
  const asPoster = escrow.connect(poster);
  const none = hre.ethers.ZeroAddress;
  const gas = {} as Record<Settlement, number>;
  let worker = settlementWorkers[0]!;
  const task = async (index: number, duration = DAY) => {
    worker = settlementWorkers[index]!;
    const hash = nextHash();
    await (await asPoster.createTask(hash, token.address, AMOUNT, duration, none)).wait();
    await (await escrow.connect(verifier).marketplaceAssign(hash, worker.address)).wait();
    return hash;
  };

  const passed = await task(0);
  await (await escrow.connect(worker).submitEvidence(passed, hre.ethers.id("r"))).wait();
  gas.completeVerificationPass = await used(escrow.connect(verifier).completeVerification(passed, true, 90));

  const won = await task(1);
  await (await escrow.connect(worker).submitEvidence(won, hre.ethers.id("r"))).wait();
  await (await escrow.connect(verifier).completeVerification(won, false, 10)).wait();
  await (await escrow.connect(worker).raiseDispute(won)).wait();
  gas.resolveDisputeForWorker = await used(escrow.connect(admin).resolveDispute(won, true));

  const unjudged = await task(2, 3600n);
  await (await escrow.connect(worker).submitEvidence(unjudged, hre.ethers.id("r"))).wait();
  await time.increase(3600);
  await (await asPoster.claimTimeout(unjudged)).wait();
  await time.increase(14 * 86_400);
  gas.releaseUnjudgedWork = await used(escrow.connect(worker).releaseUnjudgedWork(unjudged));

  const lost = await task(3);
  await (await asPoster.raiseDispute(lost)).wait();
  gas.resolveDisputeForPoster = await used(escrow.connect(admin).resolveDispute(lost, false));
  return gas;
}

/**
 * Each writing settlement on 1.0.0, 2.0.0 and 3.0.0, on the current version without a registry, and with
 * TaskReputation. Since 4.0.0 a settlement keeps the fee in the escrow instead of transferring it.
 */
async function reputationWrites() {
  const token = await mockToken();
  const v1 = await settlements((await steadyEscrow(token, "TaskEscrowV1")).escrow, token);
  const v2 = await settlements((await steadyEscrow(token, "TaskEscrowV2")).escrow, token);
  const v3 = await settlements((await steadyEscrow(token, PREVIOUS.contract)).escrow, token);
  const unset = await settlements((await steadyEscrow(token)).escrow, token);
  const { escrow: setEscrow, deployment } = await steadyEscrow(token);
  await deployRegistries(hre, { deployment, save: false });
  // Each settlement's worker has no reputation yet: its first write fills a fresh slot; the second run updates it.
  const firstWrite = await settlements(setEscrow, token);
  const laterWrite = await settlements(setEscrow, token);
  const operations = Object.fromEntries(
    SETTLEMENTS.map((op) => [
      op,
      {
        v1: v1[op],
        v2Unset: v2[op],
        v3Unset: v3[op],
        unset: unset[op],
        set: laterWrite[op],
        setFirstWrite: firstWrite[op],
        addedWhenUnset: unset[op] - v1[op],
        addedByWrite: laterWrite[op] - unset[op],
        addedByFirstWrite: firstWrite[op] - unset[op],
      },
    ]),
  );
  return { gasBudget: Number(await setEscrow.reputationGasLimit()), operations };
}

async function main() {
  const machine = machineFigures();
  const mock = await operations(await mockToken());
  const usdc = await realUsdc();
  const real = await operations(usdc);
  const previous = await operations(usdc, PREVIOUS.contract);
  const upgraded = await operations(usdc, PREVIOUS.contract, true);
  const reputation = await reputationWrites();
  const whole = (gas: Gas) => WHOLE_TASK.reduce((sum, op) => sum + (gas[op] ?? NaN), 0);
  const wholeTask = {
    operations: WHOLE_TASK,
    realUsdc: whole(real),
    mockUsdc: whole(mock),
    realUsdcBefore: whole(previous),
    realUsdcUpgradedFromPrevious: whole(upgraded),
    goals: { realUsdcWholeTask: REAL_USDC_GOALS.wholeTask, realUsdcCreateTask: REAL_USDC_GOALS.createTask },
  };
  const out = path.join(__dirname, "gas.json");
  // Gas does not depend on the machine; the load and the calibration are written as every bench's are.
  const figures = {
    version: await (await steadyEscrow(await mockToken())).escrow.version(),
    ...mock,
    realUsdc: real,
    wholeTask,
    before: { version: PREVIOUS.version, realUsdc: previous },
    upgradedFromPrevious: { from: PREVIOUS.version, realUsdc: upgraded },
    reputation,
    loadAverage1m: Math.round(loadavg()[0]! * 100) / 100,
    machine,
  };
  writeFileSync(out, `${JSON.stringify(figures, null, 2)}\n`);

  console.table(
    Object.entries(mock).map(([operation, gasUsed]) => ({
      operation,
      mockUsdc: gasUsed,
      realUsdc: real[operation],
      [`realUsdc ${PREVIOUS.version}`]: previous[operation] ?? "",
      [`realUsdc upgraded from ${PREVIOUS.version}`]: upgraded[operation] ?? "",
      bar: BARS[operation] ?? "",
      ok: BARS[operation] === undefined ? "" : gasUsed <= BARS[operation] ? "yes" : "NO",
    })),
  );
  const goal = (value: number, max: number) => `${value} (goal ${max}: ${value <= max ? "met" : "NOT met"})`;
  console.log(`whole task on Circle's USDC (${WHOLE_TASK.join(" + ")}): ${goal(wholeTask.realUsdc, REAL_USDC_GOALS.wholeTask)}`);
  console.log(`createTask on Circle's USDC: ${goal(real.createTask ?? NaN, REAL_USDC_GOALS.createTask)}`);
  console.log(`the same on ${PREVIOUS.version}: whole task ${wholeTask.realUsdcBefore}, createTask ${previous.createTask}`);
  console.log(
    `on a proxy upgraded from ${PREVIOUS.version}: whole task ${goal(wholeTask.realUsdcUpgradedFromPrevious, REAL_USDC_GOALS.wholeTask)}, ` +
      `createTask ${goal(upgraded.createTask ?? NaN, REAL_USDC_GOALS.createTask)}`,
  );
  console.log(`reputation writes (budget ${reputation.gasBudget} gas per write):`);
  console.table(reputation.operations);
  console.log(`written to ${out}`);
  const failed = Object.entries(BARS).filter(([k, bar]) => (mock[k] ?? Infinity) > bar);
  const heavyWrites = Object.entries(reputation.operations).filter(([, g]) => g.addedByWrite > REPUTATION_WRITE_BAR);
  if (failed.length > 0 || heavyWrites.length > 0) {
    console.error(`over the bar: ${[...failed, ...heavyWrites].map(([k]) => k).join(", ")}`);
    process.exitCode = 1;
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
