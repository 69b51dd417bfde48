import {
  getAddress,
  isError,
  JsonRpcProvider,
  Transaction,
  Wallet,
  type JsonRpcApiProvider,
  type TransactionLike,
  type TransactionReceipt,
} from "ethers";
import { IERC20__factory } from "../../typechain-types/factories/@openzeppelin/contracts/token/ERC20/IERC20__factory";
import { TaskEscrow__factory } from "../../typechain-types/factories/contracts/TaskEscrow__factory";
import type { ChainName } from "@market/core/chains";
import { CHAIN_NAMES } from "@market/core/chains";
import { clientError, type ApiError } from "./errors";
import { decodeRevert, isCallRevert } from "@market/core/revert";
import type { Settlement, UnsignedTx } from "@market/core/api";

/** One chain as GET /api/v1/health/settlement reports it, and a transaction the API builds: the API's own types. */
export type { Settlement, UnsignedTx } from "@market/core/api";

export type RpcUrls = Partial<Record<ChainName, string>>;
export type PinnedEscrows = Partial<Record<ChainName, string>>;

export const escrowInterface = TaskEscrow__factory.createInterface();
export const erc20Interface = IERC20__factory.createInterface();

const ENV_NAME: Record<ChainName, string> = { arc: "ARC", "0g": "0G", base: "BASE" };

/** Escrow addresses the client trusts, from `MARKET_ESCROW_<CHAIN>` (ARC, 0G, BASE) unless given. */
export function pinnedEscrowsFromEnv(env: NodeJS.ProcessEnv = process.env): PinnedEscrows {
  const pinned: PinnedEscrows = {};
  for (const chain of CHAIN_NAMES) {
    const value = env[`MARKET_ESCROW_${ENV_NAME[chain]}`];
    if (value) pinned[chain] = getAddress(value);
  }
  return pinned;
}

/** RPC URLs from `MARKET_RPC_<CHAIN>` (ARC, 0G, BASE); there is no default RPC. */
export function rpcUrlsFromEnv(env: NodeJS.ProcessEnv = process.env): RpcUrls {
  const urls: RpcUrls = {};
  for (const chain of CHAIN_NAMES) {
    const value = env[`MARKET_RPC_${ENV_NAME[chain]}`];
    if (value) urls[chain] = value;
  }
  return urls;
}

/**
 * The wallet on one chain, behind the transaction guard: it signs only a transaction that is exactly the call the
 * client itself computed, for the chain its own RPC answers for, to the escrow it pinned.
 */
export interface ChainWallet {
  chain: ChainName;
  chainId: number;
  escrow: string;
  token: string;
  /** The signing account: a local key's `Wallet`, or a browser wallet's account (sdk/src/injected.ts). */
  wallet: { readonly address: string };
  /** Reads and receipts: the RPC URL's provider, or the browser wallet's own (EIP-1193). */
  provider: JsonRpcApiProvider;
  /**
   * Checks the API's transaction against the expected call, then signs and sends the expected call; with `nonce`,
   * exactly at that nonce (a caller that journaled the nonce can later tell whether the transaction was sent). With
   * `gasLimit` (a caller's guess, e.g. from a like call's receipt) the call is run once at that limit instead of
   * estimating its gas (a node's estimate runs it many times); see SendOptions.
   */
  send(unsigned: UnsignedTx | null | undefined, expected: { to: string; data: string }, options?: SendOptions): Promise<TransactionReceipt>;
  /** The wallet's native balance and what `gas` units cost at the chain's current max fee (what a send would need). */
  gasCost(gas: bigint): Promise<{ balance: bigint; need: bigint }>;
}

export interface SendOptions {
  /** Sign at exactly this nonce (default: the wallet's pending nonce). */
  nonce?: number;
  /**
   * The gas limit to sign with when the call, run once at the pending block with exactly this limit, succeeds: the
   * same check the estimate makes (a refusal is found before anything is sent) without its search for the least gas.
   * When that run fails (too little gas, or a refusal), the gas is estimated as without it, and a refusal reported
   * from the estimate.
   */
  gasLimit?: bigint;
}

/** Gas units a worker keeps for one delivery's submitEvidence (39,845 measured, bench/gas.json), with room to spare. */
export const EVIDENCE_GAS = 100_000n;

/**
 * An error's text without what ethers appends to it: the request's payload, which for a broadcast is the whole signed
 * transaction in hex (never printed), and the node's raw answer.
 */
export function plainMessage(error: unknown): string {
  const text = (error as { shortMessage?: string }).shortMessage ?? (error as Error).message ?? String(error);
  return text.replace(/0x[0-9a-fA-F]{130,}/g, "0x…");
}

/** INSUFFICIENT_GAS when the node refused a transaction for want of native gas (nothing was sent), else undefined. */
function gasRefusal(error: unknown, wallet: string, chain: ChainName): ApiError | undefined {
  const text = `${(error as { shortMessage?: string }).shortMessage ?? ""} ${(error as Error).message ?? ""}`;
  if (!isError(error, "INSUFFICIENT_FUNDS") && !/insufficient funds|sender doesn't have enough funds/i.test(text)) return undefined;
  return clientError(
    "INSUFFICIENT_GAS",
    `Wallet ${wallet} has too little native gas on ${chain} for this transaction; nothing was sent. Send it gas (docs/hosted-agents.md, "Gas").`,
  );
}

/**
 * Gas signed above what the call was found to need (an estimate, or a caller's limit the call ran at). A node's
 * estimate is the least gas the call needs in the state it ran in, and ethers signs it as it is; another wallet's
 * transaction mined before this one can make the same call dearer: a storage write that finds its slot zero costs
 * 20,000 gas where a non-zero one costs 2,900 (EIP-2200, EIP-3529). A funding writes the escrow's balance in the
 * token: estimated while the escrow held another poster's task and mined after that task was paid out, it needs 17,100
 * more and runs out of gas (bench/security.ts at load 17: 1 post in 13). Room for two such writes; gas signed but not
 * used is not paid.
 */
export const STATE_GAS_MARGIN = 40_000n;

/**
 * The gas limit to sign for a call that ran within `gas`: STATE_GAS_MARGIN above it, and never more than twice it (a
 * wallet must hold the limit's worth of gas: the hosted agents' gas sponsor tops a wallet up to twice the estimate).
 */
export function withGasMargin(gas: bigint): bigint {
  return gas + (gas < STATE_GAS_MARGIN ? gas : STATE_GAS_MARGIN);
}

/**
 * TX_REVERTED for a transaction that was mined and reverted (its receipt says so), with the reason when it can be
 * told: the escrow's or the token's custom error in the node's answer `cause`, else the call run again at the block
 * before (`reason` is the error's name), or out of gas when it used (nearly) all its limit. Nothing was paid but its gas.
 */
export async function minedRevert(
  provider: JsonRpcApiProvider,
  receipt: TransactionReceipt,
  tx: { from: string; to: string; data: string; gasLimit: bigint },
  cause: unknown,
  contract: "escrow" | "token",
): Promise<ApiError> {
  const decode = (error: unknown) => decodeRevert(escrowInterface, error) ?? decodeRevert(erc20Interface, error);
  let decoded = cause === undefined ? undefined : decode(cause);
  // All but 1/64 of the gas left is what a call forwards: a call that ran out inside the token leaves at most that.
  const outOfGas = !decoded && receipt.gasUsed * 64n >= tx.gasLimit * 63n;
  if (!decoded && !outOfGas && receipt.blockNumber > 0) {
    decoded = await provider
      .call({ ...tx, blockTag: receipt.blockNumber - 1 })
      .then(() => undefined, decode)
      .catch(() => undefined);
  }
  const what = decoded
    ? `${decoded.name}(${decoded.args.map(String).join(", ")})`
    : outOfGas
      ? `out of gas (used ${receipt.gasUsed} of its limit ${tx.gasLimit})`
      : "a revert without a reason";
  const body = decoded
    ? { reason: decoded.name, revert: { name: decoded.name, args: decoded.args.map(String) } }
    : outOfGas
      ? { reason: "OutOfGas" }
      : {};
  return clientError("TX_REVERTED", `Transaction ${receipt.hash} was mined and the ${contract} reverted it: ${what}; it paid nothing but its gas.`, {
    txHash: receipt.hash,
    ...body,
  });
}

/** How long a sent transaction's receipt is awaited before it counts as unconfirmed (`TX_UNCONFIRMED`). */
export const DEFAULT_CONFIRM_TIMEOUT_MS = 300_000;

export async function connectChain(
  settlement: Settlement,
  privateKey: string,
  rpcUrls: RpcUrls,
  pinned: PinnedEscrows,
  connection: { confirmTimeoutMs?: number; beforeSend?: (tx: { chain: ChainName; from: string; to: string; data: string }) => Promise<void> } = {},
): Promise<ChainWallet> {
  const chain = settlement.chain;
  const rpcUrl = rpcUrls[chain];
  if (!rpcUrl) throw clientError("WRONG_RPC", `No RPC URL for ${chain}: set rpcUrls.${chain} (MARKET_RPC_${ENV_NAME[chain]}).`);
  const pinnedEscrow = pinned[chain];
  if (!pinnedEscrow)
    throw clientError("ESCROW_NOT_PINNED", `No pinned escrow for ${chain}: set escrows.${chain} (MARKET_ESCROW_${ENV_NAME[chain]}).`);
  if (getAddress(pinnedEscrow) !== getAddress(settlement.escrowAddress)) {
    throw clientError("ESCROW_MISMATCH", `The service names escrow ${settlement.escrowAddress} on ${chain}; the client pinned ${pinnedEscrow}.`);
  }
  // No response cache: consecutive transactions must see the nonce the previous one used.
  const provider = new JsonRpcProvider(rpcUrl, undefined, { staticNetwork: true, batchMaxCount: 1, cacheTimeout: -1 });
  let chainId: bigint;
  try {
    chainId = (await provider.getNetwork()).chainId;
  } catch (cause) {
    provider.destroy();
    throw clientError("WRONG_RPC", `The RPC for ${chain} (${rpcUrl}) does not answer: ${(cause as Error).message}`);
  }
  if (chainId !== BigInt(settlement.chainId)) {
    provider.destroy();
    throw clientError("WRONG_RPC", `The RPC for ${chain} answers for chain ${chainId}, not ${settlement.chainId}.`);
  }
  const wallet = new Wallet(privateKey, provider);
  const escrow = getAddress(settlement.escrowAddress);
  // One transaction at a time per wallet: each takes the nonce after the previous one is mined.
  let queue: Promise<unknown> = Promise.resolve();

  /**
   * The transaction with `gasLimit`, its nonce and fees, once the call ran at the pending block with exactly that
   * limit (one run, where an estimate runs it many times); undefined when that run failed, for the caller to estimate.
   */
  async function populateAtLimit(
    call: { to: string; data: string; value: bigint; chainId: number; nonce?: number },
    gasLimit: bigint,
  ): Promise<TransactionLike<string> | undefined> {
    const from = wallet.address;
    const ran = provider.call({ from, to: call.to, data: call.data, gasLimit, blockTag: "pending" }).then(
      () => true,
      () => false,
    );
    const [ok, nonce, fees] = await Promise.all([ran, call.nonce ?? wallet.getNonce("pending"), provider.getFeeData()]);
    if (!ok) return undefined;
    gasLimit = withGasMargin(gasLimit);
    const priced =
      fees.maxFeePerGas !== null && fees.maxPriorityFeePerGas !== null
        ? { type: 2, maxFeePerGas: fees.maxFeePerGas, maxPriorityFeePerGas: fees.maxPriorityFeePerGas }
        : { type: 0, gasPrice: fees.gasPrice };
    return { ...call, from, nonce, gasLimit, ...priced };
  }

  return {
    chain,
    chainId: settlement.chainId,
    escrow,
    token: getAddress(settlement.token),
    wallet,
    provider,
    async send(unsigned, expected, options = {}) {
      if (unsigned) guard(unsigned, { chainId: settlement.chainId, from: wallet.address, to: expected.to, data: expected.data, escrow });
      const nonce = options.nonce === undefined ? {} : { nonce: options.nonce };
      const run = queue.then(async () => {
        await connection.beforeSend?.({ chain, from: wallet.address, to: expected.to, data: expected.data });
        const call = { to: expected.to, data: expected.data, value: 0n, chainId: settlement.chainId, ...nonce };
        // Signed before it is broadcast, so its hash is known whatever happens next: a transaction that may be mined
        // is never reported as not sent.
        let populated: TransactionLike<string> | undefined;
        try {
          if (options.gasLimit !== undefined) populated = await populateAtLimit(call, options.gasLimit);
          if (!populated) {
            populated = await wallet.populateTransaction(call);
            populated.gasLimit = withGasMargin(BigInt(populated.gasLimit!));
          }
        } catch (cause) {
          // Estimating gas ran the call: a revert is the contract's refusal, nothing was sent.
          throw revertError(cause, expected.to === escrow ? "escrow" : "token") ?? gasRefusal(cause, wallet.address, chain) ?? cause;
        }
        const signed = await wallet.signTransaction(populated);
        const txHash = Transaction.from(signed).hash!;
        const contract = expected.to === escrow ? "escrow" : "token";
        const sentTx = { from: wallet.address, to: expected.to, data: expected.data, gasLimit: BigInt(populated.gasLimit!) };
        let receipt: TransactionReceipt | null;
        try {
          // The node's answer to the broadcast, then the receipt at once: a node that mines on receipt (a local
          // chain) has it already; else it is awaited.
          await provider.send("eth_sendRawTransaction", [signed]);
          receipt =
            (await provider.getTransactionReceipt(txHash)) ??
            (await provider.waitForTransaction(txHash, 1, connection.confirmTimeoutMs ?? DEFAULT_CONFIRM_TIMEOUT_MS));
        } catch (cause) {
          // The node refused it for want of gas: it was never sent.
          const refused = gasRefusal(cause, wallet.address, chain);
          if (refused) throw refused;
          // A node that mines on receipt answers a transaction that reverted with an error: its receipt proves it was
          // mined and reverted. Without a receipt it may still be mined: its hash is reported, never "not sent".
          const mined = await provider.getTransactionReceipt(txHash).catch(() => null);
          if (mined && mined.status === 0) throw await minedRevert(provider, mined, sentTx, cause, contract);
          if (mined && mined.status === 1) return mined;
          throw clientError("TX_UNCONFIRMED", `Transaction ${txHash} was sent but not confirmed: ${plainMessage(cause)}`, { txHash });
        }
        if (!receipt) throw clientError("TX_UNCONFIRMED", `Transaction ${txHash} was sent but not confirmed in time.`, { txHash });
        if (receipt.status !== 1) throw await minedRevert(provider, receipt, sentTx, undefined, contract);
        return receipt;
      });
      queue = run.catch(() => undefined);
      return run;
    },
    async gasCost(gas) {
      const [balance, fees] = await Promise.all([provider.getBalance(wallet.address), provider.getFeeData()]);
      return { balance, need: gas * (fees.maxFeePerGas ?? fees.gasPrice ?? 0n) };
    },
  };
}

/**
 * The client's error for a call the chain refused before anything was sent: the contract's custom error decoded with
 * its name and arguments (`EscrowPaused()`, `InvalidStatus(0x..., 2)`), or its revert string. `EscrowPaused` is
 * `ESCROW_PAUSED`, any other refusal `TX_REVERTED`; `reason` holds the error's name. Undefined when `error` is not a
 * revert (a node that did not answer).
 */
export function revertError(error: unknown, contract: "escrow" | "token"): ApiError | undefined {
  if (!isCallRevert(error)) return undefined;
  const decoded = decodeRevert(escrowInterface, error) ?? decodeRevert(erc20Interface, error);
  const reasonText = (error as { reason?: string | null }).reason;
  const what = decoded ? `${decoded.name}(${decoded.args.map(String).join(", ")})` : reasonText ? `"${reasonText}"` : "a revert without a reason";
  const body = decoded ? { reason: decoded.name, revert: { name: decoded.name, args: decoded.args.map(String) } } : {};
  const code = decoded?.name === "EscrowPaused" ? "ESCROW_PAUSED" : "TX_REVERTED";
  return clientError(code, `The ${contract} refused the transaction: ${what}; nothing was sent.`, body);
}

/** The transaction guard: refuses anything but exactly the expected call. */
export function guard(unsigned: UnsignedTx, expected: { chainId: number; from: string; to: string; data: string; escrow: string }) {
  if (Number(unsigned.chainId) !== expected.chainId) {
    throw clientError("WRONG_CHAIN", `The transaction is for chain ${unsigned.chainId}, not ${expected.chainId}.`);
  }
  const to = getAddress(unsigned.to);
  if (to !== getAddress(expected.to)) {
    const escrowCall = getAddress(expected.to) === expected.escrow;
    throw clientError(escrowCall ? "ESCROW_MISMATCH" : "TX_MISMATCH", `The transaction goes to ${to}, not ${expected.to}.`);
  }
  if (getAddress(unsigned.from) !== getAddress(expected.from)) {
    throw clientError("TX_MISMATCH", `The transaction is from ${unsigned.from}, not this wallet ${expected.from}.`);
  }
  if (unsigned.data.toLowerCase() !== expected.data.toLowerCase() || BigInt(unsigned.value || "0") !== 0n) {
    throw clientError("TX_MISMATCH", "The transaction is not exactly the requested call.");
  }
}
