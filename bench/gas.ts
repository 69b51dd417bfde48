/**
 * Gas benchmark of the escrow (steady state: accounts already hold tokens, the escrow already holds a balance, and
 * allowances are finite so every funding updates one). Writes bench/gas.json and prints a table.
 *   npm run bench:gas
 */
import { writeFileSync } from "node:fs";
import path from "node:path";
import hre from "hardhat";
import { time } from "@nomicfoundation/hardhat-network-helpers";
import type { ContractTransactionResponse } from "ethers";
import { deployEscrow } from "../deploy/escrow";
import { signPermit } from "../scripts/lib/permit";
import { MockUSDC__factory } from "../typechain-types";

const BARS: Record<string, number> = {
  createTask: 125_000,
  createTasks20PerTask: 65_000,
  submitEvidence: 60_000,
  completeVerificationPass: 100_000,
};

async function main() {
  const { ethers } = hre;
  const [, verifier, , poster, worker, agentVerifier] = await ethers.getSigners();
  if (!verifier || !poster || !worker || !agentVerifier) throw new Error("needs 6 accounts");
  const { escrow, deployment } = await deployEscrow(hre, { save: false });
  const usdc = MockUSDC__factory.connect(deployment.token, poster);
  const escrowAddress = await escrow.getAddress();
  await usdc.mint(poster.address, 10n ** 15n);
  await usdc.mint(worker.address, 1n);
  await usdc.mint(escrowAddress, 1n); // the escrow's balance slot is never fresh in steady state
  await usdc.approve(escrowAddress, 10n ** 14n);

  const gas: Record<string, number> = {};
  const used = async (tx: Promise<ContractTransactionResponse>) => Number((await (await tx).wait())!.gasUsed);
  let n = 0;
  const nextHash = () => ethers.id(`bench-${n++}`);
  const amount = 1_000_000n;
  const day = 86_400n;
  const asPoster = escrow.connect(poster);

  // Warm-up: one full cycle so the treasury and worker balances exist.
  const warm = nextHash();
  await asPoster.createTask(warm, deployment.token, amount, day, ethers.ZeroAddress);
  await escrow.connect(verifier).marketplaceAssign(warm, worker.address);
  await escrow.connect(worker).submitEvidence(warm, ethers.id("r"));
  await escrow.connect(verifier).completeVerification(warm, true, 100);

  const h = nextHash();
  gas.createTask = await used(asPoster.createTask(h, deployment.token, amount, day, ethers.ZeroAddress));
  gas.createTaskWithVerifier = await used(
    asPoster.createTask(nextHash(), deployment.token, amount, day, agentVerifier.address),
  );
  for (const size of [1, 5, 20]) {
    const batch = Array.from({ length: size }, () => ({
      taskHash: nextHash(),
      token: deployment.token,
      amount,
      duration: day,
      verifier: ethers.ZeroAddress,
    }));
    gas[`createTasks${size}PerTask`] = Math.round((await used(asPoster.createTasks(batch))) / size);
  }

  const sig = await signPermit(usdc, poster, escrowAddress, amount, ethers.MaxUint256);
  gas.createTaskWithPermit = await used(
    asPoster.createTaskWithPermit(
      nextHash(), deployment.token, amount, day, ethers.ZeroAddress, ethers.MaxUint256, sig.v, sig.r, sig.s,
    ),
  );
  await usdc.approve(escrowAddress, 10n ** 14n); // the permit replaced the allowance

  gas.marketplaceAssign = await used(escrow.connect(verifier).marketplaceAssign(h, worker.address));
  gas.submitEvidence = await used(escrow.connect(worker).submitEvidence(h, ethers.id("first")));
  gas.completeVerificationFail = await used(escrow.connect(verifier).completeVerification(h, false, 20));
  gas.submitEvidenceSecondRound = await used(escrow.connect(worker).submitEvidence(h, ethers.id("second")));
  gas.completeVerificationPass = await used(escrow.connect(verifier).completeVerification(h, true, 90));

  const open = nextHash();
  await asPoster.createTask(open, deployment.token, amount, day, ethers.ZeroAddress);
  gas.cancelTask = await used(asPoster.cancelTask(open));

  const lapsed = nextHash();
  await asPoster.createTask(lapsed, deployment.token, amount, 3600n, ethers.ZeroAddress);
  await escrow.connect(verifier).marketplaceAssign(lapsed, worker.address);
  const unjudged = nextHash();
  await asPoster.createTask(unjudged, deployment.token, amount, 3600n, ethers.ZeroAddress);
  await escrow.connect(verifier).marketplaceAssign(unjudged, worker.address);
  await escrow.connect(worker).submitEvidence(unjudged, ethers.id("unjudged"));
  await time.increase(3600);
  gas.claimTimeout = await used(asPoster.claimTimeout(lapsed));
  gas.claimTimeoutEscalate = await used(asPoster.claimTimeout(unjudged));
  await time.increase(14 * 86_400);
  gas.releaseUnjudgedWork = await used(escrow.connect(worker).releaseUnjudgedWork(unjudged));

  const out = path.join(__dirname, "gas.json");
  writeFileSync(out, `${JSON.stringify(gas, null, 2)}\n`);
  console.table(
    Object.entries(gas).map(([operation, gasUsed]) => ({
      operation,
      gasUsed,
      bar: BARS[operation] ?? "",
      ok: BARS[operation] === undefined ? "" : gasUsed <= BARS[operation]! ? "yes" : "NO",
    })),
  );
  console.log(`written to ${out}`);
  const failed = Object.entries(BARS).filter(([k, bar]) => (gas[k] ?? Infinity) > bar);
  if (failed.length > 0) {
    console.error(`over the bar: ${failed.map(([k]) => k).join(", ")}`);
    process.exitCode = 1;
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
