import { Signature, type Signer } from "ethers";
import type { MockUSDC } from "../../typechain-types";

/** An EIP-2612 permit signed by `owner` for `spender` on a permit token (the mock USDC), split into v, r, s. */
export async function signPermit(
  token: MockUSDC,
  owner: Signer & { address: string },
  spender: string,
  value: bigint,
  deadline: bigint,
): Promise<{ v: number; r: string; s: string }> {
  const { chainId } = await owner.provider!.getNetwork();
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
  const signature = Signature.from(await owner.signTypedData(domain, types, { owner: owner.address, spender, value, nonce, deadline }));
  return { v: signature.v, r: signature.r, s: signature.s };
}
