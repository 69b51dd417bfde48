/**
 * The service admin's view (docs/security.md, disputes as a weapon): the tasks awaiting the escrow admin's ruling.
 * Admin authentication is a key from the configuration (`MARKET_ADMIN_API_KEY`), sent as `X-Admin-Key`: compared by
 * SHA-256 in constant time, never logged (the header is redacted), and failed attempts are limited per client IP.
 * Without a configured key every admin route answers 403 `ADMIN_REQUIRED`.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { Db } from "../db";
import type { Clock } from "../http/types";
import { errorResponses, ok } from "../http/schemas";
import { createWindows, rateLimited } from "../http/rate-limit";
import { AdminDisputes, asAddress, asRawAmount, asTaskHash, Envelope, type AwaitingRuling } from "@market/core/api";
import { Ending, EscrowStatus, STATUSES_FOR, toEscrowStatus, windowEndsAt } from "@market/core/escrow";
import { MarketError } from "@market/core/errors";
import { isChainName } from "@market/core/chains";

/** Wrong admin keys one client IP may send per minute before it is answered 429. */
export const ADMIN_FAILURES_PER_MINUTE = 10;
/** The security scheme of admin routes in the OpenAPI document. */
export const ADMIN_KEY: Array<Record<string, string[]>> = [{ adminKey: [] }];

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest();

/** The admin check: passes a request carrying the configured key, refuses any other with ADMIN_REQUIRED. */
export function createAdminCheck(adminKey: string | undefined, now: Clock) {
  const expected = adminKey ? sha256(adminKey) : undefined;
  const failures = createWindows(60_000);
  return async function requireAdmin(request: { headers: Record<string, string | string[] | undefined>; ip: string }): Promise<void> {
    const presented = request.headers["x-admin-key"];
    if (expected && typeof presented === "string" && presented !== "" && timingSafeEqual(sha256(presented), expected)) return;
    const wait = failures.hit(`ip:${request.ip}`, ADMIN_FAILURES_PER_MINUTE, now());
    if (wait !== undefined) throw rateLimited(wait, "failed admin attempts");
    throw new MarketError("ADMIN_REQUIRED");
  };
}

/** Disputed and escalated tasks not ended, with who raised each dispute and when the ruling window ends. */
export async function awaitingRuling(db: Db, nowSeconds: number): Promise<AwaitingRuling[]> {
  const rows = await db
    .selectFrom("escrow_tasks")
    .select(["chain", "task_hash", "status", "poster", "worker", "amount", "deadline", "phase_at"])
    // What a ruling acts on (core/escrow): disputed and escalated tasks.
    .where("status", "in", [...STATUSES_FOR.resolveDispute])
    .where("ending", "=", Ending.None)
    .execute();
  const raisers = new Map<string, string>();
  const hashes = [...new Set(rows.map((r) => r.task_hash))];
  for (let i = 0; i < hashes.length; i += 1_000) {
    const events = await db
      .selectFrom("escrow_events")
      .select(["chain", "task_hash", "args"])
      .where("event", "=", "DisputeRaised")
      .where("task_hash", "in", hashes.slice(i, i + 1_000))
      .orderBy("block_number")
      .orderBy("log_index")
      .execute();
    for (const e of events) raisers.set(`${e.chain}:${e.task_hash}`, (JSON.parse(e.args) as { raisedBy: string }).raisedBy);
  }
  return rows
    .flatMap((row): AwaitingRuling[] => {
      const chain = row.chain;
      if (!isChainName(chain)) return [];
      const disputed = row.status === EscrowStatus.Disputed;
      const ruleBy = windowEndsAt({ status: toEscrowStatus(row.status), deadline: row.deadline, phaseAt: row.phase_at });
      const raisedBy = disputed ? raisers.get(`${chain}:${row.task_hash}`) : undefined;
      return [
        {
          chain,
          taskHash: asTaskHash(row.task_hash),
          status: disputed ? "disputed" : "escalated",
          poster: asAddress(row.poster),
          worker: row.worker === null ? null : asAddress(row.worker),
          amount: asRawAmount(row.amount),
          raisedBy: raisedBy === undefined ? null : asAddress(raisedBy),
          since: row.phase_at ?? 0,
          ruleBy,
          secondsLeft: Math.max(0, ruleBy - nowSeconds),
          overdue: ruleBy <= nowSeconds,
        },
      ];
    })
    .sort((a, b) => a.ruleBy - b.ruleBy || a.taskHash.localeCompare(b.taskHash));
}

export type RequireAdmin = ReturnType<typeof createAdminCheck>;

/** The prefix app.ts registers the admin's route plugins under (`adminRoutes`, `badgeAdminRoutes`). */
export const ADMIN_PREFIX = "/api/v1/admin";

/**
 * `requireAdmin`, when given, is the one check every admin route shares (one count of failed attempts per IP), each
 * admin plugin's `onRequest` hook: a request without the key is refused before its body is read.
 */
export const adminRoutes: FastifyPluginAsyncTypebox<{ db: Db; now: Clock; adminKey?: string; requireAdmin?: RequireAdmin }> = async (
  app,
  { db, now, adminKey, requireAdmin = createAdminCheck(adminKey, now) },
) => {
  app.addHook("onRequest", requireAdmin);
  app.get(
    "/disputes",
    {
      schema: {
        tags: ["admin"],
        summary: "Tasks awaiting the escrow admin's ruling (disputed or escalated), most urgent first",
        description:
          "For the service's admin (`X-Admin-Key`). The admin's duty is to rule each with `resolveDispute` " +
          "(`npx hardhat escrow:resolve-dispute`) before `ruleBy`: after it the poster of a disputed task is refunded in full " +
          "without a ruling, and the worker of escalated work collects it. The same list: `npx hardhat escrow:disputes`.",
        security: ADMIN_KEY,
        response: { 200: Envelope(AdminDisputes), ...errorResponses(403) },
      },
    },
    async () => {
      const disputes = await awaitingRuling(db, Math.floor(now() / 1000));
      return ok({ disputes, total: disputes.length });
    },
  );
};
