/**
 * Whether what a browse reads changed since a page or a total was read (issue 30): the version of the browse tables
 * (`listings`, `listing_capabilities`, `escrow_tasks`) that server/tasks/queries.ts keeps beside what it answers from
 * memory.
 *
 * - PostgreSQL: the version is the snapshot the read was made at (`pg_current_snapshot()`), and it changed when a
 *   transaction that wrote a browse table committed outside it: each such transaction records its id in
 *   `browse_changes` (a statement trigger, migration 2026-11-28T02-30-00_browse-changes), visible once it commits.
 *   Writes to any other table (sign-in nonces, sessions, events...) leave the browse answered from memory.
 * - SQLite: any committed write changes it (`data_version` for other connections, `total_changes()` for this one).
 *
 * Either way one query per call, as the snapshot alone was.
 */
import { sql } from "kysely";
import type { Db } from "../db";
import type { Clock } from "../http/types";

export interface BrowseVersions {
  /**
   * The version now, and whether the browse tables changed since `since` (a version this returned before; changed
   * when there is none).
   */
  read(since: string | undefined): Promise<{ version: string; changed: boolean }>;
}

/** How often (ms) an API instance removes old records from `browse_changes`. */
const CLEANUP_EVERY_MS = 60_000;

export function createBrowseVersions({ db, now }: { db: Db; now: Clock }): BrowseVersions {
  const sqlite = db.getExecutor().adapter.constructor.name === "SqliteAdapter";
  if (sqlite) {
    return {
      async read(since) {
        const { rows } = await sql<{
          v: number;
          c: number;
        }>`select (select data_version from pragma_data_version()) as v, total_changes() as c`.execute(db);
        const version = `${rows[0]?.v}:${rows[0]?.c}`;
        return { version, changed: version !== since };
      },
    };
  }

  /**
   * Now and then, the records of transactions that a snapshot this instance took at the previous turn already saw as
   * done are removed, and the horizon raised to match: a version older than the horizon counts as changed (its records
   * may be gone), and records stay at least CLEANUP_EVERY_MS, longer than a page or a total goes unchecked.
   */
  let lastCleanup = now();
  let cut: string | undefined;
  let cleaning = false;
  function cleanup(): void {
    if (cleaning || now() - lastCleanup < CLEANUP_EVERY_MS) return;
    cleaning = true;
    lastCleanup = now();
    const run = cut
      ? sql<{ v: string }>`
          with horizon as (
            update browse_change_horizon set xid = greatest(xid, pg_snapshot_xmin(${cut}::pg_snapshot)) where id = 1 returning xid
          ), removed as (
            delete from browse_changes where xid < (select xid from horizon)
          )
          select pg_current_snapshot()::text as v`
      : sql<{ v: string }>`select pg_current_snapshot()::text as v`;
    run
      .execute(db)
      .then(({ rows }) => (cut = rows[0]?.v))
      .catch(() => undefined) // tried again at the next turn
      .finally(() => (cleaning = false));
  }

  return {
    async read(since) {
      cleanup();
      if (since === undefined) {
        const { rows } = await sql<{ v: string }>`select pg_current_snapshot()::text as v`.execute(db);
        return { version: rows[0]!.v, changed: true };
      }
      // In one statement, so the snapshot returned is the one the records were read at.
      const { rows } = await sql<{ v: string; changed: boolean }>`
        select pg_current_snapshot()::text as v,
          exists (
            select 1 from browse_changes c
            where c.xid >= pg_snapshot_xmin(${since}::pg_snapshot) and not pg_visible_in_snapshot(c.xid, ${since}::pg_snapshot)
          ) or (select h.xid from browse_change_horizon h where h.id = 1) > pg_snapshot_xmin(${since}::pg_snapshot) as changed`.execute(db);
      return { version: rows[0]!.v, changed: rows[0]!.changed };
    },
  };
}
