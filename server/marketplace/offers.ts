import type { Db } from "../db";
import { accountsOfAddress, posterAccountOf } from "../db/same-account";
import { listedFields, listingChain } from "../tasks/listing-codec";
import type { ListingWithAmount } from "../db/schema";
import type { AgentRegistry } from "../agents";
import { refusal, type Exclusion } from "./eligibility";
import { decayedScore, earnsBadge, offerRank } from "@market/core/reputation";
import { MarketError } from "@market/core/errors";

/** How many registered agents are ranked for one offer. */
const CANDIDATES = 500;

export type Offers = ReturnType<typeof createOffers>;

/**
 * Exclusive windows. When a task opens, the best-ranked eligible agent (decayed score, plus a bonus per badge among
 * the task's required capabilities) gets `windowMs` to accept; everyone else gets `OFFER_HELD` until it lapses or
 * the agent declines. Pinned tasks have one possible agent and get no offer.
 */
export function createOffers({
  db,
  agents,
  now,
  windowMs,
  rewrappable,
}: {
  db: Db;
  agents: AgentRegistry;
  now: () => number;
  windowMs: number;
  /** Whether a custody copy can be re-wrapped (the service holds the custody key). */
  rewrappable: boolean;
}) {
  async function posterAccount(poster: string): Promise<number | null> {
    // A hosted agent's wallet is its owner's (issue 23 item 5): its tasks are the owner's own.
    return posterAccountOf(db, poster);
  }

  /**
   * For a sub-task a hosted agent posted with `delegate_to_agent` (issue 23 item 1): the poster of the task it was
   * working and that poster's accounts, none of which may take the sub-task. Null for any other task.
   */
  async function subtaskExclusion(taskHash: string): Promise<Exclusion | null> {
    const row = await db
      .selectFrom("hosted_subtasks")
      .innerJoin("listings", "listings.task_hash", "hosted_subtasks.task_hash")
      .select("listings.poster")
      .where("hosted_subtasks.subtask_hash", "=", taskHash)
      .executeTakeFirst();
    if (!row) return null;
    return { poster: row.poster, accounts: await accountsOfAddress(db, row.poster) };
  }

  /** Picks the best-ranked eligible agent for a task that just opened; undefined when nobody qualifies. */
  async function open(listing: ListingWithAmount, deadline: number): Promise<{ agent: string; expiresAt: number } | undefined> {
    if (windowMs <= 0 || listing.target_executor !== null) return undefined;
    const required = listedFields(listing).requiredCapabilities;
    const candidates = await agents.search({ chain: listingChain(listing), capabilities: required, limit: CANDIDATES });
    if (candidates.length === 0) return undefined;
    const wrapped = new Set(
      (await db.selectFrom("task_keys").select("agent_address").where("task_hash", "=", listing.task_hash).execute()).map((k) => k.agent_address),
    );
    const addresses = candidates.map((c) => c.profile.address);
    const scores = new Map(
      (await db.selectFrom("reputation").select(["address", "raw_score", "last_settled_at"]).where("address", "in", addresses).execute()).map((r) => [
        r.address,
        r,
      ]),
    );
    const badgeRows =
      required.length === 0
        ? []
        : await db.selectFrom("capability_stats").selectAll().where("address", "in", addresses).where("tag", "in", required).execute();
    // A verified badge for a required tag (granted by the team, issue 25 item 7) counts as an earned one does, once per tag.
    const verifiedRows =
      required.length === 0
        ? []
        : await db
            .selectFrom("verified_badges")
            .select(["address", "name"])
            .where("address", "in", addresses)
            .where("kind", "=", "tag")
            .where("name", "in", required)
            .execute();
    const at = now();
    const nowSeconds = Math.floor(at / 1000);
    const posterAccountId = await posterAccount(listing.poster);
    const excluded = await subtaskExclusion(listing.task_hash);
    let best: { agent: string; rank: number } | undefined;
    for (const candidate of candidates) {
      const address = candidate.profile.address;
      const refused = refusal(
        {
          listing,
          status: 0,
          deadline,
          posterAccountId,
          excluded,
          wrappedToCandidate: listing.privacy === "public" || wrapped.has(address),
          rewrappable: rewrappable && listing.key_custody_blob !== null,
        },
        candidate,
        nowSeconds,
      );
      if (refused) continue;
      const score = scores.get(address);
      const decayed = score ? decayedScore(score.raw_score, score.last_settled_at, nowSeconds).decayedScore : 0;
      const badges = new Set([
        ...badgeRows.filter((b) => b.address === address && earnsBadge(b)).map((b) => b.tag),
        ...verifiedRows.filter((b) => b.address === address).map((b) => b.name),
      ]).size;
      const rank = offerRank(decayed, badges);
      if (!best || rank > best.rank) best = { agent: address, rank };
    }
    if (!best) return undefined;
    const expiresAt = at + windowMs;
    await db
      .insertInto("offers")
      .values({
        task_hash: listing.task_hash,
        agent_address: best.agent,
        rank: Math.round(best.rank),
        starts_at: at,
        expires_at: expiresAt,
        declined_at: null,
      })
      .onConflict((oc) => oc.columns(["task_hash", "agent_address"]).doNothing())
      .execute();
    return { agent: best.agent, expiresAt };
  }

  /** `OFFER_HELD` when another agent's window is open on the task. */
  async function requireNotHeld(taskHash: string, agent: string): Promise<void> {
    const at = now();
    const held = await db
      .selectFrom("offers")
      .select(["agent_address", "expires_at"])
      .where("task_hash", "=", taskHash)
      .where("agent_address", "!=", agent)
      .where("declined_at", "is", null)
      .where("expires_at", ">", at)
      .executeTakeFirst();
    if (held) {
      const retryAfterMs = held.expires_at - at;
      throw new MarketError("OFFER_HELD", `Held for a higher-ranked agent for ${Math.ceil(retryAfterMs / 1000)} s more.`, {
        details: [{ message: "retry after the window lapses", retryAfterMs }],
      });
    }
  }

  /** The agent gives up its window; the task is open to everyone at once. False when it held none. */
  async function decline(taskHash: string, agent: string): Promise<boolean> {
    const result = await db
      .updateTable("offers")
      .set({ declined_at: now() })
      .where("task_hash", "=", taskHash)
      .where("agent_address", "=", agent)
      .where("declined_at", "is", null)
      .where("expires_at", ">", now())
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  return { open, requireNotHeld, decline, posterAccount, subtaskExclusion };
}
