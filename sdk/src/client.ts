import { getAddress, isHexString, Wallet } from "ethers";
import { createHttp, type Http } from "./http";
import { ApiError, apiErrorCode, clientError, statusOfCode } from "./errors";
import {
  connectChain,
  erc20Interface,
  escrowInterface,
  pinnedEscrowsFromEnv,
  type ChainWallet,
  type PinnedEscrows,
  type RpcUrls,
  type Settlement,
} from "./chain";
import { checkRows, postRows, type IndexParams, type PostResult, type PostTaskInput, type PostTasksOptions, type PostTasksResult } from "./posting";
import type { ChainName } from "../../core/chains";
import { streamEvents, type EventStreamOptions, type MarketEvent } from "./events";
import { skillsApi, type SkillsApi } from "./skills";
import { canCancel, hasEnded, snapshotFromView } from "../../core/escrow";
import type {
  AgentAnswer,
  AgentProfile,
  Assigned,
  BidAnswer,
  BlobData,
  BrowseAnswer,
  Delivered,
  Finalized,
  ListingOutcome,
  PostedAnswer,
  SettlementAnswer,
  SettlementOutcome,
  SettlementTx,
  TaskView,
  VerdictAnswer,
  WhoAmI,
  AgentMessage,
  DeployAgentBody,
  Deployed,
  DeployFeeTerms,
  ExportedKey,
  HostedAgentView,
  OwnedAgentView,
  Withdrawal,
  AssignedTasksAnswer,
  CreateServiceBody,
  ServiceAnswer,
  ServiceList,
  ServiceView,
  UpdateServiceBody,
} from "../../core/api";
import { RENTAL_DONE_STATUSES, rentalInput, type Rental, type RentalProgress, type RentalState, type RentServiceOptions } from "./rentals";
import { decryptBrief, openSealed, privateTaskHash, publicKeyFromPrivateKey, resultHash, unwrapBriefKey } from "../../core/crypto";
import { TaskEscrow__factory } from "../../typechain-types/factories/contracts/TaskEscrow__factory";

export interface MarketClientOptions {
  apiKey: string;
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
  /** Escrow addresses the client trusts per chain; default MARKET_ESCROW_<CHAIN>. */
  escrows?: PinnedEscrows;
  fetch?: typeof fetch;
  /** Per request (ms). */
  timeoutMs?: number;
}

/** The API's own answer types (core/api), under the names the SDK has always exported. */
export type { AgentProfile, AssignedTaskView, Finalized, TaskView } from "../../core/api";
/** What `accept` answers: the brief (or how to open it) and how the result is judged. */
export type AssignedTask = Assigned;

/** The settlement calls a poster or worker signs: `cancel`, `claim-timeout`, `dispute`, `release` or `release-unjudged`. */
export type SettleAction = "cancel" | "claim-timeout" | "dispute" | "release" | "release-unjudged";

/** A settlement call sent: which call, what it does (`refund`, `escalate`, `dispute`, `payout`, `reopen`) and its transaction. */
export interface Settled {
  action: SettleAction;
  outcome: SettlementOutcome;
  txHash: string;
}

export interface CreateAgentOptions {
  /** The API key wallet's private key. Without it a random key is generated and returned once; that agent can open briefs but cannot sign evidence. */
  privateKey?: string;
  supportedChains: ChainName[];
  capabilities?: string[];
  displayName?: string;
  /** Raw units. */
  minReward?: bigint | string;
}

export type { Rental, RentalProgress, RentalState, RentServiceOptions } from "./rentals";

export type {
  ServiceList,
  ServiceView,
  AgentMessage,
  DeployAgentBody,
  Deployed,
  DeployFeeTerms,
  ExportedKey,
  HostedAgentView,
  OwnedAgentView,
  Withdrawal,
} from "../../core/api";

/** `deployAgent`'s parameters: the deploy body, with the owner key and the fee payment filled in when left out. */
export type DeployAgentOptions = Omit<DeployAgentBody, "ownerPublicKey" | "minReward" | "subtasks" | "feeTxHash"> & {
  /** Default: the public key of this client's executor key (the owner opens exported secrets with it). */
  ownerPublicKey?: string;
  /** Raw units. */
  minReward?: bigint | string;
  /** The sub-task payment option (`delegate_to_agent`); `maxRewardRaw` in raw units. */
  subtasks?: { enabled: boolean; maxRewardRaw?: bigint | string };
  /** The deploy fee's payment, when paid beforehand. */
  feeTxHash?: string;
  /** Pay the deploy fee from this client's wallet when the service asks one and no `feeTxHash` is given (default true). */
  payFee?: boolean;
};

/** Opens an exported hosted-agent key (`encryptedPrivateKey`) with the owner's private key, locally: 0x-hex. */
export function decryptExportedKey(encryptedPrivateKey: string, ownerPrivateKey: string): string {
  return `0x${Buffer.from(openSealed(encryptedPrivateKey, ownerPrivateKey)).toString("utf8").replace(/^0x/, "")}`;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The marketplace client: post tasks (one or a spreadsheet of them), take and deliver tasks as a self-run agent, and
 * settle. API errors raise `ApiError` with the stable `code`. Every transaction the API builds is checked against
 * the call the client computes itself before the wallet signs it.
 */
export class MarketClient {
  readonly http: Http;
  /** Skills and agent updates (sdk/src/skills.ts). */
  readonly skills: SkillsApi;
  /** Holds the keys: an ES private field, so printing or serialising the client never shows them. */
  readonly #options: MarketClientOptions;
  private readonly pinned: PinnedEscrows;
  private settlements?: Promise<Settlement[]>;
  private readonly wallets = new Map<ChainName, Promise<ChainWallet>>();

  constructor(options: MarketClientOptions) {
    this.#options = options;
    this.http = createHttp({
      baseUrl: options.baseUrl ?? process.env.MARKET_API_URL ?? "http://127.0.0.1:3000",
      apiKey: options.apiKey,
      fetch: options.fetch,
      timeoutMs: options.timeoutMs,
    });
    this.skills = skillsApi(this.http);
    this.pinned = options.escrows ?? pinnedEscrowsFromEnv();
  }

  /**
   * The events this key may see, oldest first, as they happen (docs/events.md): an async iterator over the API's event
   * stream that reconnects and resumes after the last event it yielded. `after` is a cursor to resume from.
   */
  events(options: Omit<EventStreamOptions, "baseUrl" | "apiKey" | "sessionToken" | "fetch"> = {}): AsyncGenerator<MarketEvent> {
    return streamEvents({
      ...options,
      baseUrl: this.http.baseUrl,
      ...(this.#options.apiKey ? { apiKey: this.#options.apiKey } : {}),
      ...(this.#options.fetch ? { fetch: this.#options.fetch } : {}),
    });
  }

  /** The wallet the API key acts as. */
  async whoami(): Promise<string> {
    const { addresses } = await this.http.get<WhoAmI>("/api/v1/api-keys/whoami");
    const address = addresses[0];
    if (!address) throw clientError("INVALID_TOKEN", "The API key acts as no wallet.");
    return address;
  }

  async settlement(chain?: string): Promise<Settlement> {
    this.settlements ??= this.http.get<SettlementAnswer>("/api/v1/health/settlement").then((r) => r.chains);
    const chains = await this.settlements;
    // The posting chain, paused or not (a paused escrow refuses each call with EscrowPaused).
    const found = chain ? chains.find((c) => c.chain === chain) : chains.find((c) => c.postable || c.notPostableReason === "ESCROW_PAUSED");
    if (!found) throw clientError("WRONG_CHAIN", chain ? `The service does not settle on ${chain}.` : "The service has no postable chain.");
    return found;
  }

  /** The client's wallet (`executor`) on a chain, behind the transaction guard; checks once that it is the API key's. */
  async wallet(chain?: string): Promise<ChainWallet> {
    const executor = this.#options.executor;
    if (!executor) throw clientError("WRONG_RPC", "This client has no executor { privateKey, rpcUrls }.");
    const settlement = await this.settlement(chain);
    let connected = this.wallets.get(settlement.chain);
    if (!connected) {
      connected = (async () => {
        await this.requireOwnKey(executor.privateKey);
        return connectChain(settlement, executor.privateKey, executor.rpcUrls, this.pinned, {
          confirmTimeoutMs: executor.confirmTimeoutMs,
          beforeSend: executor.beforeSend,
        });
      })();
      connected.catch(() => this.wallets.delete(settlement.chain));
      this.wallets.set(settlement.chain, connected);
    }
    return connected;
  }

  /** Closes the wallets' RPC connections (a later call connects again). */
  close(): void {
    const connected = [...this.wallets.values()];
    this.wallets.clear();
    for (const wallet of connected) void wallet.then((w) => w.provider.destroy()).catch(() => undefined);
  }

  /** The API key's wallet, once checked to be the private key's (`OWNER_MISMATCH` otherwise). */
  async requireOwnKey(privateKey: string): Promise<string> {
    const keyWallet = new Wallet(privateKey).address;
    const apiWallet = getAddress(await this.whoami());
    if (keyWallet !== apiWallet) {
      throw clientError("OWNER_MISMATCH", `The private key's wallet ${keyWallet} is not the API key's wallet ${apiWallet}.`);
    }
    return apiWallet;
  }

  // ------------------------------------------------------------------ agents

  /**
   * Registers (or re-registers) the API key's wallet as an agent. With `privateKey`, its wallet must be the API key's
   * (`OWNER_MISMATCH` otherwise, nothing registered); without, a fresh key is generated and returned once.
   */
  async createAgent(options: CreateAgentOptions): Promise<{ profile: AgentProfile; privateKey?: string }> {
    let generated: string | undefined;
    let privateKey = options.privateKey;
    if (privateKey) await this.requireOwnKey(privateKey);
    else privateKey = generated = Wallet.createRandom().privateKey;
    const { profile } = await this.http.post<AgentAnswer>("/api/v1/a2a/register", {
      publicKey: publicKeyFromPrivateKey(privateKey),
      supportedChains: options.supportedChains,
      capabilities: options.capabilities ?? [],
      ...(options.displayName ? { displayName: options.displayName } : {}),
      ...(options.minReward !== undefined ? { minReward: options.minReward.toString() } : {}),
    });
    return generated ? { profile, privateKey: generated } : { profile };
  }

  async browseA2ATasks(filter: { capabilities?: string[] } = {}): Promise<BrowseAnswer> {
    const caps = filter.capabilities?.length ? `?capabilities=${encodeURIComponent(filter.capabilities.join(","))}` : "";
    return this.http.get(`/api/v1/a2a/tasks${caps}`);
  }

  async getTask(taskHash: string): Promise<TaskView> {
    return this.http.get(`/api/v1/tasks/${taskHash}`);
  }

  /**
   * The task a transaction is built for: asked by task hash, the API must describe that very task (`TX_MISMATCH`
   * otherwise), since the expected call is computed from the hash it answers.
   */
  private async taskToSign(taskHash: string, known?: TaskView): Promise<TaskView> {
    const task = known ?? (await this.getTask(taskHash));
    if (isHexString(taskHash, 32) && task.meta.taskHash.toLowerCase() !== taskHash.toLowerCase()) {
      throw clientError("TX_MISMATCH", `Asked for task ${taskHash}, the service described task ${task.meta.taskHash}; nothing was signed.`);
    }
    return task;
  }

  async postedTasks(options: { limit?: number; cursor?: string } = {}): Promise<PostedAnswer> {
    const query = new URLSearchParams();
    if (options.limit) query.set("limit", String(options.limit));
    if (options.cursor) query.set("cursor", options.cursor);
    return this.http.get(`/api/v1/a2a/tasks/posted${query.size ? `?${query}` : ""}`);
  }

  /**
   * Tasks this wallet works on that have not ended (assigned, delivered, awaiting a verdict, a failed round, disputed
   * or escalated), each with `roundsLeft`: `GET /api/v1/a2a/tasks/assigned`.
   */
  async assignedTasks(): Promise<AssignedTasksAnswer> {
    return this.http.get("/api/v1/a2a/tasks/assigned");
  }

  /** Takes the task as its worker: assigned on chain once the answer comes, with the brief or how to open it. */
  async acceptTask(taskHash: string): Promise<AssignedTask> {
    return this.http.post(`/api/v1/a2a/tasks/${taskHash}/accept`);
  }

  /** Registers interest in a task whose brief is not wrapped to this agent; the poster may wrap it. */
  async bidOnTask({ taskHash, message }: { taskHash: string; message?: string }): Promise<BidAnswer> {
    return this.http.post(`/api/v1/a2a/tasks/${taskHash}/bid`, message ? { message } : {});
  }

  /** The brief of an assigned task: the public text, or the private one decrypted with the client's key. */
  async openBrief(task: AssignedTask): Promise<string> {
    if (task.brief.privacy === "public") return task.brief.publicBrief ?? "";
    const privateKey = this.#options.executor?.privateKey;
    if (!privateKey || !task.brief.wrappedKey || !task.brief.rootHash) throw clientError("NEEDS_WRAP", "No key to open this private brief.");
    const { data } = await this.http.get<BlobData>(`/api/v1/storage/${task.brief.rootHash}`);
    const ciphertext = Buffer.from(data, "base64");
    // The brief the poster funded is the one whose SHA-256 is the task hash: anything else is not opened.
    const downloaded = privateTaskHash(ciphertext);
    if (downloaded !== task.taskHash.toLowerCase()) {
      throw clientError(
        "BRIEF_MISMATCH",
        `The brief downloaded for task ${task.taskHash} is not the one it was funded for (its SHA-256 is ${downloaded}).`,
      );
    }
    return decryptBrief(ciphertext, unwrapBriefKey(task.brief.wrappedKey, privateKey));
  }

  /**
   * Delivers the worker's result: the API stores it and builds submitEvidence (hash of the output), the client's
   * wallet signs it after the guard checks it, and the delivery is finalized (verification runs). The spec's form
   * `deliverResult(taskId, result)` takes the output text or `{ output }`; `deliverResult({ taskHash, output })` too.
   */
  async deliverResult(taskHash: string, result: string | { output: string }): Promise<Finalized>;
  async deliverResult(delivery: { taskHash: string; output: string }): Promise<Finalized>;
  async deliverResult(first: string | { taskHash: string; output: string }, result?: string | { output: string }): Promise<Finalized> {
    const { taskHash, output } =
      typeof first === "string" ? { taskHash: first, output: typeof result === "string" ? result : result?.output } : first;
    if (typeof output !== "string")
      throw clientError("VALIDATION_FAILED", "deliverResult(taskId, result): result is the output text, or { output }.");
    const task = await this.taskToSign(taskHash);
    const wallet = await this.wallet(task.meta.chain);
    const delivered = await this.http.post<Delivered>(`/api/v1/a2a/tasks/${taskHash}/deliver`, { output });
    const expected = { to: wallet.escrow, data: escrowInterface.encodeFunctionData("submitEvidence", [task.meta.taskHash, resultHash(output)]) };
    const receipt = await wallet.send(delivered.unsignedTx, expected);
    return this.finalize({ taskHash, txHash: receipt.hash });
  }

  /** Runs verification once the evidence (`txHash`, when given) is mined; retries while it is not indexed yet. */
  async finalize({ taskHash, txHash }: { taskHash: string; txHash?: string }): Promise<Finalized> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.http.post<Finalized>(`/api/v1/a2a/tasks/${taskHash}/finalize`, txHash ? { txHash } : {});
      } catch (error) {
        if (!(error instanceof ApiError) || !error.retryable || attempt >= 20) throw error;
        await sleep(500 * Math.min(attempt + 1, 6));
      }
    }
  }

  // ------------------------------------------------------------------ hosted agents

  /** The deploy fee's terms: amount (raw units), token, recipient (treasury), chain; `required` false when free. */
  async deployFee(): Promise<DeployFeeTerms> {
    return this.http.get("/api/v1/agents/deploy-fee");
  }

  /**
   * Deploys a hosted agent run by the service on your OpenAI-compatible model. When the service asks a deploy fee and
   * no `feeTxHash` is given, the fee is paid first from this client's wallet (a settlement-token transfer to the
   * treasury). Secrets (`model.apiKey`, `toolSecrets`) are sent once and never shown again.
   */
  async deployAgent(options: DeployAgentOptions): Promise<Deployed> {
    const { payFee, ownerPublicKey, ...rest } = options;
    const ownerKey = ownerPublicKey ?? (this.#options.executor ? publicKeyFromPrivateKey(this.#options.executor.privateKey) : undefined);
    if (!ownerKey) throw clientError("INVALID_PUBLIC_KEY", "deployAgent needs ownerPublicKey (or an executor key to take it from).");
    let feeTxHash = rest.feeTxHash;
    if (feeTxHash === undefined && payFee !== false) {
      const terms = await this.deployFee();
      if (terms.required) {
        const wallet = await this.wallet(terms.chain);
        const data = erc20Interface.encodeFunctionData("transfer", [terms.recipient, BigInt(terms.amount)]);
        feeTxHash = (await wallet.send(null, { to: terms.token, data })).hash;
      }
    }
    const { minReward, subtasks, ...fields } = rest;
    return this.http.post("/api/v1/agents", {
      ...fields,
      ownerPublicKey: ownerKey,
      ...(minReward === undefined ? {} : { minReward: minReward.toString() }),
      ...(subtasks
        ? {
            subtasks: {
              enabled: subtasks.enabled,
              ...(subtasks.maxRewardRaw === undefined ? {} : { maxRewardRaw: subtasks.maxRewardRaw.toString() }),
            },
          }
        : {}),
      ...(feeTxHash ? { feeTxHash } : {}),
    });
  }

  /** Hosted agents, public view (tools with header values masked). */
  async hostedAgents(): Promise<{ agents: HostedAgentView[]; total: number }> {
    return this.http.get("/api/v1/agents");
  }

  /** This account's hosted agents, with what only their owner sees. */
  async myAgents(): Promise<{ agents: OwnedAgentView[] }> {
    return this.http.get("/api/v1/agents/mine");
  }

  async startAgent({ agentId }: { agentId: number }): Promise<OwnedAgentView> {
    return (await this.http.post<{ agent: OwnedAgentView }>(`/api/v1/agents/${agentId}/start`)).agent;
  }

  async stopAgent({ agentId }: { agentId: number }): Promise<OwnedAgentView> {
    return (await this.http.post<{ agent: OwnedAgentView }>(`/api/v1/agents/${agentId}/stop`)).agent;
  }

  async restartAgent({ agentId }: { agentId: number }): Promise<OwnedAgentView> {
    return (await this.http.post<{ agent: OwnedAgentView }>(`/api/v1/agents/${agentId}/restart`)).agent;
  }

  async deleteAgent({ agentId }: { agentId: number }): Promise<{ id: number; deleted: true }> {
    return this.http.del(`/api/v1/agents/${agentId}`);
  }

  /**
   * Exports the agent's wallet key (the export is recorded; the wallet is never gas-sponsored again). With
   * `ownerPrivateKey` (default: this client's executor key) it is opened here, locally: `privateKey`.
   */
  async exportAgentKey({ agentId, ownerPrivateKey }: { agentId: number; ownerPrivateKey?: string }): Promise<ExportedKey & { privateKey?: string }> {
    const exported = await this.http.post<ExportedKey>(`/api/v1/agents/${agentId}/export-key`);
    const key = ownerPrivateKey ?? this.#options.executor?.privateKey;
    if (!key || publicKeyFromPrivateKey(key) !== exported.ownerPublicKey.replace(/^0x/, "").toLowerCase()) return exported;
    return { ...exported, privateKey: decryptExportedKey(exported.encryptedPrivateKey, key) };
  }

  /** Sends the stopped agent's settlement tokens (all, or `amountRaw`) to the owner's address. */
  async withdrawFromAgent({ agentId, amountRaw }: { agentId: number; amountRaw?: bigint | string }): Promise<Withdrawal> {
    return this.http.post(`/api/v1/agents/${agentId}/withdraw`, amountRaw === undefined ? {} : { amountRaw: amountRaw.toString() });
  }

  async sendAgentMessage({ agentId, body }: { agentId: number; body: string }): Promise<AgentMessage> {
    return this.http.post(`/api/v1/agents/${agentId}/messages`, { body });
  }

  async agentMessages({ agentId }: { agentId: number }): Promise<{ messages: AgentMessage[] }> {
    return this.http.get(`/api/v1/agents/${agentId}/messages`);
  }

  // ------------------------------------------------------------------ services and rentals

  /** Active services of hosted agents (fixed-price calls to rent), newest first; `agent` keeps one agent's. */
  async browseServices(filter: { agent?: string; limit?: number } = {}): Promise<ServiceList> {
    const query = new URLSearchParams();
    if (filter.agent) query.set("agent", filter.agent);
    if (filter.limit) query.set("limit", String(filter.limit));
    return this.http.get(`/api/v1/marketplace/services${query.size ? `?${query}` : ""}`);
  }

  /** One service (an inactive one shows `active: false`); `SERVICE_NOT_FOUND` when unknown or deleted. */
  async getService(serviceId: number): Promise<ServiceView> {
    return (await this.http.get<ServiceAnswer>(`/api/v1/marketplace/services/${serviceId}`)).service;
  }

  /** Every service of one of this account's hosted agents, inactive ones too. */
  async agentServices({ agentId }: { agentId: number }): Promise<ServiceList> {
    return this.http.get(`/api/v1/agents/${agentId}/services`);
  }

  /** Lists a service of one of this account's hosted agents: a fixed-price call others rent. */
  async createService({
    agentId,
    priceRaw,
    ...fields
  }: Omit<CreateServiceBody, "priceRaw"> & { agentId: number; priceRaw: bigint | string }): Promise<ServiceView> {
    return (await this.http.post<ServiceAnswer>(`/api/v1/agents/${agentId}/services`, { ...fields, priceRaw: priceRaw.toString() })).service;
  }

  /** Changes a service; a new price applies to rentals listed from now on. */
  async updateService({
    agentId,
    serviceId,
    priceRaw,
    ...fields
  }: Omit<UpdateServiceBody, "priceRaw"> & { agentId: number; serviceId: number; priceRaw?: bigint | string }): Promise<ServiceView> {
    const body = { ...fields, ...(priceRaw === undefined ? {} : { priceRaw: priceRaw.toString() }) };
    return (await this.http.patch<ServiceAnswer>(`/api/v1/agents/${agentId}/services/${serviceId}`, body)).service;
  }

  /** Deletes a service: no new rentals; those already paid stay pinned to the agent. */
  async deleteService({ agentId, serviceId }: { agentId: number; serviceId: number }): Promise<{ id: number; deleted: true }> {
    return this.http.del(`/api/v1/agents/${agentId}/services/${serviceId}`);
  }

  /**
   * Rents a service: one task at the service's price, a one-hour deadline and automatic checks, pinned to its agent
   * (the prompt encrypted to that agent unless public), funded from this client's wallet and listed with `serviceId`;
   * then waits up to `waitSeconds` (default 45) for the result. A refusal before funding pays nothing and throws its
   * code; a rental funded but not listed throws the listing's code with `taskHash` and `indexParams` in `body` (cancel
   * it with `cancelAndRefund(taskHash)` for a full refund). When the wait runs out, `done` is false: follow it with
   * `waitForResult` or `getTask`.
   */
  async rentService(options: RentServiceOptions): Promise<Rental> {
    const { serviceId, prompt, privacy = "private" } = options;
    const started = Date.now();
    const service = await this.getService(serviceId);
    if (privacy === "private" && !service.agent_public_key) {
      throw clientError(
        "TARGET_CHAIN_UNSUPPORTED",
        `The agent of service ${serviceId} has registered no public key yet (it never started); nothing was sent.`,
      );
    }
    const checked = checkRows([rentalInput(service, prompt, privacy)], { allowAgentMode: false, maxRows: 1 });
    const wrapTo = { agents: service.agent_public_key ? [{ address: service.agent_address, publicKey: service.agent_public_key }] : [] };
    const run = await postRows(await this.postingContext(), checked, 1, { wrapTo });
    const result = run.results[0]!;
    const refusal = result.error ?? { code: "INTERNAL_ERROR", message: "The rental was not posted." };
    if (result.status === "unlisted") {
      throw new ApiError(
        statusOfCode(refusal.code),
        apiErrorCode(refusal.code, statusOfCode(refusal.code)),
        `${refusal.message} The rental is paid but not listed: cancel it for a full refund.`,
        {
          taskHash: result.taskHash,
          txHash: result.txHash,
          indexParams: result.indexParams,
        },
      );
    }
    if (result.status !== "posted")
      throw new ApiError(statusOfCode(refusal.code), apiErrorCode(refusal.code, statusOfCode(refusal.code)), refusal.message, { serviceId });
    const taskHash = result.taskHash!;
    const waitMs = Math.max(0, (options.waitSeconds ?? 45) * 1000 - (Date.now() - started));
    const state = await this.waitForResult({ taskHash, waitMs, ...(options.onProgress ? { onProgress: options.onProgress } : {}) });
    return { ...state, serviceId, amountRaw: result.amountRaw, txHash: result.txHash! };
  }

  /**
   * Follows a task as its poster until it is judged or over (RENTAL_DONE_STATUSES) or `waitMs` runs out (`done` false),
   * with the output once delivered.
   */
  async waitForResult({
    taskHash,
    waitMs,
    onProgress,
    pollMs = 500,
  }: {
    taskHash: string;
    waitMs: number;
    onProgress?: (progress: RentalProgress) => void;
    pollMs?: number;
  }): Promise<RentalState> {
    const started = Date.now();
    let last: string | undefined;
    for (;;) {
      let task: TaskView | undefined;
      try {
        task = await this.getTask(taskHash);
      } catch (error) {
        // Listed a moment ago and not indexed yet (or rate limited): asked again.
        if (!(error instanceof ApiError && error.retryable)) throw error;
      }
      const elapsedMs = Date.now() - started;
      const status = task?.state.status;
      if (onProgress && (status ?? "listing") !== last) onProgress({ taskHash, status: status ?? "listing", elapsedMs });
      last = status ?? "listing";
      const done = status !== undefined && RENTAL_DONE_STATUSES.includes(status);
      const result = task?.state.resultData;
      // A judged round shows its status a moment before the service records its verdict: waited for while time remains.
      const verdictPending = (status === "verified" || status === "failed") && !result?.verificationResult;
      if ((done && !verdictPending) || elapsedMs >= waitMs) {
        return {
          taskHash: task?.meta.taskHash ?? taskHash,
          status: status ?? "open",
          done,
          ...(result?.output !== undefined ? { output: result.output } : {}),
          ...(result?.verificationResult ? { verificationResult: result.verificationResult } : {}),
        };
      }
      await sleep(Math.min(pollMs, Math.max(0, waitMs - elapsedMs)));
    }
  }

  // ------------------------------------------------------------------ posting

  /** Posts one task (a bulk run of one row; `agent` verification allowed). */
  async postTask(input: PostTaskInput, options: Pick<PostTasksOptions, "chain"> = {}): Promise<PostResult> {
    const checked = checkRows([input], { allowAgentMode: true });
    const result = await postRows(await this.postingContext(options.chain), checked, 1, {});
    return result.results[0]!;
  }

  /**
   * Posts up to 1,000 tasks: every row is checked first (`INVALID_ROWS` refuses the whole call), `maxTotalRaw` is
   * checked before spending, the escrow is approved once for the total, and tasks are funded per chunk and listed.
   * Unlisted rows carry `indexParams`: finish them with `indexTask`, never with `postTasks` again.
   */
  async postTasks(rows: readonly PostTaskInput[], options: PostTasksOptions = {}): Promise<PostTasksResult> {
    const started = performance.now();
    const checked = checkRows(rows, { allowAgentMode: false });
    const checkMs = performance.now() - started;
    const result = await postRows(await this.postingContext(options.chain), checked, rows.length, options);
    return { ...result, timings: { ...result.timings, checkMs: result.timings.checkMs + Math.round(checkMs) } };
  }

  /** Lists a funded task from the `indexParams` a run left. */
  async indexTask(params: IndexParams): Promise<ListingOutcome> {
    return this.http.post("/api/v1/a2a/tasks/index", params);
  }

  /** The posting chain: `chain` when given (checked against GET /api/v1/health/settlement), else the first postable one. */
  private async postingContext(chain?: string) {
    const settlement = await this.settlement(chain);
    // Asked afresh: a pause is refused before the approval, not by the funding's revert after it.
    const now = await this.http.get<SettlementAnswer>("/api/v1/health/settlement");
    const current = now.chains.find((c) => c.chain === settlement.chain);
    if (chain !== undefined && !current?.postable && current?.notPostableReason !== "ESCROW_PAUSED") {
      const postable = now.chains.filter((c) => c.postable).map((c) => c.chain);
      throw clientError(
        "WRONG_CHAIN",
        `The service takes no tasks on ${chain} (postable: ${postable.join(", ") || "none"}; POSTABLE_CHAINS on the server); nothing was sent.`,
      );
    }
    if (now.chains.find((c) => c.chain === settlement.chain)?.notPostableReason === "ESCROW_PAUSED") {
      throw clientError(
        "ESCROW_PAUSED",
        `The ${settlement.chain} escrow is paused (EscrowPaused()): no task can be funded until it is unpaused; nothing was sent.`,
        { reason: "EscrowPaused" },
      );
    }
    return { http: this.http, settlement, chain: await this.wallet(settlement.chain) };
  }

  // ------------------------------------------------------------------ judging and settling

  /**
   * The poster's verdict on the latest delivered round of a `manual` task (the service settles it), or the designated
   * verifier's on an `agent` task (signed by this client's wallet, then reported back with its hash so the task view
   * shows it with its reasons). Answers once the settlement shows: `status` is the task's status after the verdict
   * (`verified`, `failed`...), never the `awaiting_verification` it had before.
   */
  async reviewResult(verdict: {
    taskHash: string;
    approve: boolean;
    score?: number;
    reasons?: string[];
  }): Promise<Pick<VerdictAnswer, "status" | "txHash">> {
    const { taskHash } = verdict;
    const body = {
      passed: verdict.approve,
      ...(verdict.score !== undefined ? { score: verdict.score } : {}),
      ...(verdict.reasons ? { reasons: verdict.reasons } : {}),
    };
    const answer = await this.http.post<VerdictAnswer>(`/api/v1/a2a/tasks/${taskHash}/verdict`, body);
    if (!answer.unsignedTx) return { status: await this.settledStatus(taskHash, answer.status), ...(answer.txHash ? { txHash: answer.txHash } : {}) };
    const task = await this.taskToSign(taskHash);
    const wallet = await this.wallet(task.meta.chain);
    const score = verdict.score ?? (verdict.approve ? 100 : 0);
    const expected = {
      to: wallet.escrow,
      data: escrowInterface.encodeFunctionData("completeVerification", [task.meta.taskHash, verdict.approve, score]),
    };
    const receipt = await wallet.send(answer.unsignedTx, expected);
    const recorded = await this.retrying(() =>
      this.http.post<VerdictAnswer>(`/api/v1/a2a/tasks/${taskHash}/verdict`, { ...body, score, txHash: receipt.hash }),
    );
    return { status: await this.settledStatus(taskHash, recorded.status), txHash: receipt.hash };
  }

  /** The task's status once a verdict's settlement shows (asked again while it still reads as awaiting one, up to a minute). */
  private async settledStatus(taskHash: string, status: TaskView["state"]["status"]): Promise<TaskView["state"]["status"]> {
    for (let attempt = 0; (status === "awaiting_verification" || status === "submitted") && attempt < 120; attempt++) {
      await sleep(500);
      status = (await this.getTask(taskHash)).state.status;
    }
    return status;
  }

  /** Calls again while the refusal is retryable (a receipt or index not visible yet), about half a minute at most. */
  private async retrying<T>(call: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await call();
      } catch (error) {
        if (!(error instanceof ApiError) || !error.retryable || attempt >= 20) throw error;
        await sleep(500 * Math.min(attempt + 1, 6));
      }
    }
  }

  /**
   * Gets the escrow back: cancels an open task (`action: "cancel"`, the whole reward back), or claims after the
   * deadline (`action: "claim-timeout"`: a refund, or the escalation of delivered work nobody judged). Signed by this
   * client's wallet. `outcome` is the API's word for what the transaction does (`refund`, `escalate`).
   */
  async cancelAndRefund(taskHash: string): Promise<Settled> {
    let task: TaskView;
    try {
      task = await this.getTask(taskHash);
    } catch (error) {
      // Funded but never listed (a run stopped before listing): the service does not know it; the escrow does.
      if (error instanceof ApiError && error.code === "TASK_NOT_FOUND") return this.refundUnlisted(taskHash);
      throw error;
    }
    const status = task.state.status;
    // A task already over (a second `market cancel`): say so instead of the claim precondition's refusal.
    if (status === "cancelled" || status === "refunded" || status === "completed") {
      const what = status === "completed" ? "was paid to its worker" : `is ${status} already: its reward went back to the poster`;
      throw clientError("WRONG_STATE", `Task ${taskHash} ${what}; nothing is left in the escrow to refund.`, { reason: status });
    }
    return this.sendSettlement(taskHash, status === "open" ? "cancel" : "claim-timeout", task);
  }

  /** Cancels (while Funded) or claims (after the deadline) a task the service never listed, straight on the escrow. */
  private async refundUnlisted(taskHash: string): Promise<Settled> {
    const wallet = await this.wallet();
    const escrow = TaskEscrow__factory.connect(wallet.escrow, wallet.provider);
    const task = snapshotFromView(taskHash, await escrow.getTask(taskHash));
    if (!task) throw clientError("TASK_NOT_FOUND", `No task ${taskHash} is listed, nor funded on the ${wallet.chain} escrow.`);
    if (task.poster !== wallet.wallet.address) {
      throw clientError("NOT_POSTER", `Task ${taskHash} was not funded by this wallet on ${wallet.chain}.`);
    }
    if (hasEnded(task.status)) throw clientError("WRONG_STATE", `Task ${taskHash} has ended on chain; nothing is left in the escrow.`);
    // Cancelled while the escrow takes a cancel (Funded, past its deadline too), else claimed. A paused escrow refuses
    // either; the transaction's revert says so.
    const open = canCancel(task, { taskHash, caller: wallet.wallet.address, paused: false }).ok;
    const data = open ? escrowInterface.encodeFunctionData("cancelTask", [taskHash]) : escrowInterface.encodeFunctionData("claimTimeout", [taskHash]);
    const receipt = await wallet.send(null, { to: wallet.escrow, data });
    return { action: open ? "cancel" : "claim-timeout", outcome: "refund", txHash: receipt.hash };
  }

  /** A poster's or worker's own settlement call, signed by this client's wallet. */
  async settle({ taskHash, action }: { taskHash: string; action: SettleAction }): Promise<Settled> {
    return this.sendSettlement(taskHash, action);
  }

  private async sendSettlement(taskHash: string, action: SettleAction, known?: TaskView): Promise<Settled> {
    const task = await this.taskToSign(taskHash, known);
    const wallet = await this.wallet(task.meta.chain);
    const answer = await this.http.post<SettlementTx>(`/api/v1/a2a/tasks/${taskHash}/${action}`);
    const fn = {
      cancel: "cancelTask",
      "claim-timeout": "claimTimeout",
      dispute: "raiseDispute",
      release: "releaseTask",
      "release-unjudged": "releaseUnjudgedWork",
    }[action];
    const expected = { to: wallet.escrow, data: escrowInterface.encodeFunctionData(fn as "cancelTask", [task.meta.taskHash]) };
    const receipt = await wallet.send(answer.unsignedTx, expected);
    return { action, outcome: answer.outcome, txHash: receipt.hash };
  }
}
