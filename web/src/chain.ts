/**
 * Transactions the API builds (funding, cancel, claim, dispute), signed and sent by the injected wallet. Before the
 * wallet is asked, each one is checked against what it must be: from the signed-in wallet, on the task's chain, to
 * that chain's escrow (or, for the approval, its token), and, for a settlement call, exactly the escrow function the
 * person chose with this task's hash (encoded here from the escrow's three poster calls, contracts/TaskEscrow.sol; the
 * whole ABI would weigh more than the app). A refused prompt changes nothing.
 */
import { createPublicClient, custom, encodeFunctionData, getAddress, parseAbi, sha256, toBytes, type Hex } from "viem";
import type { Settlement, UnsignedTx } from "@market/core/api";
import { api } from "./api";
import { WalletError, walletClient } from "./wallet";

/** A refusal before or after the wallet: shown like the API's errors. */
export class ChainError extends Error {
  constructor(
    readonly code: "WRONG_CHAIN" | "UNEXPECTED_TRANSACTION" | "TX_REVERTED" | "WALLET_REFUSED" | "WRONG_WALLET",
    message: string,
  ) {
    super(message);
  }
}

/** Task hash of a public task: SHA-256 of the brief's UTF-8 bytes (core/crypto.ts `publicTaskHash`, without node:crypto). */
export const publicTaskHash = (brief: string): Hex => sha256(toBytes(brief));

export type SettleAction = "cancel" | "claim-timeout" | "dispute";
const SETTLE_FUNCTION = { cancel: "cancelTask", "claim-timeout": "claimTimeout", dispute: "raiseDispute" } as const;
const POSTER_CALLS = parseAbi([
  "function cancelTask(bytes32 taskHash)",
  "function claimTimeout(bytes32 taskHash)",
  "function raiseDispute(bytes32 taskHash)",
]);

/** The chain's escrow and token as the API publishes them (GET /api/v1/health/settlement). */
export async function settlementOf(chain: string): Promise<Settlement> {
  const found = (await api.settlement()).chains.find((c) => c.chain === chain);
  if (!found) throw new ChainError("WRONG_CHAIN", `The service settles nothing on ${chain}.`);
  return found;
}

/** Switches the wallet to `chainId` when it is elsewhere (asks the person). */
async function onChain(chainId: number) {
  const client = walletClient();
  const current = await client.getChainId();
  if (current === chainId) return;
  try {
    await client.switchChain({ id: chainId });
  } catch (error) {
    throw new ChainError(
      "WRONG_CHAIN",
      `The wallet is on chain ${current}, the task on chain ${chainId}: switch the wallet to it (${(error as Error).message}).`,
    );
  }
}

/** Sends `tx` from `from` after the checks above, and waits for its receipt (refused when it reverted). */
async function send(tx: UnsignedTx, from: string, allowedTo: readonly string[], data?: Hex): Promise<Hex> {
  if (getAddress(tx.from) !== getAddress(from))
    throw new ChainError("WRONG_WALLET", `The transaction is from ${tx.from}, not the signed-in ${from}.`);
  if (!allowedTo.some((to) => getAddress(to) === getAddress(tx.to))) {
    throw new ChainError(
      "UNEXPECTED_TRANSACTION",
      `The service asked to send a transaction to ${tx.to}, which is not the escrow or its token; nothing was sent.`,
    );
  }
  if (data !== undefined && tx.data.toLowerCase() !== data.toLowerCase()) {
    throw new ChainError("UNEXPECTED_TRANSACTION", "The service asked to sign another call than the one chosen; nothing was sent.");
  }
  await onChain(tx.chainId);
  const client = walletClient();
  let hash: Hex;
  try {
    hash = await client.sendTransaction({
      account: getAddress(from),
      chain: null,
      to: getAddress(tx.to),
      data: tx.data as Hex,
      value: BigInt(tx.value),
    });
  } catch (error) {
    if (error instanceof WalletError) throw error;
    throw new ChainError("WALLET_REFUSED", `The wallet did not send the transaction: ${(error as Error).message}`);
  }
  const reader = createPublicClient({ transport: custom(window.ethereum!) });
  const receipt = await reader.waitForTransactionReceipt({ hash, pollingInterval: 500, timeout: 300_000 });
  if (receipt.status !== "success") throw new ChainError("TX_REVERTED", `Transaction ${hash} reverted on chain.`);
  return hash;
}

/** Sends a funding plan's transactions in order (the approval, then the funding); answers the funding's hash. */
export async function sendFunding(plan: { transactions: UnsignedTx[]; chain: string; from: string }): Promise<Hex> {
  const settlement = await settlementOf(plan.chain);
  let last: Hex | undefined;
  for (const tx of plan.transactions) last = await send(tx, plan.from, [settlement.escrowAddress, settlement.token]);
  if (!last) throw new ChainError("UNEXPECTED_TRANSACTION", "The service built no transaction.");
  return last;
}

/** A poster's settlement call (cancel, claim after the deadline, dispute), built by the API and checked here. */
export async function sendSettlement(tx: UnsignedTx, action: SettleAction, taskHash: string, chain: string, from: string): Promise<Hex> {
  const settlement = await settlementOf(chain);
  const data = encodeFunctionData({ abi: POSTER_CALLS, functionName: SETTLE_FUNCTION[action], args: [taskHash as Hex] });
  return send(tx, from, [settlement.escrowAddress], data);
}
