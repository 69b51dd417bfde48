import type { Interface } from "ethers";
import type { Chain } from "./index";
import { asAddress, type UnsignedTx } from "@market/core/api";

/** Escrow functions users sign themselves. */
export type UserCall =
  "cancelTask" | "claimTimeout" | "raiseDispute" | "releaseUnjudgedWork" | "submitEvidence" | "completeVerification" | "releaseTask";

/** An escrow call from `from`, unsigned. */
export function unsignedCall(chain: Chain, from: string, fn: UserCall, args: readonly unknown[]): UnsignedTx {
  const data = (chain.escrow.interface as Interface).encodeFunctionData(fn, args);
  return { chainId: chain.config.chainId, from: asAddress(from), to: asAddress(chain.config.escrow), data, value: "0" };
}
