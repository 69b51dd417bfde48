import { getAddress, isHexString, Wallet } from "ethers";
import { createHttp, type Http } from "./http";
import { ApiError, clientError } from "./errors";
import { connectChain, escrowInterface, pinnedEscrowsFromEnv, type ChainWallet, type PinnedEscrows, type RpcUrls, type Settlement } from "./chain";
import { checkRows, postRows, type IndexParams, type PostResult, type PostTaskInput, type PostTasksOptions, type PostTasksResult } from "./posting";
import type { ChainName } from "../../core/chains";
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
  SettlementTx,
  TaskView,
  VerdictAnswer,
  WhoAmI,
} from "../../core/api";
import { decryptBrief, privateTaskHash, publicKeyFromPrivateKey, resultHash, unwrapBriefKey } from "../../core/crypto";
import { TaskEscrow__factory } from "../../typechain-types/factories/contracts/TaskEscrow__factory";

export interface MarketClientOptions {
  apiKey: string;
  /** Default: MARKET_API_URL, else http://127.0.0.1:3000. */
  baseUrl?: string;
  /** The wallet of the API key, to fund tasks and sign its transactions (as poster, worker or verifier). Its key never leaves the client. */
  executor?: { privateKey: string; rpcUrls: RpcUrls; /** Default 5 minutes. */ confirmTimeoutMs?: number };
  /** Escrow addresses the client trusts per chain; default MARKET_ESCROW_<CHAIN>. */
  escrows?: PinnedEscrows;
  fetch?: typeof fetch;
  /** Per request (ms). */
  timeoutMs?: number;
}

/** The API's own answer types (core/api), under the names the SDK has always exported. */
export type { AgentProfile, Finalized, TaskView } from "../../core/api";
/** What `accept` answers: the brief (or how to open it) and how the result is judged. */
export type AssignedTask = Assigned;

/** The settlement calls a poster or worker signs: `cancel`, `claim-timeout`, `dispute`, `release` or `release-unjudged`. */
export type SettleAction = "cancel" | "claim-timeout" | "dispute" | "release" | "release-unjudged";

export interface CreateAgentOptions {
  /** The API key wallet's private key. Without it a random key is generated and returned once; that agent can open briefs but cannot sign evidence. */
  privateKey?: string;
  supportedChains: ChainName[];
  capabilities?: string[];
  displayName?: string;
  /** Raw units. */
  minReward?: bigint | string;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The marketplace client: post tasks (one or a spreadsheet of them), take and deliver tasks as a self-run agent, and
 * settle. API errors raise `ApiError` with the stable `code`. Every transaction the API builds is checked against
 * the call the client computes itself before the wallet signs it.
 */
export class MarketClient {
  readonly http: Http;
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
    this.pinned = options.escrows ?? pinnedEscrowsFromEnv();
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
        return connectChain(settlement, executor.privateKey, executor.rpcUrls, this.pinned, { confirmTimeoutMs: executor.confirmTimeoutMs });
      })();
      connected.catch(() => this.wallets.delete(settlement.chain));
      this.wallets.set(settlement.chain, connected);
    }
    return connected;
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
   * wallet signs it after the guard checks it, and the delivery is finalized (verification runs).
   */
  async deliverResult({ taskHash, output }: { taskHash: string; output: string }): Promise<Finalized> {
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

  // ------------------------------------------------------------------ posting

  /** Posts one task (a bulk run of one row; `agent` verification allowed). */
  async postTask(input: PostTaskInput): Promise<PostResult> {
    const checked = checkRows([input], { allowAgentMode: true });
    const result = await postRows(await this.postingContext(), checked, 1, {});
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
    const result = await postRows(await this.postingContext(), checked, rows.length, options);
    return { ...result, timings: { ...result.timings, checkMs: result.timings.checkMs + Math.round(checkMs) } };
  }

  /** Lists a funded task from the `indexParams` a run left. */
  async indexTask(params: IndexParams): Promise<ListingOutcome> {
    return this.http.post("/api/v1/a2a/tasks/index", params);
  }

  private async postingContext() {
    const settlement = await this.settlement();
    // Asked afresh: a pause is refused before the approval, not by the funding's revert after it.
    const now = await this.http.get<SettlementAnswer>("/api/v1/health/settlement");
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
   * verifier's on an `agent` task (signed by this client's wallet).
   */
  async reviewResult(verdict: {
    taskHash: string;
    approve: boolean;
    score?: number;
    reasons?: string[];
  }): Promise<Pick<VerdictAnswer, "status" | "txHash">> {
    const { taskHash } = verdict;
    const answer = await this.http.post<VerdictAnswer>(`/api/v1/a2a/tasks/${taskHash}/verdict`, {
      passed: verdict.approve,
      ...(verdict.score !== undefined ? { score: verdict.score } : {}),
      ...(verdict.reasons ? { reasons: verdict.reasons } : {}),
    });
    if (!answer.unsignedTx) return answer;
    const task = await this.taskToSign(taskHash);
    const wallet = await this.wallet(task.meta.chain);
    const score = verdict.score ?? (verdict.approve ? 100 : 0);
    const expected = {
      to: wallet.escrow,
      data: escrowInterface.encodeFunctionData("completeVerification", [task.meta.taskHash, verdict.approve, score]),
    };
    const receipt = await wallet.send(answer.unsignedTx, expected);
    return { status: answer.status, txHash: receipt.hash };
  }

  /**
   * Gets the escrow back: cancels an open task, or claims after the deadline (a refund, or the escalation of
   * delivered work nobody judged). Signed by this client's wallet.
   */
  async cancelAndRefund(taskHash: string): Promise<{ outcome: string; txHash: string }> {
    let task: TaskView;
    try {
      task = await this.getTask(taskHash);
    } catch (error) {
      // Funded but never listed (a run stopped before listing): the service does not know it; the escrow does.
      if (error instanceof ApiError && error.code === "TASK_NOT_FOUND") return this.refundUnlisted(taskHash);
      throw error;
    }
    return this.sendSettlement(taskHash, task.state.status === "open" ? "cancel" : "claim-timeout", task);
  }

  /** Cancels (while Funded) or claims (after the deadline) a task the service never listed, straight on the escrow. */
  private async refundUnlisted(taskHash: string): Promise<{ outcome: string; txHash: string }> {
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
    return { outcome: open ? "refund" : "claim", txHash: receipt.hash };
  }

  /** A poster's or worker's own settlement call, signed by this client's wallet. */
  async settle({ taskHash, action }: { taskHash: string; action: SettleAction }): Promise<{ outcome: string; txHash: string }> {
    return this.sendSettlement(taskHash, action);
  }

  private async sendSettlement(taskHash: string, action: SettleAction, known?: TaskView): Promise<{ outcome: string; txHash: string }> {
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
    return { outcome: answer.outcome, txHash: receipt.hash };
  }
}
