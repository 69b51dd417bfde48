/**
 * Per-agent caps of sandbox runs (issue 26), in the database so every API process and a restart agree: a per-minute
 * run rate (a fixed window in `rate_windows`, starting at the agent's first run and lasting 60 s) and a daily cost cap
 * in wall-clock seconds (`sandbox_usage`, per UTC day; resets at 00:00 UTC). A run's timeout is cut to what is left of
 * the day, so the cap is never passed by more than the engine's kill latency.
 */
import { sql } from "kysely";
import type { Db } from "../db";
import { createSharedWindows } from "../http/rate-limit";
import { MarketError } from "@market/core/errors";

const DAY_MS = 86_400_000;

export interface SandboxCaps {
  /** Counts a run; refuses with SANDBOX_RATE_LIMITED or SANDBOX_DAILY_CAP. Answers the wall-clock ms left today. */
  admit(agentId: number): Promise<number>;
  /** Adds a finished run's wall-clock time to today's account. */
  charge(agentId: number, wallMs: number): Promise<void>;
  /** Today's wall-clock ms and runs of the agent. */
  today(agentId: number): Promise<{ wallMs: number; runs: number }>;
}

export function createSandboxCaps({
  db,
  now,
  runsPerMinute,
  dailySeconds,
}: {
  db: Db;
  now: () => number;
  runsPerMinute: number;
  dailySeconds: number;
}): SandboxCaps {
  const minutes = createSharedWindows(db, "sandbox-runs", 60_000);
  const day = () => Math.floor(now() / DAY_MS);

  async function today(agentId: number) {
    const row = await db
      .selectFrom("sandbox_usage")
      .select(["wall_ms", "runs"])
      .where("agent_id", "=", agentId)
      .where("day", "=", day())
      .executeTakeFirst();
    return { wallMs: Number(row?.wall_ms ?? 0), runs: Number(row?.runs ?? 0) };
  }

  return {
    today,
    async admit(agentId) {
      const left = dailySeconds * 1000 - (await today(agentId)).wallMs;
      if (left <= 0) {
        const resetIn = Math.ceil(((day() + 1) * DAY_MS - now()) / 1000);
        throw new MarketError(
          "SANDBOX_DAILY_CAP",
          `The agent used its ${dailySeconds} sandbox seconds of today; the cap resets at 00:00 UTC (in ${resetIn} s).`,
        );
      }
      const retryAfter = await minutes.hit(`agent:${agentId}`, runsPerMinute, now());
      if (retryAfter !== undefined) {
        throw new MarketError("SANDBOX_RATE_LIMITED", `The agent may start ${runsPerMinute} sandbox runs a minute; retry after ${retryAfter} s.`);
      }
      return left;
    },
    async charge(agentId, wallMs) {
      const ms = Math.max(0, Math.round(wallMs));
      await db
        .insertInto("sandbox_usage")
        .values({ agent_id: agentId, day: day(), wall_ms: ms, runs: 1 })
        .onConflict((oc) =>
          oc.columns(["agent_id", "day"]).doUpdateSet({
            wall_ms: sql<number>`sandbox_usage.wall_ms + ${ms}`,
            runs: sql<number>`sandbox_usage.runs + 1`,
          }),
        )
        .execute();
    },
  };
}
