/** Small helpers shared by the escrow tests: exact timing, balances and EIP-2612 signatures. */
import { time } from "@nomicfoundation/hardhat-network-helpers";
import { expect } from "chai";
import type { AddressLike, BaseContract, ContractTransactionResponse, Signer } from "ethers";

/** The next transaction is mined at exactly `timestamp`. */
export async function atTime(timestamp: bigint | number): Promise<void> {
  await time.setNextBlockTimestamp(timestamp);
}

export async function latest(): Promise<bigint> {
  return BigInt(await time.latest());
}

/**
 * A call whose window opens at `opensAt`: at each of `closedAt` (default: one second before) it is refused with the
 * custom error `error(taskHash, opensAt)`; at `opensAt` it is sent, and its transaction is answered for the caller's
 * own assertions.
 */
export async function refusedUntil(
  escrow: BaseContract,
  taskHash: string,
  act: () => Promise<ContractTransactionResponse>,
  error: "WindowStillOpen" | "DeadlineNotReached",
  opensAt: bigint,
  closedAt: bigint[] = [opensAt - 1n],
): Promise<ContractTransactionResponse> {
  for (const at of closedAt) {
    await atTime(at);
    await expect(act()).to.be.revertedWithCustomError(escrow, error).withArgs(taskHash, opensAt);
  }
  await atTime(opensAt);
  return act();
}

interface BalanceToken {
  balanceOf(account: AddressLike): Promise<bigint>;
}

/** Token balances of several accounts, in order. */
export async function balancesOf(token: BalanceToken, accounts: (AddressLike | BaseContract)[]): Promise<bigint[]> {
  return Promise.all(accounts.map((account) => token.balanceOf(account)));
}

/** An escrow as the sweep needs it. */
interface FeeEscrow {
  accruedFees(token: AddressLike): Promise<bigint>;
  connect(runner: Signer): { sweepFees(token: AddressLike): Promise<ContractTransactionResponse> };
}

/**
 * Since 4.0.0 a payout keeps its fee in the escrow: the treasury sweeps what accrued in `token` (nothing when none
 * did), so a test can then read the balances as they stand once every fee reached the treasury. Answers the sweep.
 */
export async function sweepFees(escrow: FeeEscrow, treasury: Signer, token: AddressLike): Promise<bigint> {
  const fees = await escrow.accruedFees(token);
  if (fees > 0n) await (await escrow.connect(treasury).sweepFees(token)).wait();
  return fees;
}

export { signPermit } from "../../scripts/lib/permit";
