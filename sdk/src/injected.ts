/**
 * The wallet on one chain when a browser wallet holds the key (EIP-1193: an extension's `window.ethereum`): the same
 * `ChainWallet` as a local key's (chain.ts), so the posting engine runs unchanged in a web page. The transaction guard
 * is the same: only the call the client computed itself is sent, to the escrow it pinned, on the chain the wallet
 * answers for. Reads go through the wallet's own provider (no RPC URL in the page). No Node-only module is loaded.
 */
import { BrowserProvider, getAddress, isError, type Eip1193Provider, type TransactionReceipt } from "ethers";
import { clientError } from "./errors";
import {
  DEFAULT_CONFIRM_TIMEOUT_MS,
  guard,
  minedRevert,
  plainMessage,
  revertError,
  withGasMargin,
  type ChainWallet,
  type PinnedEscrows,
  type Settlement,
} from "./chain";

export type { Eip1193Provider } from "ethers";

/** A browser wallet for `MarketClient` (`injected`): its provider, and how long a sent transaction is awaited. */
export interface InjectedWallet {
  provider: Eip1193Provider;
  /** Default 5 minutes. */
  confirmTimeoutMs?: number;
}

/** EIP-1193's code for a request the person declined in the wallet. */
const USER_REJECTED = 4001;

const hex = (n: bigint | number) => `0x${n.toString(16)}`;

/** The browser wallet's first account (asking the person to connect when the page has no account yet). */
export async function injectedAccount(ethereum: Eip1193Provider): Promise<string> {
  const accounts = (await ethereum.request({ method: "eth_requestAccounts" })) as string[];
  const account = accounts[0];
  if (!account) throw clientError("OWNER_MISMATCH", "The browser wallet shares no account with this page.");
  return getAddress(account);
}

/** Whether the wallet declined the request (the person said no): nothing was sent. */
function declined(error: unknown): boolean {
  const code = (error as { code?: unknown; error?: { code?: unknown }; info?: { error?: { code?: unknown } } }).code;
  const inner = (error as { info?: { error?: { code?: unknown } } }).info?.error?.code;
  return code === USER_REJECTED || inner === USER_REJECTED || isError(error, "ACTION_REJECTED");
}

/** Blocks searched for a transaction the wallet may have sent while it answered the request with an error. */
const SENT_SEARCH_BLOCKS = 20;

/**
 * The receipt of the transaction from `address` at `nonce` mined after block `after` (at most SENT_SEARCH_BLOCKS
 * searched), or `unknown` when that nonce is used but its transaction was not found; undefined when it is not used:
 * nothing was sent at that nonce.
 */
async function sentAt(provider: BrowserProvider, address: string, nonce: number, after: number): Promise<TransactionReceipt | "unknown" | undefined> {
  if ((await provider.getTransactionCount(address, "latest")) <= nonce) return undefined;
  const latest = await provider.getBlockNumber();
  for (let n = latest; n > after && n > latest - SENT_SEARCH_BLOCKS; n--) {
    const block = await provider.getBlock(n, true);
    const tx = block?.prefetchedTransactions.find((t) => getAddress(t.from) === address && t.nonce === nonce);
    if (tx) return (await provider.getTransactionReceipt(tx.hash)) ?? "unknown";
  }
  return "unknown";
}

/**
 * Connects the browser wallet on the settlement's chain: its chain must be the settlement's (`WRONG_CHAIN`), the
 * escrow the pinned one (`ESCROW_NOT_PINNED`, `ESCROW_MISMATCH`).
 */
export async function connectInjected(settlement: Settlement, injected: InjectedWallet, pinned: PinnedEscrows): Promise<ChainWallet> {
  const chain = settlement.chain;
  const pinnedEscrow = pinned[chain];
  if (!pinnedEscrow) throw clientError("ESCROW_NOT_PINNED", `No pinned escrow for ${chain}: pass escrows.${chain}.`);
  if (getAddress(pinnedEscrow) !== getAddress(settlement.escrowAddress)) {
    throw clientError("ESCROW_MISMATCH", `The service names escrow ${settlement.escrowAddress} on ${chain}; the client pinned ${pinnedEscrow}.`);
  }
  const ethereum = injected.provider;
  const walletChain = BigInt((await ethereum.request({ method: "eth_chainId" })) as string);
  if (walletChain !== BigInt(settlement.chainId)) {
    throw clientError(
      "WRONG_CHAIN",
      `The browser wallet is on chain ${walletChain}; the service settles on ${chain} (chain ${settlement.chainId}). Switch the wallet's network.`,
    );
  }
  const address = await injectedAccount(ethereum);
  // No response cache: consecutive transactions must see the nonce the previous one used.
  const provider = new BrowserProvider(ethereum, settlement.chainId, { cacheTimeout: -1, pollingInterval: 500 });
  const escrow = getAddress(settlement.escrowAddress);
  let queue: Promise<unknown> = Promise.resolve();

  return {
    chain,
    chainId: settlement.chainId,
    escrow,
    token: getAddress(settlement.token),
    wallet: { address },
    provider,
    async send(unsigned, expected, options = {}) {
      if (unsigned) guard(unsigned, { chainId: settlement.chainId, from: address, to: expected.to, data: expected.data, escrow });
      const run = queue.then(async (): Promise<TransactionReceipt> => {
        const call = { from: address, to: expected.to, data: expected.data, value: 0n };
        let gas: bigint;
        try {
          // Runs the call at the pending block: a refusal is the contract's, found before anything is sent.
          gas = withGasMargin(options.gasLimit ?? (await provider.estimateGas(call)));
        } catch (cause) {
          throw revertError(cause, expected.to === escrow ? "escrow" : "token") ?? cause;
        }
        const request = {
          from: address,
          to: expected.to,
          data: expected.data,
          value: "0x0",
          gas: hex(gas),
          chainId: hex(settlement.chainId),
          ...(options.nonce === undefined ? {} : { nonce: hex(options.nonce) }),
        };
        const contract = expected.to === escrow ? "escrow" : "token";
        // Where the wallet stands before it sends: a wallet over a node that mines on receipt answers a transaction that
        // reverted with an error, though it was mined (its nonce is then used).
        const [before, block] = await Promise.all([options.nonce ?? provider.getTransactionCount(address, "pending"), provider.getBlockNumber()]);
        let txHash: string;
        try {
          txHash = (await ethereum.request({ method: "eth_sendTransaction", params: [request] })) as string;
        } catch (cause) {
          if (declined(cause)) throw clientError("TX_REJECTED", "The wallet declined the transaction; nothing was sent.");
          const sent = await sentAt(provider, address, before, block).catch(() => "unknown" as const);
          if (sent === "unknown") {
            throw clientError(
              "TX_UNCONFIRMED",
              `The wallet's transaction at nonce ${before} may have been sent; its hash is unknown: ${plainMessage(cause)}`,
            );
          }
          if (sent?.status === 1) return sent;
          if (sent) throw await minedRevert(provider, sent, { ...call, gasLimit: gas }, cause, contract);
          throw revertError(cause, contract) ?? clientError("TX_REJECTED", `The wallet did not send the transaction: ${plainMessage(cause)}`);
        }
        let receipt: TransactionReceipt | null;
        try {
          receipt =
            (await provider.getTransactionReceipt(txHash)) ??
            (await provider.waitForTransaction(txHash, 1, injected.confirmTimeoutMs ?? DEFAULT_CONFIRM_TIMEOUT_MS));
        } catch (cause) {
          throw clientError("TX_UNCONFIRMED", `Transaction ${txHash} was sent but not confirmed: ${plainMessage(cause)}`, { txHash });
        }
        if (!receipt) throw clientError("TX_UNCONFIRMED", `Transaction ${txHash} was sent but not confirmed in time.`, { txHash });
        if (receipt.status !== 1) throw await minedRevert(provider, receipt, { ...call, gasLimit: gas }, undefined, contract);
        return receipt;
      });
      queue = run.catch(() => undefined);
      return run;
    },
    async gasCost(gas) {
      const [balance, fees] = await Promise.all([provider.getBalance(address), provider.getFeeData()]);
      return { balance, need: gas * (fees.maxFeePerGas ?? fees.gasPrice ?? 0n) };
    },
  };
}
