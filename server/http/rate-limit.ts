import type { FastifyReply, FastifyRequest } from "fastify";
import { createHash } from "node:crypto";
import type { RateLimitConfig } from "../config";
import { MarketError } from "../../core/errors";

interface Window {
  startedAt: number;
  count: number;
}

/**
 * Fixed-window limits per client IP and per credential (API key or session token), kept in memory. A request over
 * either limit is answered 429 `RATE_LIMITED` with `Retry-After`; limits on several API instances are per instance.
 */
export function createRateLimiter(config: RateLimitConfig, now: () => number = Date.now) {
  const windows = new Map<string, Window>();
  let lastSweep = now();

  function hit(key: string, limit: number, at: number): number | undefined {
    let w = windows.get(key);
    if (!w || at - w.startedAt >= config.windowMs) {
      w = { startedAt: at, count: 0 };
      windows.set(key, w);
    }
    w.count += 1;
    if (w.count <= limit) return undefined;
    return Math.max(1, Math.ceil((w.startedAt + config.windowMs - at) / 1000));
  }

  function sweep(at: number) {
    if (at - lastSweep < config.windowMs) return;
    lastSweep = at;
    for (const [key, w] of windows) if (at - w.startedAt >= config.windowMs) windows.delete(key);
  }

  return async function rateLimit(request: FastifyRequest, reply: FastifyReply) {
    const at = now();
    sweep(at);
    let retryAfter = hit(`ip:${request.ip}`, config.perIp, at);
    const credential = request.headers["x-api-key"] ?? request.headers.authorization;
    if (retryAfter === undefined && typeof credential === "string" && credential.length > 0) {
      // Keyed by a hash so the map never holds a secret.
      const id = createHash("sha256").update(credential).digest("base64url").slice(0, 22);
      retryAfter = hit(`key:${id}`, config.perKey, at);
    }
    if (retryAfter !== undefined) {
      reply.header("retry-after", String(retryAfter));
      throw new MarketError("RATE_LIMITED", `Too many requests; retry after ${retryAfter} s.`);
    }
  };
}
