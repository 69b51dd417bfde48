import type { FastifyReply, FastifyRequest } from "fastify";
import { createHash } from "node:crypto";
import { sql } from "kysely";
import type { RateLimitConfig } from "../config";
import type { Db } from "../db";
import { MarketError } from "@market/core/errors";
import { presentedCredential } from "./credentials";

interface Window {
  startedAt: number;
  count: number;
}

/**
 * Fixed windows of `windowMs` counting hits per key, in memory. `hit` answers undefined while the key is within
 * `limit`, else the seconds until its window ends.
 */
export function createWindows(windowMs: number) {
  const windows = new Map<string, Window>();
  let lastSweep = 0;
  return {
    hit(key: string, limit: number, at: number): number | undefined {
      if (at - lastSweep >= windowMs) {
        lastSweep = at;
        for (const [k, w] of windows) if (at - w.startedAt >= windowMs) windows.delete(k);
      }
      let w = windows.get(key);
      if (!w || at - w.startedAt >= windowMs) {
        w = { startedAt: at, count: 0 };
        windows.set(key, w);
      }
      w.count += 1;
      if (w.count <= limit) return undefined;
      return Math.max(1, Math.ceil((w.startedAt + windowMs - at) / 1000));
    },
    /**
     * Takes `amount` (e.g. bytes) from the key's window when it fits within `limit`, answering undefined; else takes
     * nothing and answers the seconds until the window ends.
     */
    take(key: string, limit: number, at: number, amount: number): number | undefined {
      let w = windows.get(key);
      if (!w || at - w.startedAt >= windowMs) {
        w = { startedAt: at, count: 0 };
        windows.set(key, w);
      }
      if (w.count + amount <= limit) {
        w.count += amount;
        return undefined;
      }
      return Math.max(1, Math.ceil((w.startedAt + windowMs - at) / 1000));
    },
  };
}

/**
 * Fixed windows like createWindows, counted in the database (`rate_windows`): every API process on the database shares
 * them, for the limits that bound what the service pays for (accepts, deploys). One upsert per hit; `name` keeps one
 * limit's keys apart from another's. Windows that ended are deleted now and then.
 */
export function createSharedWindows(db: Db, name: string, windowMs: number) {
  let lastSweep = 0;
  return {
    async hit(key: string, limit: number, at: number): Promise<number | undefined> {
      if (at - lastSweep >= windowMs) {
        lastSweep = at;
        await db
          .deleteFrom("rate_windows")
          .where("key", "like", `${name}:%`)
          .where("started_at", "<=", at - windowMs)
          .execute();
      }
      const ended = sql<boolean>`${at} - rate_windows.started_at >= ${windowMs}`;
      const w = await db
        .insertInto("rate_windows")
        .values({ key: `${name}:${key}`, started_at: at, count: 1 })
        .onConflict((oc) =>
          oc.column("key").doUpdateSet({
            count: sql<number>`case when ${ended} then 1 else rate_windows.count + 1 end`,
            started_at: sql<number>`case when ${ended} then ${at} else rate_windows.started_at end`,
          }),
        )
        .returning(["count", "started_at"])
        .executeTakeFirstOrThrow();
      if (w.count <= limit) return undefined;
      return Math.max(1, Math.ceil((Number(w.started_at) + windowMs - at) / 1000));
    },
  };
}

/** `RATE_LIMITED` with the seconds to wait, for a route's own, tighter limit. */
export function rateLimited(retryAfter: number, what = "requests"): MarketError {
  return new MarketError("RATE_LIMITED", `Too many ${what}; retry after ${retryAfter} s.`, {
    details: [{ message: "retry later", retryAfterSeconds: retryAfter }],
  });
}

/**
 * Fixed-window limits per client IP and per credential (API key or session token), kept in memory. A request over
 * either limit is answered 429 `RATE_LIMITED` with `Retry-After`. Each API process counts its own requests
 * (docs/scaling.md): behind a load balancer over N processes a client gets up to N times the limit.
 * `exemptFromIpLimit` names credentials the per-IP window does not count (this process's own hosted-agent runners,
 * which all call from this host): they keep the per-credential window. Only a credential the predicate knows is
 * exempt, so no outside caller can claim it without holding one.
 */
export function createRateLimiter(
  config: RateLimitConfig,
  now: () => number = Date.now,
  options: { exemptFromIpLimit?: (token: string) => boolean } = {},
) {
  const { hit } = createWindows(config.windowMs);

  return async function rateLimit(request: FastifyRequest, reply: FastifyReply) {
    const at = now();
    // The credential as authentication reads it, so no spelling of the same key gets a window of its own.
    const presented = presentedCredential(request.headers);
    const credential = presented && presented.via !== "malformed" ? presented.token : undefined;
    const exempt = credential !== undefined && options.exemptFromIpLimit?.(credential) === true;
    let retryAfter = exempt ? undefined : hit(`ip:${request.ip}`, config.perIp, at);
    if (retryAfter === undefined && credential !== undefined) {
      // Keyed by a hash so the map never holds a secret.
      const id = createHash("sha256").update(credential).digest("base64url").slice(0, 22);
      retryAfter = hit(`key:${id}`, config.perKey, at);
    }
    if (retryAfter !== undefined) {
      reply.header("retry-after", String(retryAfter));
      throw rateLimited(retryAfter);
    }
  };
}
