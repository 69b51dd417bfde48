/** Small helpers shared by the escrow tests: exact timing, balances and EIP-2612 signatures. */
import hre from "hardhat";
import { time } from "@nomicfoundation/hardhat-network-helpers";
import type { HardhatEthersSigner } from "@nomicfoundation/hardhat-ethers/signers";
import type { AddressLike, BaseContract } from "ethers";
import type { MockUSDC } from "../../typechain-types";

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

/** An EIP-2612 permit signed by `owner` for `spender`, split into v, r, s. */
export async function signPermit(
  token: MockUSDC,
  owner: HardhatEthersSigner,
  spender: string,
  value: bigint,
  deadline: bigint,
): Promise<{ v: number; r: string; s: string }> {
  const { chainId } = await hre.ethers.provider.getNetwork();
  const domain = { name: await token.name(), version: "1", chainId, verifyingContract: await token.getAddress() };
  const types = {
    Permit: [
      { name: "owner", type: "address" },
      { name: "spender", type: "address" },
      { name: "value", type: "uint256" },
      { name: "nonce", type: "uint256" },
      { name: "deadline", type: "uint256" },
    ],
  };
  const nonce = await token.nonces(owner.address);
  const signature = hre.ethers.Signature.from(
    await owner.signTypedData(domain, types, { owner: owner.address, spender, value, nonce, deadline }),
  );
  return { v: signature.v, r: signature.r, s: signature.s };
}
