/**
 * What every area of the client shares (sdk/src/client.ts binds the areas): the HTTP channel, the service's settlement
 * chains, the executor wallet behind the transaction guard, and the checks made before anything is signed.
 */
import { getAddress, isHexString, Wallet } from "ethers";
import { createHttp, type Http } from "../http";
import { ApiError, clientError } from "../errors";
import { connectChain, pinnedEscrowsFromEnv, type ChainWallet, type PinnedEscrows, type RpcUrls, type Settlement } from "../chain";
import type { ChainName } from "@market/core/chains";
import { connectInjected, injectedAccount, type InjectedWallet } from "../injected";
import type { SettlementAnswer, TaskView, WhoAmI } from "@market/core/api";
import type { BriefSealer } from "../posting/seal";
import { defaultSealer } from "../posting/seal-threads";

export interface MarketClientOptions {
  apiKey: string;
  /** A signed-in session's token instead of an API key (`apiKey: ""`): the web app acts as the signed-in wallet. */
  sessionToken?: string;
  /** Default: MARKET_API_URL, else http://127.0.0.1:3000. */
  baseUrl?: string;
  /** The wallet of the API key, to fund tasks and sign its transactions (as poster, worker or verifier). Its key never leaves the client. */
  executor?: {
    privateKey: string;
    rpcUrls: RpcUrls;
    /** Default 5 minutes. */ confirmTimeoutMs?: number;
    /** Called before the wallet signs each transaction (e.g. to top up its gas). */
    beforeSend?: (tx: { chain: ChainName; from: string; to: string; data: string }) => Promise<void>;
  };
  /**
   * A browser wallet (EIP-1193) that holds the API key's wallet, instead of `executor`: it signs and sends every
   * transaction, and its provider answers the reads (sdk/src/injected.ts; the web app's bulk posting).
   */
  injected?: InjectedWallet;
  /** Escrow addresses the client trusts per chain; default MARKET_ESCROW_<CHAIN>. */
  escrows?: PinnedEscrows;
  fetch?: typeof fetch;
  /** Per request (ms). */
  timeoutMs?: number;
  /**
   * What encrypts private briefs and wraps their keys when posting. Default: worker threads, one per core, in Node; the
   * calling thread elsewhere (sdk/src/posting/seal.ts).
   */
  sealer?: BriefSealer;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class ClientCore {
  readonly http: Http;
  /** Holds the keys: an ES private field, so printing or serialising never shows them. */
  readonly #options: MarketClientOptions;
  readonly #pinned: PinnedEscrows;
  #settlements?: Promise<Settlement[]>;
  readonly #wallets = new Map<ChainName, Promise<ChainWallet>>();

  constructor(options: MarketClientOptions) {
    this.#options = options;
    this.http = createHttp({
      baseUrl: options.baseUrl ?? process.env.MARKET_API_URL ?? "http://127.0.0.1:3000",
      apiKey: options.apiKey,
      ...(options.sessionToken ? { sessionToken: options.sessionToken } : {}),
      fetch: options.fetch,
      timeoutMs: options.timeoutMs,
    });
    this.#pinned = options.escrows ?? pinnedEscrowsFromEnv();
  }

  get apiKey(): string {
    return this.#options.apiKey;
  }

  get fetch(): typeof fetch | undefined {
    return this.#options.fetch;
  }

  /** The executor's private key, when the client has one (it signs and opens locally; it is never sent). */
  get executorKey(): string | undefined {
    return this.#options.executor?.privateKey;
  }

  /** What seals private briefs when this client posts (MarketClientOptions `sealer`). */
  get sealer(): BriefSealer {
    return this.#options.sealer ?? defaultSealer();
  }

  async whoami(): Promise<string> {
    const { addresses } = await this.http.get<WhoAmI>("/api/v1/api-keys/whoami");
    const address = addresses[0];
    if (!address) throw clientError("INVALID_TOKEN", "The API key acts as no wallet.");
    return address;
  }

  async settlement(chain?: string): Promise<Settlement> {
    this.#settlements ??= this.http.get<SettlementAnswer>("/api/v1/health/settlement").then((r) => r.chains);
    const chains = await this.#settlements;
    // The posting chain, paused or not (a paused escrow refuses each call with EscrowPaused).
    const found = chain ? chains.find((c) => c.chain === chain) : chains.find((c) => c.postable || c.notPostableReason === "ESCROW_PAUSED");
    if (!found) throw clientError("WRONG_CHAIN", chain ? `The service does not settle on ${chain}.` : "The service has no postable chain.");
    return found;
  }

  async wallet(chain?: string): Promise<ChainWallet> {
    const { executor, injected } = this.#options;
    if (!executor && !injected) throw clientError("WRONG_RPC", "This client has no executor { privateKey, rpcUrls }.");
    const settlement = await this.settlement(chain);
    let connected = this.#wallets.get(settlement.chain);
    if (!connected) {
      connected = (async () => {
        if (!executor) return this.#injectedWallet(settlement, injected!);
        await this.requireOwnKey(executor.privateKey);
        return connectChain(settlement, executor.privateKey, executor.rpcUrls, this.#pinned, {
          confirmTimeoutMs: executor.confirmTimeoutMs,
          beforeSend: executor.beforeSend,
        });
      })();
      connected.catch(() => this.#wallets.delete(settlement.chain));
      this.#wallets.set(settlement.chain, connected);
    }
    return connected;
  }

  /** The browser wallet on the settlement's chain, once checked to be the API key's wallet (`OWNER_MISMATCH`). */
  async #injectedWallet(settlement: Settlement, injected: InjectedWallet): Promise<ChainWallet> {
    const [account, apiWallet] = await Promise.all([injectedAccount(injected.provider), this.whoami()]);
    if (account !== getAddress(apiWallet)) {
      throw clientError("OWNER_MISMATCH", `The browser wallet's account ${account} is not the API key's wallet ${getAddress(apiWallet)}.`);
    }
    return connectInjected(settlement, injected, this.#pinned);
  }

  close(): void {
    const connected = [...this.#wallets.values()];
    this.#wallets.clear();
    for (const wallet of connected) void wallet.then((w) => w.provider.destroy()).catch(() => undefined);
  }

  async requireOwnKey(privateKey: string): Promise<string> {
    const keyWallet = new Wallet(privateKey).address;
    const apiWallet = getAddress(await this.whoami());
    if (keyWallet !== apiWallet) {
      throw clientError("OWNER_MISMATCH", `The private key's wallet ${keyWallet} is not the API key's wallet ${apiWallet}.`);
    }
    return apiWallet;
  }

  async getTask(taskHash: string): Promise<TaskView> {
    return this.http.get(`/api/v1/tasks/${taskHash}`);
  }

  /**
   * The task a transaction is built for: asked by task hash, the API must describe that very task (`TX_MISMATCH`
   * otherwise), since the expected call is computed from the hash it answers.
   */
  async taskToSign(taskHash: string, known?: TaskView): Promise<TaskView> {
    const task = known ?? (await this.getTask(taskHash));
    if (isHexString(taskHash, 32) && task.meta.taskHash.toLowerCase() !== taskHash.toLowerCase()) {
      throw clientError("TX_MISMATCH", `Asked for task ${taskHash}, the service described task ${task.meta.taskHash}; nothing was signed.`);
    }
    return task;
  }

  /** Calls again while the refusal is retryable (a receipt or index not visible yet), about half a minute at most. */
  async retrying<T>(call: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await call();
      } catch (error) {
        if (!(error instanceof ApiError) || !error.retryable || attempt >= 20) throw error;
        await sleep(500 * Math.min(attempt + 1, 6));
      }
    }
  }
}
