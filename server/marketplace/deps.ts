import type { Db } from "../db";
import type { ChainRegistry } from "../chains";
import type { AgentRegistry, RegisteredAgent } from "../agents";
import type { Outbox } from "../outbox";
import type { TaskContext } from "../tasks";
import type { Clock } from "../http/types";
import type { AbuseConfig } from "../config";
import type { Offers } from "./offers";
import type { Custody } from "./custody";
import { refusal } from "./eligibility";
import { MarketError } from "@market/core/errors";

/** What taking a task (accepting, bidding) depends on. */
export interface MarketplaceDeps {
  db: Db;
  chains: ChainRegistry;
  agents: AgentRegistry;
  offers: Offers;
  custody: Custody;
  /** The verifier key's outbox per chain name; a chain without one cannot assign or judge. */
  outboxes: ReadonlyMap<string, Outbox>;
  now: Clock;
  /** How long an answer waits for the indexer to show a confirmed transaction (ms). */
  indexerWaitMs?: number;
  /** The assignment cap and the accept rate (docs/security.md); DEFAULT_ABUSE when absent. */
  abuse?: Pick<AbuseConfig, "assignmentCap" | "acceptsPerMinute">;
}

/** The caller's agent record, or `AGENT_NOT_REGISTERED`. */
export async function registeredAgent(agents: Pick<AgentRegistry, "lookup">, wallet: string): Promise<RegisteredAgent> {
  const agent = await agents.lookup(wallet);
  if (!agent) throw new MarketError("AGENT_NOT_REGISTERED");
  return agent;
}

/** The brief key wrapped to `agent`, if the poster (or a custody re-wrap) gave it one. */
export async function wrappedKeyOf(db: Db, taskHash: string, agent: string): Promise<string | undefined> {
  const row = await db
    .selectFrom("task_keys")
    .select("wrapped_key")
    .where("task_hash", "=", taskHash)
    .where("agent_address", "=", agent)
    .executeTakeFirst();
  return row?.wrapped_key;
}

/** The refusal this agent gets for this task, counting wraps and custody copies. */
export async function refusalFor(
  deps: Pick<MarketplaceDeps, "db" | "offers" | "custody" | "now">,
  ctx: TaskContext,
  agent: RegisteredAgent,
): Promise<MarketError | undefined> {
  const wrapped = ctx.listing.privacy === "public" || (await wrappedKeyOf(deps.db, ctx.listing.task_hash, agent.profile.address)) !== undefined;
  return refusal(
    {
      listing: ctx.listing,
      status: ctx.onChain.status,
      deadline: ctx.onChain.deadline,
      posterAccountId: await deps.offers.posterAccount(ctx.listing.poster),
      excluded: await deps.offers.subtaskExclusion(ctx.listing.task_hash),
      wrappedToCandidate: wrapped,
      rewrappable: deps.custody.available && ctx.listing.key_custody_blob !== null,
    },
    agent,
    Math.floor(deps.now() / 1000),
  );
}
