/** Small helpers shared by the escrow tests: exact timing, balances and EIP-2612 signatures. */
import { time } from "@nomicfoundation/hardhat-network-helpers";
import type { AddressLike, BaseContract } from "ethers";

/** The next transaction is mined at exactly `timestamp`. */
export async function atTime(timestamp: bigint | number): Promise<void> {
  await time.setNextBlockTimestamp(timestamp);
}

export async function latest(): Promise<bigint> {
  return BigInt(await time.latest());
}

interface BalanceToken {
  balanceOf(account: AddressLike): Promise<bigint>;
}

/** Token balances of several accounts, in order. */
export async function balancesOf(token: BalanceToken, accounts: (AddressLike | BaseContract)[]): Promise<bigint[]> {
  return Promise.all(accounts.map((account) => token.balanceOf(account as AddressLike)));
}

export { signPermit } from "../../scripts/lib/permit";
