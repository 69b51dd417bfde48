import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { Db } from "../db";
import type { Clock } from "../http/types";
import { errorResponses, ok } from "../http/schemas";
import { AddressParams, Badges, Envelope, Leaderboard, LeaderboardQuery, Reputation, asAddress } from "@market/core/api";
import { addressParam } from "../http/params";
import { agentBadges } from "./badges";
import { decayedScore, FRESH_REPUTATION, onChainAverageScore, onChainScore, type OnChainRecord } from "@market/core/reputation";

export { createReputationProjection } from "./projection";
export { createOnchainReputationProjection } from "./onchain-projection";
export { agentBadges, badgeAdminRoutes } from "./badges";

/** The reputation contract's record of a wallet, summed over the chains whose registry the indexer follows. */
async function onChainNumbers(db: Db, address: string) {
  const row = await db
    .selectFrom("onchain_reputation")
    .select((eb) => [
      eb.fn.sum<number | string | null>("tasks_completed").as("tasks_completed"),
      eb.fn.sum<number | string | null>("score_sum").as("score_sum"),
      eb.fn.sum<number | string | null>("score_count").as("score_count"),
      eb.fn.sum<number | string | null>("disputes").as("disputes"),
    ])
    .where("agent", "=", address)
    .executeTakeFirst();
  // SUM over no rows is NULL; PostgreSQL answers bigint sums as strings.
  const record: OnChainRecord = {
    tasksCompleted: Number(row?.tasks_completed ?? 0),
    scoreSum: Number(row?.score_sum ?? 0),
    scoreCount: Number(row?.score_count ?? 0),
    disputes: Number(row?.disputes ?? 0),
  };
  return {
    tasksCompleted: record.tasksCompleted,
    avgScore: onChainAverageScore(record),
    disputes: record.disputes,
    onChainScore: onChainScore(record),
  };
}

/** Why `tasksCompleted` and `offChainTasksCompleted` differ, for the person reading the answer. */
export function countsNote(onChain: number, offChain: number): string {
  return (
    `tasksCompleted (${onChain}) is the reputation contract's record: only tasks settled on the 0g escrow write to it (the arc escrow has none). ` +
    `offChainTasksCompleted (${offChain}) counts every task settled for this agent on every chain this service indexes, arc included; ` +
    "reputation and the decayed score move with it."
  );
}

/** The prefix app.ts registers `reputationRoutes` under. */
export const REPUTATION_PREFIX = "/api/v1/reputation";

/** Reputation: the leaderboard, an agent's numbers and its badges (paths under REPUTATION_PREFIX). */
export const reputationRoutes: FastifyPluginAsyncTypebox<{ db: Db; now: Clock }> = async (app, { db, now }) => {
  const nowSeconds = () => Math.floor(now() / 1000);

  app.get(
    "/leaderboard",
    {
      schema: {
        tags: ["reputation"],
        summary: "Agents sorted by decayed score",
        querystring: LeaderboardQuery,
        response: { 200: Envelope(Leaderboard), ...errorResponses() },
      },
    },
    async (request) => {
      const limit = Math.max(1, Math.min(Number(request.query.limit ?? 50), 100));
      const rows = await db
        .selectFrom("reputation as r")
        .leftJoin("agents as a", "a.address", "r.address")
        .select(["r.address", "a.display_name", "r.raw_score", "r.last_settled_at", "r.reputation", "r.tasks_completed"])
        .where("r.raw_score", ">", 0)
        .execute();
      const at = nowSeconds();
      const agents = rows
        .map((r) => ({
          address: asAddress(r.address),
          displayName: r.display_name,
          decayedScore: decayedScore(r.raw_score, r.last_settled_at, at).decayedScore,
          rawScore: r.raw_score,
          reputation: r.reputation,
          tasksCompleted: r.tasks_completed,
        }))
        .sort((a, b) => b.decayedScore - a.decayedScore || b.rawScore - a.rawScore || a.address.localeCompare(b.address))
        .slice(0, limit);
      return ok({ agents });
    },
  );

  app.get(
    "/:address",
    {
      schema: {
        tags: ["reputation"],
        summary: "An agent's reputation: registry, decayed score and on-chain numbers",
        params: AddressParams,
        response: { 200: Envelope(Reputation), ...errorResponses() },
      },
    },
    async (request) => {
      const address = addressParam(request.params.address);
      const row = await db.selectFrom("reputation").selectAll().where("address", "=", address).executeTakeFirst();
      const decay = decayedScore(row?.raw_score ?? 0, row?.last_settled_at ?? null, nowSeconds());
      const onChain = await onChainNumbers(db, address);
      const offChainTasksCompleted = row?.tasks_completed ?? 0;
      const differ = onChain.tasksCompleted !== offChainTasksCompleted;
      return ok({
        address,
        reputation: row?.reputation ?? FRESH_REPUTATION.reputation,
        ...onChain,
        rawScore: decay.rawScore,
        decayedScore: decay.decayedScore,
        decayFactor: decay.decayFactor,
        daysSinceLastTask: decay.daysSinceLastTask,
        offChainTasksCompleted,
        offChainDisputes: row?.disputes ?? 0,
        ...(differ ? { note: countsNote(onChain.tasksCompleted, offChainTasksCompleted) } : {}),
      });
    },
  );

  app.get(
    "/:address/badges",
    {
      schema: {
        tags: ["reputation"],
        summary: "An agent's per-tag and per-skill record (`stats`, `skillStats`), the badges it earned and the verified ones",
        description:
          "A badge for a capability tag or an installed public skill is earned after 5 settled completions with failures under 20% of outcomes. " +
          "Disputes lost (or left without a ruling) count as failures. Each settled task credits every tag it required and the agent's installed " +
          "public skill that best matches those tags (most tags shared, earliest installed on a tie). Private skills never appear. `verified`: " +
          "badges granted by the service's team (POST /api/v1/admin/badges), apart from the earned ones.",
        params: AddressParams,
        response: { 200: Envelope(Badges), ...errorResponses() },
      },
    },
    async (request) => ok(await agentBadges(db, addressParam(request.params.address))),
  );
};
