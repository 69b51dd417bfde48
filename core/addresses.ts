import { getAddress } from "ethers";

/** How many addresses `checksumAddress` remembers: the agents and wallets a busy server sees again and again. */
const REMEMBERED = 50_000;
const remembered = new Map<string, string>();

/**
 * ethers' `getAddress` (the EIP-55 checksummed form; throws for anything but an address, or a mixed-case one with a
 * wrong checksum), remembering recent answers: each costs a keccak-256, and a batch of private tasks wrapped to the
 * same 20 agents asks for the same 20 addresses hundreds of times.
 */
export function checksumAddress(address: string): string {
  let checksummed = remembered.get(address);
  if (checksummed === undefined) {
    checksummed = getAddress(address);
    if (remembered.size >= REMEMBERED) remembered.delete(remembered.keys().next().value!);
    remembered.set(address, checksummed);
  }
  return checksummed;
}
