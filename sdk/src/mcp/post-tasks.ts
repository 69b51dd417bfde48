/**
 * `post_tasks` for both surfaces: the rows checked by the bulk rules (at most 200), the agents that can open each
 * private brief (any chain: the MCP rule), the facts a quote shows, and the poster that runs the call. `market mcp`'s
 * poster and the API's custodied one (`callPoster`, sdk/src/posting/journal/call.ts) run the journaled posting
 * engine; the remote endpoint's (`unsignedPoster`) quotes and never pays.
 */
import { clientError, ApiError } from "../errors";
import { checkRows, findRecipients, type CheckedRow, type PostTaskInput, type WrapTo } from "../posting";
import { chunkSizeFor } from "../posting/fund";
import type { MarketClient } from "../client";
import type { Settlement } from "../chain";
import type { McpTaskRow } from "@market/core/api";
import { MAX_MCP_BULK_ROWS } from "@market/core/limits";

/** What a quote shows, computed the same way at the quote and at the confirm. */
export interface PostFacts {
  tasks: number;
  alreadyPosted: number;
  /** Paid by an earlier call under the key, to be listed without paying. */
  toFinish: number;
  toPost: number;
  escrow: bigint;
  privacy: { public: number; private: number };
  transactions: number;
  payFrom: string;
  walletBalance: bigint;
  settlement: string;
  currency: string;
  escrowAddress: string;
}

export type McpRowStatus = "posted" | "already_posted" | "unlisted" | "failed" | "not_started";

export interface PostRunResult {
  tasks: number;
  alreadyPosted: number;
  posted: number;
  unlisted: number;
  failed: number;
  notStarted: number;
  /** Raw units this call paid into escrow. */
  escrowPaid: string;
  results: Array<{
    index: number;
    status: McpRowStatus;
    amount: string;
    taskHash?: string;
    txHash?: string;
    error?: { code: string; message: string };
  }>;
}

/** One call's run, opened for its quote or its confirm. */
export interface PostSession {
  facts: PostFacts;
  /** Pays and lists (the confirm, once its quote is redeemed). */
  execute(): Promise<PostRunResult>;
  /** Ends the session (the journal's lock released, the wallet's connection closed). */
  close(): void | Promise<void>;
}

export interface Poster {
  /**
   * What is posted, paid and left under this idempotencyKey; `IDEMPOTENCY_KEY_REUSED` for another payload. `wrapTo`:
   * whom private briefs are wrapped to (default every agent with the capabilities on any chain, the MCP rule; a rental:
   * its service's agent).
   */
  open(rows: readonly CheckedRow[], idempotencyKey: string, options?: { wrapTo?: WrapTo }): Promise<PostSession>;
}

/** The SDK row of an MCP task: auto-verified with the bulk defaults, no target or zone. */
export function inputOf(task: McpTaskRow): PostTaskInput {
  return {
    instructions: task.instructions,
    amountRaw: task.amount,
    ...(task.durationSeconds !== undefined ? { durationSeconds: task.durationSeconds } : {}),
    ...(task.privacy !== undefined ? { privacy: task.privacy } : {}),
    ...(task.capabilities !== undefined ? { capabilities: task.capabilities } : {}),
    ...(task.routingSummary !== undefined ? { routingSummary: task.routingSummary } : {}),
  };
}

/** Every row checked by the bulk rules before anything is sent; any bad row (or more than 200) is `INVALID_ROWS`. */
export function checkMcpRows(tasks: readonly McpTaskRow[]): CheckedRow[] {
  return checkRows(tasks.map(inputOf), { allowAgentMode: false, maxRows: MAX_MCP_BULK_ROWS });
}

/**
 * Refuses, before anything is quoted or sent, private rows no registered agent (with a public key and the row's
 * capabilities, on any chain) can open: `NO_EXECUTORS`, with each such row in `errors`.
 */
export async function requireExecutors(client: MarketClient, rows: readonly CheckedRow[]): Promise<void> {
  if (!rows.some((r) => r.row.privacy === "private")) return;
  try {
    await findRecipients({ http: client.http, settlement: await client.settlement() }, rows, "any-chain");
  } catch (error) {
    if (error instanceof ApiError && error.code === "INVALID_ROWS") {
      throw clientError("NO_EXECUTORS", "No registered agent can open some private tasks (none holds their capabilities); nothing was sent.", {
        errors: error.body.errors ?? [],
      });
    }
    throw error;
  }
}

/** The quote's facts for rows to pay for now (`fresh`), given the wallet's balance and allowance. */
export function factsOf(input: {
  tasks: number;
  alreadyPosted: number;
  toFinish: number;
  fresh: ReadonlyArray<{ amount: bigint; privacy: "public" | "private" }>;
  settlement: Settlement;
  payFrom: string;
  balance: bigint;
  allowance: bigint;
}): PostFacts {
  const escrow = input.fresh.reduce((sum, r) => sum + r.amount, 0n);
  const fundings = Math.ceil(input.fresh.length / chunkSizeFor(input.settlement, undefined));
  return {
    tasks: input.tasks,
    alreadyPosted: input.alreadyPosted,
    toFinish: input.toFinish,
    toPost: input.fresh.length,
    escrow,
    privacy: {
      public: input.fresh.filter((r) => r.privacy === "public").length,
      private: input.fresh.filter((r) => r.privacy === "private").length,
    },
    transactions: fundings + (fundings > 0 && input.allowance < escrow ? 1 : 0),
    payFrom: input.payFrom,
    walletBalance: input.balance,
    settlement: input.settlement.chain,
    currency: "USDC",
    escrowAddress: input.settlement.escrowAddress,
  };
}

/**
 * The remote endpoint's poster: it quotes from what the service sees (the API key's wallet, its balance and allowance
 * on the posting chain) and never pays; the service keeps no journal of a self-run wallet's runs, so every row counts
 * as to be paid. Confirming is refused earlier (`USE_LOCAL_MCP`).
 */
export function unsignedPoster(
  client: MarketClient,
  readWallet: (chain: string, wallet: string) => Promise<{ balance: bigint; allowance: bigint }>,
): Poster {
  return {
    async open(rows) {
      const [settlement, payFrom] = await Promise.all([client.settlement(), client.whoami()]);
      const { balance, allowance } = await readWallet(settlement.chain, payFrom);
      const facts = factsOf({
        tasks: rows.length,
        alreadyPosted: 0,
        toFinish: 0,
        fresh: rows.map((r) => ({ amount: r.row.amount, privacy: r.row.privacy })),
        settlement,
        payFrom,
        balance,
        allowance,
      });
      return {
        facts,
        execute: () => Promise.reject(clientError("USE_LOCAL_MCP", "The remote endpoint never signs for a self-run wallet; run `market mcp`.")),
        close() {},
      };
    },
  };
}
