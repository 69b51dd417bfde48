import { Signature, type Signer } from "ethers";

/** What signing a permit reads from the token. */
interface PermitToken {
  name(): Promise<string>;
  nonces(owner: string): Promise<bigint>;
  getAddress(): Promise<string>;
}

/**
 * An EIP-2612 permit signed by `owner` for `spender`, split into v, r, s. The EIP-712 domain is the token's name and
 * `version`: "1" for the mock USDC (OpenZeppelin's ERC20Permit), "2" for Circle's FiatTokenV2_2.
 */
export async function signPermit(
  token: PermitToken,
  owner: Signer & { address: string },
  spender: string,
  value: bigint,
  deadline: bigint,
  version = "1",
): Promise<{ v: number; r: string; s: string }> {
  const { chainId } = await owner.provider!.getNetwork();
  const domain = { name: await token.name(), version, chainId, verifyingContract: await token.getAddress() };
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
