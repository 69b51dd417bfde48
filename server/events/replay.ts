import type { Kysely } from "kysely";
import type { Database } from "../db/schema";
import type { Principal } from "../auth/principal";
import { asTaskHash, type EventType, type MarketEvent } from "@market/core/api";
import type { ChainName } from "@market/core/chains";
import { lastCursor } from "./log";

/** What one reader may see and wants: a chain's events after a cursor, filtered. */
export interface EventFilter {
  chain: string;
  after: number;
  /** Lowercase wallets whose non-public events are seen. */
  wallets: readonly string[];
  types?: readonly EventType[];
  taskHash?: string;
}

export const MAX_PAGE = 500;

/**
 * The wallets a principal sees events of: its own, and (for an owner) those of the hosted agents its account owns.
 * Public events are seen by everyone.
 */
export async function walletsOf(db: Kysely<Database>, principal: Pick<Principal, "wallet" | "accountId">): Promise<string[]> {
  const agents = await db.selectFrom("hosted_agents").select("address").where("account_id", "=", principal.accountId).execute();
  return [...new Set([principal.wallet, ...agents.map((a) => a.address)].map((w) => w.toLowerCase()))];
}

/**
 * Events after the filter's cursor, in cursor order, at most `limit`; whether more follow; and the cursor to read after
 * next: the last event's, or, when every event up to the chain's head was read, the head (a reader filtered down to
 * few events does not scan the others again). The head is read first: cursors follow commit order, so every event up
 * to it is committed and in the page's query.
 */
export async function readEvents(
  db: Kysely<Database>,
  filter: EventFilter,
  limit: number,
): Promise<{ events: MarketEvent[]; more: boolean; next: number }> {
  const head = await lastCursor(db, filter.chain);
  let query = db
    .selectFrom("events")
    .selectAll()
    .where("chain", "=", filter.chain)
    .where("seq", ">", filter.after)
    .where((eb) =>
      eb.or([
        eb("public", "=", 1),
        ...(filter.wallets.length === 0
          ? []
          : [
              eb.exists(
                eb
                  .selectFrom("event_audience")
                  .select("event_audience.seq")
                  .whereRef("event_audience.chain", "=", "events.chain")
                  .whereRef("event_audience.seq", "=", "events.seq")
                  .where("event_audience.wallet", "in", filter.wallets),
              ),
            ]),
      ]),
    );
  if (filter.types && filter.types.length > 0) query = query.where("type", "in", filter.types);
  if (filter.taskHash) query = query.where("task_hash", "=", filter.taskHash.toLowerCase());
  const rows = await query
    .orderBy("seq")
    .limit(limit + 1)
    .execute();
  const more = rows.length > limit;
  const last = rows.length === 0 ? filter.after : Number(rows[Math.min(rows.length, limit) - 1]!.seq);
  return {
    next: more ? last : Math.max(last, head, filter.after),
    more,
    events: rows.slice(0, limit).map((row) => ({
      id: row.id,
      cursor: String(row.seq),
      chain: row.chain as ChainName,
      type: row.type as EventType,
      taskHash: row.task_hash === null ? null : asTaskHash(row.task_hash),
      public: Number(row.public) === 1,
      data: JSON.parse(row.data) as Record<string, unknown>,
      blockNumber: row.block_number === null ? null : Number(row.block_number),
      txHash: row.tx_hash,
      createdAt: Number(row.created_at),
    })),
  };
}
