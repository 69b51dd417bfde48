import type { AgentProfile, AgentRegistry } from "../agents";
import { loadTask, normalizeWrappedKeys } from "../tasks";
import { refusalFor, registeredAgent, type MarketplaceDeps } from "./deps";
import { asAddress, asTaskHash, type AddKeysAnswer, type BidAnswer, type BidsAnswer } from "@market/core/api";
import { MarketError } from "@market/core/errors";

export type Bidding = ReturnType<typeof createBidding>;

/**
 * Bids: an agent whose brief key is missing registers its interest, the poster reads the bids and wraps the key to
 * the agents it chooses.
 */
export function createBidding(
  deps: Pick<MarketplaceDeps, "db" | "chains" | "offers" | "custody" | "now"> & { agents: Pick<AgentRegistry, "lookup" | "search"> },
) {
  const { db, chains, agents, now } = deps;

  /** Interest in a task whose brief is not wrapped to the agent; the poster reads bids and may wrap the key. */
  async function bid(wallet: string, taskHash: string, message: string | undefined): Promise<BidAnswer> {
    const agent = await registeredAgent(agents, wallet);
    const ctx = await loadTask(db, chains, taskHash);
    const refused = await refusalFor(deps, ctx, agent);
    if (refused && refused.code !== "NEEDS_WRAP") throw refused;
    await db
      .insertInto("bids")
      .values({ task_hash: ctx.listing.task_hash, agent_address: agent.profile.address, message: message ?? null, created_at: now() })
      .onConflict((oc) => oc.columns(["task_hash", "agent_address"]).doUpdateSet({ message: message ?? null }))
      .execute();
    return {
      taskHash: asTaskHash(ctx.listing.task_hash),
      agent: agent.profile.address,
      wrapped: refused === undefined || ctx.listing.privacy === "public",
    };
  }

  async function bids(wallet: string, taskHash: string): Promise<BidsAnswer["bids"]> {
    const ctx = await loadTask(db, chains, taskHash);
    if (ctx.listing.poster !== wallet) throw new MarketError("NOT_POSTER", "Only the poster can read bids.");
    const rows = await db.selectFrom("bids").selectAll().where("task_hash", "=", ctx.listing.task_hash).orderBy("created_at").execute();
    const profiles = await agents.search({ addresses: rows.map((r) => r.agent_address) });
    const byAddress = new Map<string, AgentProfile>(profiles.map((p) => [p.profile.address, p.profile]));
    return rows.map((r) => {
      const profile = byAddress.get(r.agent_address);
      return {
        agent: asAddress(r.agent_address),
        message: r.message,
        createdAt: r.created_at,
        publicKey: profile?.publicKey ?? null,
        capabilities: profile?.capabilities ?? [],
        reputation: profile?.reputation ?? 0,
      };
    });
  }

  /** The poster wraps the brief key to more agents (bidders) after listing. */
  async function addKeys(wallet: string, taskHash: string, wrappedKeys: Record<string, string>): Promise<AddKeysAnswer> {
    const ctx = await loadTask(db, chains, taskHash);
    if (ctx.listing.poster !== wallet) throw new MarketError("NOT_POSTER");
    if (ctx.listing.privacy !== "private") throw new MarketError("PUBLIC_TASK_KEYS");
    const entries = Object.entries(normalizeWrappedKeys(wrappedKeys));
    const known = await agents.search({ addresses: entries.map(([a]) => a) });
    const registeredAddresses = new Set<string>(known.map((k) => k.profile.address));
    const unknown = entries.filter(([a]) => !registeredAddresses.has(a));
    if (unknown.length > 0) {
      throw new MarketError("AGENT_NOT_FOUND", `Not registered: ${unknown.map(([a]) => a).join(", ")}`);
    }
    for (const [agent, key] of entries) {
      await db
        .insertInto("task_keys")
        .values({ task_hash: ctx.listing.task_hash, agent_address: agent, wrapped_key: key })
        .onConflict((oc) => oc.columns(["task_hash", "agent_address"]).doNothing())
        .execute();
    }
    return { taskHash: asTaskHash(ctx.listing.task_hash), agents: entries.map(([a]) => a) };
  }

  return { bid, bids, addKeys };
}
