/**
 * The MCP tools of the marketplace, written once for both surfaces: `market mcp` (stdio, signing locally with the API
 * key's wallet) and the remote /mcp endpoint of the API server (which signs nothing for a self-run wallet, and signs
 * for a hosted agent's custodied wallet when its owner names the agent). A tool is
 * an entry of `TOOLS`: its name and arguments (core/api/mcp.ts), a description (all the model knows of it) and what it
 * does with the surface. Each answers structured content plus a short text summary; a refusal is an MCP tool error
 * carrying the API's code.
 */
import type { TSchema } from "@sinclair/typebox";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { ApiError, apiErrorCode, clientError, statusOfCode } from "../errors";
import { ERROR_CODES, isErrorCode } from "@market/core/errors";
import type { MarketClient } from "../client";
import type { TaskWatch } from "../events";
import { checkArgs, zodArgs } from "./schema";
import { SKILL_TOOLS } from "./skill-tools";
import { fingerprintOf, type QuoteStore } from "./quotes";
import { checkMcpRows, requireExecutors, type PostSession, type Poster, type PostRunResult } from "./post-tasks";
import { checkRows } from "../posting";
import { rentalInput } from "../rentals";
import {
  asRawAmount,
  BidOnTaskArgs,
  BrowseServicesArgs,
  GetServiceArgs,
  PostTasksArgs,
  RentServiceArgs,
  TaskHashArgs,
  PollTaskResultArgs,
  type McpQuote,
  type ServiceView,
  type TaskView,
} from "@market/core/api";
import { formatUsdc } from "@market/core/money";
import { redactUrls } from "@market/core/text";
import { agentChains } from "@market/core/chains";
import { MCP_QUOTE_TTL_MS, MCP_RENT_WAIT_SECONDS_DEFAULT } from "@market/core/limits";

/** What a surface gives the tools. */
export interface McpSurface {
  /** The API as the caller's API key. */
  client: MarketClient;
  quotes: QuoteStore;
  poster: Poster;
  /**
   * Whether the surface signs with the API key's wallet: `market mcp`, and the remote endpoint acting as a hosted
   * agent's custodied wallet; for a self-run wallet the remote endpoint answers `USE_LOCAL_MCP`.
   */
  signs: boolean;
  /**
   * Runs what uses the paying wallet (its journal, its signatures) with the wallet held for it alone; the remote
   * endpoint holds a custodied wallet meanwhile (the agent stopped, no withdrawal or other spend). Default: just runs.
   */
  exclusive?<T>(run: () => Promise<T>): Promise<T>;
  /** A task's events to wait on (`poll_task_result`'s `waitSeconds`); default: the client's event stream. */
  watchTask?(taskHash: string, chain: string): Promise<TaskWatch>;
}

/** The surface's own way to wait on a task's events, when it has one. */
const watchOf = (surface: McpSurface) => (surface.watchTask ? { watch: surface.watchTask.bind(surface) } : {});

/** `run` with the surface's wallet held for it (`McpSurface.exclusive`). */
const withWallet = <T>(surface: McpSurface, run: () => Promise<T>): Promise<T> => (surface.exclusive ? surface.exclusive(run) : run());

export interface ToolAnswer {
  data: Record<string, unknown>;
  summary: string;
}

export interface McpTool {
  name: string;
  title: string;
  description: string;
  args: TSchema;
  run(args: never, surface: McpSurface): Promise<ToolAnswer>;
}

const tool = <A>(definition: Omit<McpTool, "run"> & { run(args: A, surface: McpSurface): Promise<ToolAnswer> }): McpTool => definition;

const usdc = (raw: bigint | string) => `${formatUsdc(BigInt(raw))} USDC`;

function requireSigner(surface: McpSurface, what: string) {
  if (!surface.signs) {
    throw clientError(
      "USE_LOCAL_MCP",
      `${what} must be signed by your wallet, and this remote endpoint never holds a self-run wallet's key. Run \`npx market mcp\` locally (MARKET_API_KEY, MARKET_PRIVATE_KEY, MARKET_RPC_ARC, MARKET_ESCROW_ARC) and call it there (for a hosted agent's wallet, which the service custodies, send \`X-Market-Agent: <agent id>\` to this endpoint instead); nothing was spent.`,
    );
  }
}

// ------------------------------------------------------------------ post_tasks

const postTasks = tool<import("@market/core/api").PostTasksArgs>({
  name: "post_tasks",
  title: "Post tasks (escrowed USDC rewards)",
  description:
    "Post 1 to 200 tasks to the marketplace, each with a USDC reward locked in escrow until an agent's result passes automatic checks " +
    "(at least 10 characters of real content; otherwise the reward comes back to you). Spending takes two calls: call without `confirm` " +
    "to get a quote (tasks, escrow total, paying wallet and its balance, transactions; nothing is spent), show it to the user, then call " +
    "again with exactly the same arguments plus `confirm: true` and the quote's `quoteId` (single-use, valid 10 minutes). Private tasks " +
    "(the default) are encrypted for the registered agents holding the listed capabilities. If a call stops part-way, call again with " +
    "the same `idempotencyKey`: tasks already posted are reported, tasks paid but not listed are listed without paying again. " +
    'Amounts are USDC raw units (6 decimals): "1000000" is 1 USDC. Poll results with poll_task_result.',
  args: PostTasksArgs,
  async run(args, surface) {
    // The rows first, by the bulk rules every client uses: any bad row refuses the whole call (INVALID_ROWS).
    const checked = checkMcpRows(args.tasks);
    const valid = checkArgs<typeof args>(PostTasksArgs, args);
    if (valid.confirm) requireSigner(surface, "Paying the escrow");
    await requireExecutors(surface.client, checked);
    return withWallet(surface, async () => {
      const session = await surface.poster.open(checked, valid.idempotencyKey);
      try {
        const spent = await quoteOrSpend("post_tasks", valid, session, surface);
        if ("quote" in spent) return spent.quote;
        return { data: { ...spent.result }, summary: runSummary(spent.result) };
      } finally {
        await session.close();
      }
    });
  },
});

/**
 * The two-step spend of a session: without `confirm`, the quote (stored by the service, spending nothing); with it,
 * the quote redeemed for exactly this call and its facts, then the run. `binding` adds facts the user agrees to beyond
 * the quote's (a rental's service and agent).
 */
async function quoteOrSpend(
  toolName: string,
  args: { confirm?: boolean; quoteId?: string } & Record<string, unknown>,
  session: PostSession,
  surface: McpSurface,
  binding: Record<string, unknown> = {},
): Promise<{ quote: ToolAnswer } | { result: PostRunResult }> {
  const { facts } = session;
  const quoted = {
    tasks: facts.tasks,
    alreadyPosted: facts.alreadyPosted,
    toPost: facts.toPost,
    escrow: asRawAmount(facts.escrow),
    currency: facts.currency,
    settlement: facts.settlement,
    payFrom: facts.payFrom,
    walletBalance: asRawAmount(facts.walletBalance),
    privacy: facts.privacy,
    transactions: facts.transactions,
  };
  // What the user agrees to: the arguments, and the quote's facts that decide what is paid (the balance only as
  // whether it covers the escrow: gas spent meanwhile does not void a quote).
  const { walletBalance: _balance, ...paid } = quoted;
  const fingerprint = fingerprintOf(toolName, args, {
    ...paid,
    ...binding,
    escrowAddress: facts.escrowAddress,
    balanceCovers: facts.walletBalance >= facts.escrow,
  });

  if (!args.confirm) {
    const { quoteId } = await surface.quotes.create(toolName, fingerprint, quoted);
    const quote: McpQuote = { ...quoted, quoteId };
    return { quote: { data: quote, summary: quoteSummary(toolName, quote, facts.toFinish) } };
  }
  if (!args.quoteId)
    throw clientError("QUOTE_REQUIRED", "A confirm call needs the quoteId of this call's quote: call without confirm first; nothing was spent.");
  await surface.quotes.redeem(args.quoteId, toolName, fingerprint);
  return { result: await session.execute() };
}

function quoteSummary(toolName: string, q: McpQuote, toFinish: number): string {
  const lines = [
    `Quote ${q.quoteId} (valid ${MCP_QUOTE_TTL_MS / 60_000} minutes, single-use): ${q.tasks} task(s)` +
      (q.alreadyPosted ? `, ${q.alreadyPosted} already posted under this idempotencyKey` : "") +
      (toFinish ? `, ${toFinish} paid earlier and only to be listed (nothing to pay)` : "") +
      `; ${q.toPost} to pay for (public ${q.privacy.public}, private ${q.privacy.private}).`,
    `Escrow ${usdc(q.escrow)} on ${q.settlement} from ${q.payFrom} (balance ${usdc(q.walletBalance)}); ${q.transactions} transaction(s) to sign.`,
  ];
  if (BigInt(q.walletBalance) < BigInt(q.escrow)) lines.push("The wallet balance does not cover the escrow: the run would stop unpaid.");
  lines.push(`Nothing was spent. To go ahead, call ${toolName} again with the same arguments plus confirm: true and quoteId "${q.quoteId}".`);
  return lines.join("\n");
}

function runSummary(r: PostRunResult): string {
  const parts = [
    `posted ${r.posted}`,
    `already posted ${r.alreadyPosted}`,
    `paid, not listed ${r.unlisted}`,
    `failed, nothing paid ${r.failed}`,
    `not started ${r.notStarted}`,
  ];
  const left = r.tasks - r.posted - r.alreadyPosted;
  const next =
    left > 0
      ? ` ${left} task(s) are not posted: call post_tasks again with the same idempotencyKey (a new quote) to finish them without paying twice.`
      : "";
  return `${r.tasks} task(s): ${parts.join("; ")}. Escrow paid by this call: ${usdc(r.escrowPaid)}.${next}`;
}

// ------------------------------------------------------------------ tasks after posting

const pollTaskResult = tool<import("@market/core/api").PollTaskResultArgs>({
  name: "poll_task_result",
  title: "Poll a task's status and result",
  description:
    "Get a task's status (open, submitted, awaiting_verification, failed, verified, completed, cancelled, refunded, expired...) and, " +
    "to its poster, the agent's delivered output and the verdict. Call it until the status is verified or completed; with " +
    "`waitSeconds` it waits for that (woken by the task's events) before answering.",
  args: PollTaskResultArgs,
  async run(args, surface) {
    const { taskHash, waitSeconds = 0 } = checkArgs<typeof args>(PollTaskResultArgs, args);
    if (waitSeconds > 0) await surface.client.waitForResult({ taskHash, waitMs: waitSeconds * 1000, ...watchOf(surface) });
    const task = await surface.client.getTask(taskHash);
    const data = taskResult(task);
    const output = data.output === undefined ? "" : `; output: ${truncate(String(data.output), 500)}`;
    return { data, summary: `Task ${task.meta.taskHash} is ${task.state.status} (reward ${usdc(task.meta.reward.amount)})${output}` };
  },
});

function taskResult(task: TaskView) {
  const result = task.state.resultData;
  return {
    taskHash: task.meta.taskHash,
    status: task.state.status,
    reward: task.meta.reward.amount,
    privacy: task.meta.privacy,
    deadline: task.meta.deadline,
    ...(task.state.worker ? { worker: task.state.worker } : {}),
    rounds: task.state.rounds,
    ...(result?.output !== undefined ? { output: result.output } : {}),
    ...(result?.verificationResult ? { verificationResult: result.verificationResult } : {}),
  };
}

const truncate = (text: string, max: number) => (text.length > max ? `${text.slice(0, max)}...` : text);

const cancelTask = tool<import("@market/core/api").TaskHashArgs>({
  name: "cancel_task",
  title: "Cancel an open task (full refund)",
  description:
    "Cancel a task you posted that no agent has taken yet: the whole reward comes back to your wallet. Works for a task paid but never " +
    "listed too. A task already taken cannot be cancelled: after its deadline use claim_timeout.",
  args: TaskHashArgs,
  async run(args, surface) {
    const { taskHash } = checkArgs<typeof args>(TaskHashArgs, args);
    requireSigner(surface, "Cancelling a task");
    const done = await withWallet(surface, async (): Promise<{ outcome: string; txHash: string }> => {
      try {
        return await surface.client.settle({ taskHash, action: "cancel" });
      } catch (error) {
        // Paid but never listed: the service does not know it; the escrow does.
        if (!(error instanceof ApiError && error.code === "TASK_NOT_FOUND")) throw error;
        return surface.client.cancelAndRefund(taskHash);
      }
    });
    return {
      data: { taskHash, ...done },
      summary: `Task ${taskHash}: cancelled, the whole reward is back in your wallet (transaction ${done.txHash}).`,
    };
  },
});

const claimTimeout = tool<import("@market/core/api").TaskHashArgs>({
  name: "claim_timeout",
  title: "Claim a task back after its deadline",
  description:
    "After a task's deadline, get the reward back when the agent never delivered, or its result failed and the 3-day appeal window " +
    "has passed (a refund to your wallet). If a result was delivered and never judged, this escalates it instead.",
  args: TaskHashArgs,
  async run(args, surface) {
    const { taskHash } = checkArgs<typeof args>(TaskHashArgs, args);
    requireSigner(surface, "Claiming a task");
    const done = await withWallet(surface, () => surface.client.settle({ taskHash, action: "claim-timeout" }));
    return { data: { taskHash, ...done }, summary: `Task ${taskHash}: ${done.outcome} (transaction ${done.txHash}).` };
  },
});

// ------------------------------------------------------------------ services and rentals

const browseServices = tool<import("@market/core/api").BrowseServicesArgs>({
  name: "browse_services",
  title: "Browse services to rent",
  description:
    "List the active services of hosted agents: fixed-price calls you can rent with rent_service. Each has an id (serviceId), a name, " +
    'a description, its price in USDC raw units (price_raw; 6 decimals: "1000000" is 1 USDC), the agent offering it and how many ' +
    "calls were sold. Optionally only one agent's services (`agent`, its 0x address). Costs nothing.",
  args: BrowseServicesArgs,
  async run(args, surface) {
    const { agent } = checkArgs<typeof args>(BrowseServicesArgs, args);
    const { services, total } = await surface.client.browseServices(agent ? { agent } : {});
    const lines = services.map(
      (s) => `#${s.id} ${s.name}: ${usdc(s.price_raw)} per call, by ${s.agent_name} (${s.agent_address}), sold ${s.sold_count}`,
    );
    return {
      data: { services, total },
      summary: services.length === 0 ? "No active services." : `${total} active service(s):\n${lines.join("\n")}`,
    };
  },
});

const getService = tool<import("@market/core/api").GetServiceArgs>({
  name: "get_service",
  title: "Get one service",
  description:
    "Get one service by its id: what it does, its price per call (price_raw, USDC raw units), whether it is active, the agent offering " +
    "it (address, public key, chains) and how many calls were sold. Rent it with rent_service.",
  args: GetServiceArgs,
  async run(args, surface) {
    const { serviceId } = checkArgs<typeof args>(GetServiceArgs, args);
    const service = await surface.client.getService(serviceId);
    return { data: { service }, summary: serviceSummary(service) };
  },
});

/** A new rental of this service could be taken: it is active, and its agent registered on the posting chain with a key. */
async function requireRentable(surface: McpSurface, service: ServiceView, payFrom: string): Promise<void> {
  if (!service.active) throw clientError("SERVICE_NOT_ACTIVE", `Service ${service.id} is deactivated and takes no new rentals; nothing was spent.`);
  // A hosted agent renting its own service (its owner through X-Market-Agent): the listing would refuse the task pinned
  // to its own poster after the escrow is paid, so the quote refuses it.
  if (service.agent_address.toLowerCase() === payFrom.toLowerCase()) {
    throw clientError("TARGET_IS_POSTER", `Service ${service.id} is this wallet's own (${payFrom}): an agent cannot rent itself; nothing was spent.`);
  }
  const { chain } = await surface.client.settlement();
  if (!service.agent_public_key || !agentChains(service.agent_supported_chains).includes(chain)) {
    throw clientError(
      "TARGET_CHAIN_UNSUPPORTED",
      `The agent of service ${service.id} is not registered for ${chain} with a public key; nothing was spent.`,
    );
  }
}

function serviceSummary(s: ServiceView): string {
  const state = s.active ? "active" : "not active (takes no rentals)";
  return `Service #${s.id} ${s.name} (${s.service_type}), ${usdc(s.price_raw)} per call, by ${s.agent_name} (${s.agent_address}); ${state}; sold ${s.sold_count}.${s.description ? `\n${s.description}` : ""}`;
}

const rentService = tool<import("@market/core/api").RentServiceArgs>({
  name: "rent_service",
  title: "Rent a service (one fixed-price call, escrowed)",
  description:
    "Rent one call of a hosted agent's service (find one with browse_services): your prompt becomes a task at the service's price, " +
    "pinned to its agent, with a one-hour deadline; the price is locked in escrow and paid to the agent only when its result passes " +
    "automatic checks (at least 20 characters, not a refusal). Spending takes two calls: call without `confirm` to get a quote " +
    "(price, paying wallet and balance, transactions; nothing is spent), show it to the user, then call again with exactly the same " +
    "arguments plus `confirm: true` and the `quoteId`. The confirm call waits up to `waitSeconds` (default 45, at most 60) and answers " +
    "the output; otherwise it answers the task hash: poll it with poll_task_result. If a call stops part-way, repeat it with the same " +
    "`idempotencyKey`: a rental already paid is never paid again. The prompt is encrypted to the service's agent unless privacy is public.",
  args: RentServiceArgs,
  async run(args, surface) {
    const valid = checkArgs<typeof args>(RentServiceArgs, args);
    if (valid.confirm) requireSigner(surface, "Paying for a rental");
    const service = await surface.client.getService(valid.serviceId);
    const checked = checkRows([rentalInput(service, valid.prompt, valid.privacy ?? "private")], { allowAgentMode: false, maxRows: 1 });
    const agentKey = service.agent_public_key;
    const spent = await withWallet(surface, async () => {
      const session = await surface.poster.open(
        checked,
        valid.idempotencyKey,
        agentKey ? { wrapTo: { agents: [{ address: service.agent_address, publicKey: agentKey }] } } : {},
      );
      try {
        // A rental to pay for now must be possible: refused before any quote. One posted (or paid) by an earlier call
        // under the key is reported (or listed) whatever the service does since.
        if (session.facts.toPost > 0) await requireRentable(surface, service, session.facts.payFrom);
        return await quoteOrSpend("rent_service", valid, session, surface, { agent: service.agent_address });
      } finally {
        await session.close();
      }
    });
    if ("quote" in spent) return spent.quote;
    const run: PostRunResult = spent.result;
    const row = run.results[0]!;
    if (row.status !== "posted" && row.status !== "already_posted") {
      const error = row.error ?? { code: "INTERNAL_ERROR", message: "The rental was not posted." };
      const paid = row.status === "unlisted";
      throw new ApiError(
        statusOfCode(error.code),
        apiErrorCode(error.code, statusOfCode(error.code)),
        paid
          ? `${error.message} The rental is paid but not listed: repeat this call with the same idempotencyKey to list it (nothing is paid again), or cancel_task ${row.taskHash} for a full refund.`
          : `${error.message} Nothing was spent.`,
        { ...(row.taskHash ? { taskHash: row.taskHash } : {}), ...(row.txHash ? { txHash: row.txHash } : {}), status: row.status },
      );
    }
    const waitSeconds = valid.waitSeconds ?? MCP_RENT_WAIT_SECONDS_DEFAULT;
    const state = await surface.client.waitForResult({ taskHash: row.taskHash!, waitMs: waitSeconds * 1000, ...watchOf(surface) });
    const data = {
      serviceId: service.id,
      ...state,
      amount: row.amount,
      ...(row.txHash ? { txHash: row.txHash } : {}),
      alreadyPosted: row.status === "already_posted",
      escrowPaid: run.escrowPaid,
    };
    const head = `Rental ${state.taskHash} of service #${service.id} (${usdc(row.amount)}${row.status === "already_posted" ? ", paid by an earlier call" : ""})`;
    const summary = !state.done
      ? `${head} is ${state.status} after ${waitSeconds} s: poll it with poll_task_result.`
      : state.output !== undefined
        ? `${head} is ${state.status}. Output:\n${truncate(state.output, 2000)}`
        : `${head} is ${state.status}.`;
    return { data, summary };
  },
});

// ------------------------------------------------------------------ working

const bidOnTask = tool<import("@market/core/api").BidOnTaskArgs>({
  name: "bid_on_task",
  title: "Bid on a private task",
  description:
    "As a registered agent, register interest in an open private task whose brief is not encrypted to you yet; the poster may then " +
    "share it with you. Costs nothing.",
  args: BidOnTaskArgs,
  async run(args, surface) {
    const { taskHash, message } = checkArgs<typeof args>(BidOnTaskArgs, args);
    const bid = await surface.client.bidOnTask({ taskHash, ...(message !== undefined ? { message } : {}) });
    return {
      data: { ...bid },
      summary: bid.wrapped ? `Task ${taskHash}: the brief is already readable by you; accept it.` : `Bid on ${taskHash} recorded for ${bid.agent}.`,
    };
  },
});

/** Every tool, in the order `tools/list` shows them. */
export const TOOLS: readonly McpTool[] = [
  postTasks,
  rentService,
  pollTaskResult,
  cancelTask,
  claimTimeout,
  browseServices,
  getService,
  bidOnTask,
  // The skills registry and an owner's installs (issue 25).
  ...SKILL_TOOLS,
];

/** What a tool answers for a failure that is no API refusal: the detail stays out (it may name an RPC URL and its key). */
export const UNEXPECTED_TOOL_ERROR = "The tool failed unexpectedly; nothing more is told here.";

/**
 * A refusal as an MCP tool error: the code first in the text, and the whole API error as structured content. Anything
 * else (a provider's error, a coded error of the server's own) is answered with its code when the code table knows it,
 * and a fixed message: a provider's message may carry its RPC URL with a key in it, and the model reads this answer.
 * `onUnexpected` gets that error (the remote endpoint logs it, with URLs redacted).
 */
export function toolError(error: unknown, onUnexpected?: (error: unknown) => void): CallToolResult {
  let e: ApiError;
  if (error instanceof ApiError) e = error;
  else {
    onUnexpected?.(error);
    const code = (error as { code?: unknown } | null)?.code;
    e =
      typeof code === "string" && isErrorCode(code)
        ? new ApiError(0, code, ERROR_CODES[code].description)
        : new ApiError(0, "INTERNAL_ERROR", UNEXPECTED_TOOL_ERROR);
  }
  const { code: _code, message: _message, ...rest } = e.body;
  // A client's own refusal may name the URL it called (`WRONG_RPC: The RPC for arc (https://…/v2/<key>)`): URLs are
  // cut to their host, as the server's log does (issue 23 item 7).
  const message = redactUrls(e.message);
  return {
    isError: true,
    content: [{ type: "text", text: `${e.code}: ${message}` }],
    structuredContent: { error: { code: e.code, message, ...rest } },
  };
}

/**
 * The version both MCP servers report (`market mcp` on stdio and the remote /mcp): one tool surface, one version. Raise
 * it when a tool's arguments or answer change.
 */
export const MCP_SERVER_VERSION = "1.0.0";

/** An MCP server with every tool bound to the surface. */
export function createMcpServer(
  surface: McpSurface,
  tools: readonly McpTool[] = TOOLS,
  options: { onUnexpectedError?: (error: unknown) => void } = {},
): McpServer {
  const server = new McpServer({ name: "market", version: MCP_SERVER_VERSION });
  for (const t of tools) {
    server.registerTool(t.name, { title: t.title, description: t.description, inputSchema: zodArgs(t.args) }, async (args: unknown) => {
      try {
        const { data, summary } = await t.run(args as never, surface);
        return { content: [{ type: "text", text: summary }], structuredContent: data };
      } catch (error) {
        return toolError(error, options.onUnexpectedError);
      }
    });
  }
  return server;
}
