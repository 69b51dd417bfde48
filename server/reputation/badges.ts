/**
 * Badges (spec "Reputation", issue 25 item 7): an agent's per-tag and per-skill record with the badges earned from it,
 * and the verified badges the service's team grants through the admin routes (`X-Admin-Key`), shown apart. A skill's
 * record and badges appear only while the skill is public: private skills never appear in public stats.
 */
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { Db } from "../db";
import type { Clock } from "../http/types";
import { errorResponses, ok } from "../http/schemas";
import { addressParam } from "../http/params";
import { ADMIN_KEY, type RequireAdmin } from "../admin";
import { capabilityTags } from "../agents";
import { BadgeParams, Envelope, GrantBadgeBody, GrantedBadge, RevokedBadge, asAddress, type Badges, type VerifiedBadge } from "@market/core/api";
import { earnsBadge } from "@market/core/reputation";
import { MarketError } from "@market/core/errors";

/** The agent's record: per tag and per public skill, the badges earned, and the verified ones. */
export async function agentBadges(db: Db, address: string): Promise<Badges> {
  const tagRows = await db.selectFrom("capability_stats").selectAll().where("address", "=", address).orderBy("tag").execute();
  const stats = tagRows.map((r) => ({ tag: r.tag, completions: r.completions, failures: r.failures }));
  const skillRows = await db
    .selectFrom("skill_stats")
    .innerJoin("skills", "skills.id", "skill_stats.skill_id")
    .select(["skills.slug", "skills.name", "skill_stats.completions", "skill_stats.failures"])
    .where("skill_stats.address", "=", address)
    .where("skills.is_public", "=", 1)
    .orderBy("skills.slug")
    .execute();
  const skillStats = skillRows.map((r) => ({ skill: r.slug, name: r.name, completions: r.completions, failures: r.failures }));
  const publicSkills = db.selectFrom("skills").select("slug").where("is_public", "=", 1);
  const verified = await db
    .selectFrom("verified_badges")
    .select(["kind", "name", "granted_at"])
    .where("address", "=", address)
    .where((eb) => eb.or([eb("kind", "=", "tag"), eb("name", "in", publicSkills)]))
    .orderBy("kind")
    .orderBy("name")
    .execute();
  return {
    stats,
    skillStats,
    badges: stats.filter(earnsBadge).map((s) => ({ tag: s.tag, kind: "earned" as const })),
    skillBadges: skillStats.filter(earnsBadge).map((s) => ({ skill: s.skill, kind: "earned" as const })),
    verified: verified.map((v) => ({ kind: v.kind, name: v.name, grantedAt: Number(v.granted_at) })),
  };
}

/** An agent the service knows: registered (`agents`) or hosted; `EXECUTOR_NOT_FOUND` otherwise. */
async function requireAgent(db: Db, address: string): Promise<void> {
  const registered = await db.selectFrom("agents").select("address").where("address", "=", address).executeTakeFirst();
  if (registered) return;
  const hosted = await db
    .selectFrom("hosted_agents")
    .select("address")
    .where("address", "=", address)
    .where("state", "!=", "deleted")
    .executeTakeFirst();
  if (!hosted) throw new MarketError("EXECUTOR_NOT_FOUND", `No agent at ${address}.`);
}

/** The badge's name as stored: a well-formed tag, or the slug of a live public skill (`SKILL_NOT_FOUND` otherwise). */
async function badgeName(db: Db, kind: "tag" | "skill", name: string): Promise<string> {
  if (kind === "tag") return capabilityTags([name], "body.name")[0]!;
  const skill = await db
    .selectFrom("skills")
    .select("slug")
    .where("slug", "=", name)
    .where("is_public", "=", 1)
    .where("deleted_at", "is", null)
    .executeTakeFirst();
  if (!skill) throw new MarketError("SKILL_NOT_FOUND", `No public skill ${name}: verified badges are for public skills only.`);
  return skill.slug;
}

/** The admin's routes granting and revoking verified badges, under ADMIN_PREFIX, behind the admin check as their hook. */
export const badgeAdminRoutes: FastifyPluginAsyncTypebox<{ db: Db; now: Clock; requireAdmin: RequireAdmin }> = async (
  app,
  { db, now, requireAdmin },
) => {
  app.addHook("onRequest", requireAdmin);
  app.post(
    "/badges",
    {
      schema: {
        tags: ["admin"],
        summary: "Grant a verified badge to an agent, for a capability tag or a public skill",
        description:
          "For the service's admin (`X-Admin-Key`; `ADMIN_REQUIRED` otherwise). The agent must be registered or hosted (`EXECUTOR_NOT_FOUND`); " +
          "a skill badge needs a live public skill (`SKILL_NOT_FOUND`). Granting one held already changes nothing (`granted: false`). " +
          "Shown in `GET /api/v1/reputation/{address}/badges` under `verified`, apart from the earned ones.",
        security: ADMIN_KEY,
        body: GrantBadgeBody,
        response: { 200: Envelope(GrantedBadge), ...errorResponses(400, 403, 404) },
      },
    },
    async (request) => {
      const address = addressParam(request.body.address, "body.address");
      const { kind } = request.body;
      const name = await badgeName(db, kind, request.body.name);
      await requireAgent(db, address);
      const inserted = await db
        .insertInto("verified_badges")
        .values({ address, kind, name, granted_at: now() })
        .onConflict((oc) => oc.columns(["address", "kind", "name"]).doNothing())
        .executeTakeFirst();
      const row = await db
        .selectFrom("verified_badges")
        .selectAll()
        .where("address", "=", address)
        .where("kind", "=", kind)
        .where("name", "=", name)
        .executeTakeFirstOrThrow();
      const badge: VerifiedBadge = { address: asAddress(row.address), kind: row.kind, name: row.name, grantedAt: Number(row.granted_at) };
      return ok({ badge, granted: Number(inserted.numInsertedOrUpdatedRows ?? 0n) > 0 });
    },
  );

  app.delete(
    "/badges/:address/:kind/:name",
    {
      schema: {
        tags: ["admin"],
        summary: "Revoke a verified badge",
        description: "For the service's admin (`X-Admin-Key`). `BADGE_NOT_FOUND` when the agent holds no such verified badge.",
        security: ADMIN_KEY,
        params: BadgeParams,
        response: { 200: Envelope(RevokedBadge), ...errorResponses(400, 403, 404) },
      },
    },
    async (request) => {
      const address = addressParam(request.params.address);
      const removed = await db
        .deleteFrom("verified_badges")
        .where("address", "=", address)
        .where("kind", "=", request.params.kind)
        .where("name", "=", request.params.name)
        .executeTakeFirst();
      if (Number(removed.numDeletedRows) === 0) throw new MarketError("BADGE_NOT_FOUND");
      return ok({ revoked: true as const });
    },
  );
};
