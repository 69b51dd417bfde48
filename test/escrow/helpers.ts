/** Small helpers shared by the escrow tests: exact timing, balances and EIP-2612 signatures. */
import { time } from "@nomicfoundation/hardhat-network-helpers";
import { expect } from "chai";
import type { AddressLike, BaseContract, ContractTransactionResponse } from "ethers";

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

export { signPermit } from "../../scripts/lib/permit";
