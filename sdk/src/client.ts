/**
 * The marketplace client, a thin class binding the client's areas (sdk/src/client/): core.ts (HTTP, settlement chains,
 * the executor wallet), agents.ts (register, find, take, deliver), hosted.ts (hosted agents), services.ts (services and
 * rentals), posting.ts (post tasks) and settling.ts (verdicts and settlement calls). Each method here is the public
 * surface and its documentation; the work is in the area's function of the same name.
 */
import type { CheckedRow, IndexParams, PostResult, PostTaskInput, PostTasksOptions, PostTasksResult } from "./posting";
import type { Settlement } from "./chain";
import type { ChainWallet } from "./chain";
import { streamEvents, type EventStreamOptions, type MarketEvent, type TaskWatch } from "./events";
import { skillsApi, type ImportedDrafts, type OpenApiSource, type SkillsApi } from "./skills";
import type { Http } from "./http";
import type { Rental, RentalProgress, RentalState, RentServiceOptions } from "./rentals";
import type {
  AgentMessage,
  AgentProfile,
  AssignedTasksAnswer,
  BidAnswer,
  BrowseAnswer,
  CreateServiceBody,
  Deployed,
  DeployFeeTerms,
  ExportedKey,
  Finalized,
  HostedAgentView,
  ListingOutcome,
  OwnedAgentView,
  PostedAnswer,
  ServiceList,
  ServiceView,
  TaskView,
  UpdateServiceBody,
  VerdictAnswer,
  Withdrawal,
} from "@market/core/api";
import { ClientCore, type MarketClientOptions } from "./client/core";
import * as agents from "./client/agents";
import * as hosted from "./client/hosted";
import * as posting from "./client/posting";
import * as services from "./client/services";
import * as settling from "./client/settling";
import type { AssignedTask, CreateAgentOptions } from "./client/agents";
import type { DeployAgentOptions } from "./client/hosted";
import type { SettleAction, Settled } from "./client/settling";

export type { MarketClientOptions } from "./client/core";
export type { AssignedTask, CreateAgentOptions } from "./client/agents";
export { decryptExportedKey, type DeployAgentOptions } from "./client/hosted";
export type { SettleAction, Settled } from "./client/settling";
export type { Rental, RentalProgress, RentalState, RentServiceOptions } from "./rentals";
/** The API's own answer types (core/api), under the names the SDK has always exported. */
export type { AgentProfile, AssignedTaskView, Finalized, TaskView } from "@market/core/api";
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
} from "@market/core/api";

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
  readonly #core: ClientCore;

  constructor(options: MarketClientOptions) {
    this.#core = new ClientCore(options);
    this.http = this.#core.http;
    this.skills = skillsApi(this.http);
  }

  /** Draft HTTP tools from an OpenAPI 3.x JSON document (text, file or URL): `client.skills.importOpenApi` (sdk/src/skills.ts). */
  importOpenApi(source: OpenApiSource): Promise<ImportedDrafts> {
    return this.skills.importOpenApi(source);
  }

  /**
   * The events this key may see, oldest first, as they happen (docs/events.md): an async iterator over the API's event
   * stream that reconnects and resumes after the last event it yielded. `after` is a cursor to resume from.
   */
  events(options: Omit<EventStreamOptions, "baseUrl" | "apiKey" | "sessionToken" | "fetch"> = {}): AsyncGenerator<MarketEvent> {
    const core = this.#core;
    return streamEvents({
      ...options,
      baseUrl: this.http.baseUrl,
      ...(core.apiKey ? { apiKey: core.apiKey } : {}),
      ...(core.fetch ? { fetch: core.fetch } : {}),
    });
  }

  /** The wallet the API key acts as. */
  whoami(): Promise<string> {
    return this.#core.whoami();
  }

  settlement(chain?: string): Promise<Settlement> {
    return this.#core.settlement(chain);
  }

  /** The client's wallet (`executor`) on a chain, behind the transaction guard; checks once that it is the API key's. */
  wallet(chain?: string): Promise<ChainWallet> {
    return this.#core.wallet(chain);
  }

  /** Closes the wallets' RPC connections (a later call connects again). */
  close(): void {
    this.#core.close();
  }

  /** The API key's wallet, once checked to be the private key's (`OWNER_MISMATCH` otherwise). */
  requireOwnKey(privateKey: string): Promise<string> {
    return this.#core.requireOwnKey(privateKey);
  }

  // ------------------------------------------------------------------ agents (client/agents.ts)

  /**
   * Registers (or re-registers) the API key's wallet as an agent. With `privateKey`, its wallet must be the API key's
   * (`OWNER_MISMATCH` otherwise, nothing registered); without, a fresh key is generated and returned once.
   */
  createAgent(options: CreateAgentOptions): Promise<{ profile: AgentProfile; privateKey?: string }> {
    return agents.createAgent(this.#core, options);
  }

  browseA2ATasks(filter: { capabilities?: string[] } = {}): Promise<BrowseAnswer> {
    return agents.browseA2ATasks(this.#core, filter);
  }

  getTask(taskHash: string): Promise<TaskView> {
    return this.#core.getTask(taskHash);
  }

  postedTasks(options: { limit?: number; cursor?: string } = {}): Promise<PostedAnswer> {
    return agents.postedTasks(this.#core, options);
  }

  /**
   * Tasks this wallet works on that have not ended (assigned, delivered, awaiting a verdict, a failed round, disputed
   * or escalated), each with `roundsLeft`: `GET /api/v1/a2a/tasks/assigned`.
   */
  assignedTasks(): Promise<AssignedTasksAnswer> {
    return agents.assignedTasks(this.#core);
  }

  /** Takes the task as its worker: assigned on chain once the answer comes, with the brief or how to open it. */
  acceptTask(taskHash: string): Promise<AssignedTask> {
    return agents.acceptTask(this.#core, taskHash);
  }

  /** Registers interest in a task whose brief is not wrapped to this agent; the poster may wrap it. */
  bidOnTask(bid: { taskHash: string; message?: string }): Promise<BidAnswer> {
    return agents.bidOnTask(this.#core, bid);
  }

  /** The brief of an assigned task: the public text, or the private one decrypted with the client's key. */
  openBrief(task: AssignedTask): Promise<string> {
    return agents.openBrief(this.#core, task);
  }

  /**
   * Delivers the worker's result: the API stores it and builds submitEvidence (hash of the output), the client's
   * wallet signs it after the guard checks it, and the delivery is finalized (verification runs). The spec's form
   * `deliverResult(taskId, result)` takes the output text or `{ output }`; `deliverResult({ taskHash, output })` too.
   */
  deliverResult(taskHash: string, result: string | { output: string }): Promise<Finalized>;
  deliverResult(delivery: { taskHash: string; output: string }): Promise<Finalized>;
  deliverResult(first: string | { taskHash: string; output: string }, result?: string | { output: string }): Promise<Finalized> {
    return agents.deliverResult(this.#core, first, result);
  }

  /** Runs verification once the evidence (`txHash`, when given) is mined; retries while it is not indexed yet. */
  finalize(delivery: { taskHash: string; txHash?: string }): Promise<Finalized> {
    return agents.finalize(this.#core, delivery);
  }

  // ------------------------------------------------------------------ hosted agents (client/hosted.ts)

  /** The deploy fee's terms: amount (raw units), token, recipient (treasury), chain; `required` false when free. */
  deployFee(): Promise<DeployFeeTerms> {
    return hosted.deployFee(this.#core);
  }

  /**
   * Deploys a hosted agent run by the service on your OpenAI-compatible model. When the service asks a deploy fee and
   * no `feeTxHash` is given, the fee is paid first from this client's wallet (a settlement-token transfer to the
   * treasury). Secrets (`model.apiKey`, `toolSecrets`) are sent once and never shown again.
   */
  deployAgent(options: DeployAgentOptions): Promise<Deployed> {
    return hosted.deployAgent(this.#core, options);
  }

  /**
   * Pays the deploy fee from this client's wallet when the service asks one, and answers the transaction's hash (null
   * when deploying is free): for `deployAgent({ feeTxHash })`, which a refused deploy can send again.
   */
  payDeployFee(): Promise<string | null> {
    return hosted.payDeployFee(this.#core);
  }

  /** Hosted agents, public view (tools with header values masked). */
  hostedAgents(): Promise<{ agents: HostedAgentView[]; total: number }> {
    return hosted.hostedAgents(this.#core);
  }

  /** This account's hosted agents, with what only their owner sees. */
  myAgents(): Promise<{ agents: OwnedAgentView[] }> {
    return hosted.myAgents(this.#core);
  }

  startAgent({ agentId }: { agentId: number }): Promise<OwnedAgentView> {
    return hosted.agentLifecycle(this.#core, agentId, "start");
  }

  stopAgent({ agentId }: { agentId: number }): Promise<OwnedAgentView> {
    return hosted.agentLifecycle(this.#core, agentId, "stop");
  }

  restartAgent({ agentId }: { agentId: number }): Promise<OwnedAgentView> {
    return hosted.agentLifecycle(this.#core, agentId, "restart");
  }

  deleteAgent({ agentId }: { agentId: number }): Promise<{ id: number; deleted: true }> {
    return hosted.deleteAgent(this.#core, agentId);
  }

  /**
   * Exports the agent's wallet key (the export is recorded; the wallet is never gas-sponsored again). With
   * `ownerPrivateKey` (default: this client's executor key) it is opened here, locally: `privateKey`.
   */
  exportAgentKey(options: { agentId: number; ownerPrivateKey?: string }): Promise<ExportedKey & { privateKey?: string }> {
    return hosted.exportAgentKey(this.#core, options);
  }

  /** Sends the stopped agent's settlement tokens (all, or `amountRaw`) to the owner's address. */
  withdrawFromAgent(options: { agentId: number; amountRaw?: bigint | string }): Promise<Withdrawal> {
    return hosted.withdrawFromAgent(this.#core, options);
  }

  sendAgentMessage(message: { agentId: number; body: string }): Promise<AgentMessage> {
    return hosted.sendAgentMessage(this.#core, message);
  }

  agentMessages({ agentId }: { agentId: number }): Promise<{ messages: AgentMessage[] }> {
    return hosted.agentMessages(this.#core, agentId);
  }

  // ------------------------------------------------------------------ services and rentals (client/services.ts)

  /** Active services of hosted agents (fixed-price calls to rent), newest first; `agent` keeps one agent's. */
  browseServices(filter: { agent?: string; limit?: number } = {}): Promise<ServiceList> {
    return services.browseServices(this.#core, filter);
  }

  /** One service (an inactive one shows `active: false`); `SERVICE_NOT_FOUND` when unknown or deleted. */
  getService(serviceId: number): Promise<ServiceView> {
    return services.getService(this.#core, serviceId);
  }

  /** Every service of one of this account's hosted agents, inactive ones too. */
  agentServices({ agentId }: { agentId: number }): Promise<ServiceList> {
    return services.agentServices(this.#core, agentId);
  }

  /** Lists a service of one of this account's hosted agents: a fixed-price call others rent. */
  createService(service: Omit<CreateServiceBody, "priceRaw"> & { agentId: number; priceRaw: bigint | string }): Promise<ServiceView> {
    return services.createService(this.#core, service);
  }

  /** Changes a service; a new price applies to rentals listed from now on. */
  updateService(
    change: Omit<UpdateServiceBody, "priceRaw"> & { agentId: number; serviceId: number; priceRaw?: bigint | string },
  ): Promise<ServiceView> {
    return services.updateService(this.#core, change);
  }

  /** Deletes a service: no new rentals; those already paid stay pinned to the agent. */
  deleteService(service: { agentId: number; serviceId: number }): Promise<{ id: number; deleted: true }> {
    return services.deleteService(this.#core, service);
  }

  /**
   * Rents a service: one task at the service's price, a one-hour deadline and automatic checks, pinned to its agent
   * (the prompt encrypted to that agent unless public), funded from this client's wallet and listed with `serviceId`;
   * then waits up to `waitSeconds` (default 45) for the result. A refusal before funding pays nothing and throws its
   * code; a rental funded but not listed throws the listing's code with `taskHash` and `indexParams` in `body` (cancel
   * it with `cancelAndRefund(taskHash)` for a full refund). When the wait runs out, `done` is false: follow it with
   * `waitForResult` or `getTask`.
   */
  rentService(options: RentServiceOptions): Promise<Rental> {
    return services.rentService(this.#core, options);
  }

  /**
   * Follows a task as its poster until it is judged or over (RENTAL_DONE_STATUSES) or `waitMs` runs out (`done` false),
   * with the output once delivered. Between reads it waits on the task's events (`watch`, or this client's event
   * stream: `watchTask`), reading again at least every 5 s; every `pollMs` against a server without the stream.
   */
  waitForResult(options: {
    taskHash: string;
    waitMs: number;
    onProgress?: (progress: RentalProgress) => void;
    pollMs?: number;
    watch?: (taskHash: string, chain: string) => Promise<TaskWatch>;
  }): Promise<RentalState> {
    return services.waitForResult(this.#core, options);
  }

  /** The task's events as they come (docs/events.md), to wait on rather than ask again and again. */
  watchTask(taskHash: string, chain?: string): Promise<TaskWatch> {
    return services.watchOf(this.#core)(taskHash, chain);
  }

  // ------------------------------------------------------------------ posting (client/posting.ts)

  /** Posts one task (a bulk run of one row; `agent` verification allowed). */
  postTask(input: PostTaskInput, options: Pick<PostTasksOptions, "chain"> = {}): Promise<PostResult> {
    return posting.postTask(this.#core, input, options);
  }

  /**
   * Posts up to 1,000 tasks: every row is checked first (`INVALID_ROWS` refuses the whole call), `maxTotalRaw` is
   * checked before spending, the escrow is approved once for the total, and tasks are funded per chunk and listed.
   * Unlisted rows carry `indexParams`: finish them with `indexTask`, never with `postTasks` again.
   */
  postTasks(rows: readonly PostTaskInput[], options: PostTasksOptions = {}): Promise<PostTasksResult> {
    return posting.postTasks(this.#core, rows, options);
  }

  /**
   * Posts rows already checked (`checkRows`, or core/bulk's check of a task file, as the journaled engine holds them)
   * without checking them again: the one check of a row on its way from a CSV line to the escrow. Otherwise as
   * `postTasks`.
   */
  postCheckedTasks(rows: readonly CheckedRow[], options: PostTasksOptions = {}): Promise<PostTasksResult> {
    return posting.postCheckedTasks(this.#core, rows, options);
  }

  /** Lists a funded task from the `indexParams` a run left. */
  indexTask(params: IndexParams): Promise<ListingOutcome> {
    return posting.indexTask(this.#core, params);
  }

  // ------------------------------------------------------------------ judging and settling (client/settling.ts)

  /**
   * The poster's verdict on the latest delivered round of a `manual` task (the service settles it), or the designated
   * verifier's on an `agent` task (signed by this client's wallet, then reported back with its hash so the task view
   * shows it with its reasons). Answers once the settlement shows: `status` is the task's status after the verdict
   * (`verified`, `failed`...), never the `awaiting_verification` it had before.
   */
  reviewResult(verdict: {
    taskHash: string;
    approve: boolean;
    score?: number;
    reasons?: string[];
  }): Promise<Pick<VerdictAnswer, "status" | "txHash">> {
    return settling.reviewResult(this.#core, verdict);
  }

  /**
   * Gets the escrow back: cancels an open task (`action: "cancel"`, the whole reward back), or claims after the
   * deadline (`action: "claim-timeout"`: a refund, or the escalation of delivered work nobody judged). Signed by this
   * client's wallet. `outcome` is the API's word for what the transaction does (`refund`, `escalate`).
   */
  cancelAndRefund(taskHash: string): Promise<Settled> {
    return settling.cancelAndRefund(this.#core, taskHash);
  }

  /** A poster's or worker's own settlement call, signed by this client's wallet. */
  settle({ taskHash, action }: { taskHash: string; action: SettleAction }): Promise<Settled> {
    return settling.sendSettlement(this.#core, taskHash, action);
  }
}
