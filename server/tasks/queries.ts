import { sql, type Selectable } from "kysely";
import { json, type Db } from "../db";
import type { EscrowTasksTable, ListingsTable } from "../db/schema";
import { listingMeta } from "./listing-codec";
import { asAddress, asRawAmount, asTaskHash, type AssignedTaskView, type BrowseAnswer, type RoundVerdict, type TaskView } from "@market/core/api";
import { taskStatus, type TaskStatus } from "@market/core/status";
import { endingName, Ending, EscrowStatus, openTaskFilter, roundsLeft } from "@market/core/escrow";
import { BROWSE_PAGE_SIZE } from "@market/core/limits";
import type { Clock } from "../http/types";
import { createLru } from "../http/lru";
import { taskHistory } from "./history";
import { createBrowseVersions } from "./browse-version";

type ListingRow = Selectable<ListingsTable>;
type ChainRow = Pick<
  Selectable<EscrowTasksTable>,
  "status" | "deadline" | "worker" | "rounds" | "ending" | "result_hash" | "last_score" | "payout" | "fee"
>;
/** Who funded the task and with what, as the escrow holds it: the listing's copy is never shown (docs/security.md). */
type EscrowMoney = { escrow_poster: string; escrow_amount: string; escrow_token: string };
export type TaskRow = ListingRow & ChainRow & EscrowMoney;

/** Extra facts other domains know about a task (the delivered output, whether a verdict is awaited). */
export interface TaskExtras {
  output?: string;
  /** The latest round's verdict, once judged (shown with the output). */
  verdict?: RoundVerdict;
  awaitingVerdict?: boolean;
}

/**
 * How long a browse page may be answered from memory, provided nothing was written to the database since: the cache is
 * dropped on any committed write, from this connection or another (the indexer's, another API instance's). The TTL
 * only bounds how late a task whose deadline just passed may still show.
 */
const PAGE_TTL_MS = 1_000;
/** Browse pages and totals kept at most (least recently used forgotten first): callers choose the capability sets. */
export const MAX_CACHED_PAGES = 1_000;
export const MAX_CACHED_TOTALS = 1_000;

/**
 * How long a full browse page's `total` is answered without counting again (counting every open task costs a scan);
 * past it the old total is still answered while one count runs (`totalOf`).
 */
const TOTAL_TTL_MS = 2_000;
/** A filter is counted again no sooner than this many times as long as its last count took. */
const COUNTS_APART = 10;

export function toTaskView(row: TaskRow, nowMs: number, extras: TaskExtras = {}): TaskView {
  const status: TaskStatus = taskStatus({
    status: row.status,
    deadline: row.deadline,
    nowSeconds: Math.floor(nowMs / 1000),
    awaitingVerdict: extras.awaitingVerdict,
  });
  const resultData =
    extras.output !== undefined || row.result_hash
      ? {
          ...(extras.output === undefined ? {} : { output: extras.output }),
          ...(row.result_hash ? { resultHash: row.result_hash } : {}),
          ...(extras.verdict ? { verificationResult: extras.verdict } : {}),
        }
      : undefined;
  return {
    // The listing copied poster, amount and token at listing time; a reorg may have funded the hash otherwise since.
    meta: listingMeta({ ...row, poster: row.escrow_poster, amount: row.escrow_amount, token: row.escrow_token }, row.deadline),
    state: {
      taskId: asTaskHash(row.task_hash),
      status,
      ...(row.worker === null ? {} : { worker: asAddress(row.worker) }),
      rounds: row.rounds,
      ...(row.ending === Ending.None ? {} : { ending: endingName(row.ending) }),
      ...(resultData === undefined ? {} : { resultData }),
      ...(row.payout === null ? {} : { paid: { worker: asRawAmount(row.payout), fee: asRawAmount(row.fee ?? "0") } }),
    },
  };
}

/**
 * The verdict of a delivered round that the chain settled without the service recording it (a verifier agent's own
 * completeVerification whose hash was never reported back): passed or failed as the escrow says, its score, no reasons.
 */
function judgedOnChain(row: TaskRow, round: number): RoundVerdict | undefined {
  // `auto` and `manual` verdicts are sent by the service, which records them itself (reasons and all).
  if (row.verification_mode !== "agent" || round !== row.rounds) return undefined;
  if (row.status !== EscrowStatus.Verified && row.status !== EscrowStatus.Failed) return undefined;
  return { passed: row.status === EscrowStatus.Verified, score: row.last_score, reasons: [] };
}

export type TaskQueries = ReturnType<typeof createTaskQueries>;

/** The escrow status behind each API status (core/status.ts `taskStatus`, read backwards; open/expired split by deadline). */
const ESCROW_STATUS_OF: Record<TaskStatus, EscrowStatus> = {
  open: EscrowStatus.Funded,
  expired: EscrowStatus.Funded,
  assigned: EscrowStatus.Assigned,
  submitted: EscrowStatus.Submitted,
  awaiting_verification: EscrowStatus.Submitted,
  verified: EscrowStatus.Verified,
  failed: EscrowStatus.Failed,
  disputed: EscrowStatus.Disputed,
  escalated: EscrowStatus.Escalated,
  completed: EscrowStatus.Paid,
  refunded: EscrowStatus.Refunded,
  cancelled: EscrowStatus.Cancelled,
};

/** A browse page: the answer of GET /api/v1/a2a/tasks. */
export type BrowsePage = BrowseAnswer;

export function createTaskQueries({ db, now, maxCached }: { db: Db; now: Clock; maxCached?: { pages: number; totals: number } }) {
  const totals = createLru<string, { total: number; firstDeadline: number; version: string; at: number; tookMs: number }>(
    maxCached?.totals ?? MAX_CACHED_TOTALS,
  );

  /**
   * Listings joined with their on-chain state; a task shows once the indexer has seen its funding. Written as a cross
   * join with the condition in WHERE: the same inner join to PostgreSQL's planner, while SQLite keeps `listings` as
   * the outer loop, walking listings_listed_at newest first and stopping at the page size (as an INNER JOIN it scanned
   * every escrow task and sorted: 560 ms for a page of 100 out of 100,000 open tasks, 1 ms now).
   */
  const listed = () =>
    db
      .selectFrom("listings as l")
      .crossJoin("escrow_tasks as t")
      .whereRef("t.chain", "=", "l.chain")
      .whereRef("t.task_hash", "=", "l.task_hash")
      .selectAll("l")
      .select(["t.status", "t.deadline", "t.worker", "t.rounds", "t.ending", "t.result_hash", "t.last_score", "t.payout", "t.fee"])
      .select(["t.poster as escrow_poster", "t.amount as escrow_amount", "t.token as escrow_token"]);

  /** Open tasks the caller can take: required capabilities all held, not pinned to someone else, before deadline. */
  function openFor(capabilities: readonly string[], caller: string | undefined) {
    // core/escrow `isOpen` (Funded, before the deadline), as SQL.
    const open = openTaskFilter(Math.floor(now() / 1000));
    return listed()
      .where("t.status", "=", open.status)
      .where("t.deadline", ">", open.deadlineAfter)
      .where((eb) =>
        caller ? eb.or([eb("l.target_executor", "is", null), eb("l.target_executor", "=", caller)]) : eb("l.target_executor", "is", null),
      )
      .where((eb) => {
        const missing = eb.selectFrom("listing_capabilities as c").select("c.tag").whereRef("c.task_hash", "=", "l.task_hash");
        return eb.not(eb.exists(capabilities.length > 0 ? missing.where("c.tag", "not in", [...capabilities]) : missing));
      });
  }

  /** The count the browse `total` comes from, with the earliest deadline among the tasks it counts. */
  function openCount(capabilities: readonly string[], caller: string | undefined) {
    return openFor(capabilities, caller)
      .clearSelect()
      .select((eb) => [eb.fn.countAll<number | string>().as("n"), eb.fn.min("t.deadline").as("first_deadline")]);
  }

  const pages = createLru<string, { version: string; at: number; page: BrowsePage }>(maxCached?.pages ?? MAX_CACHED_PAGES);
  const sqlite = db.getExecutor().adapter.constructor.name === "SqliteAdapter";
  const versions = createBrowseVersions({ db, now });

  /**
   * The page queries under way, by filter and data version (issue 30): the requests that find the database changed
   * all at once (after each write, under load) share one query of the version they saw instead of each running its own.
   */
  const querying = new Map<string, Promise<BrowsePage>>();

  /**
   * Open tasks for a caller, newest first; answered from memory while nothing a browse reads was written since
   * (browse-version.ts) and for at most PAGE_TTL_MS.
   */
  async function browse(filter: { capabilities: string[]; caller?: string; limit?: number }): Promise<BrowsePage> {
    const key = `${[...filter.capabilities].sort().join(",")}|${filter.caller ?? ""}|${filter.limit ?? ""}`;
    const cached = pages.get(key);
    const fresh = cached && now() - cached.at < PAGE_TTL_MS ? cached : undefined;
    const { version, changed } = await versions.read(fresh?.version);
    const at = now();
    if (fresh && !changed && at - fresh.at < PAGE_TTL_MS) return fresh.page;
    // Read meanwhile by a request that saw this same version.
    const latest = pages.get(key);
    if (latest && latest.version === version && at - latest.at < PAGE_TTL_MS) return latest.page;
    // A query started after this version was read sees every write the version counts.
    const shared = `${key}#${version}`;
    let running = querying.get(shared);
    if (!running) {
      running = browseUncached(filter, version)
        .then((page) => {
          pages.set(key, { version, at, page });
          return page;
        })
        .finally(() => querying.delete(shared));
      querying.set(shared, running);
    }
    return running;
  }

  async function browseUncached(filter: { capabilities: string[]; caller?: string; limit?: number }, version: string): Promise<BrowsePage> {
    const limit = Math.min(filter.limit ?? BROWSE_PAGE_SIZE, BROWSE_PAGE_SIZE);
    const rows = await openFor(filter.capabilities, filter.caller)
      .orderBy("l.listed_at", "desc")
      .orderBy("l.task_hash", "desc")
      .limit(limit)
      .execute();
    const at = now();
    let total = rows.length;
    if (rows.length === limit) {
      const key = `${[...filter.capabilities].sort().join(",")}|${filter.caller ?? ""}`;
      total = await totalOf(key, at, version, async () => {
        const count = openCount(filter.capabilities, filter.caller).compile();
        // PostgreSQL would count a million open tasks with parallel workers: hashing on three processes, four times the
        // CPU of one process merging its index-only scans (bench/browse.json), taken from the requests being served.
        const { rows } = sqlite
          ? await db.executeQuery(count)
          : await db.transaction().execute(async (trx) => {
              await sql`set local max_parallel_workers_per_gather = 0`.execute(trx);
              return trx.executeQuery(count);
            });
        const first = rows[0]?.first_deadline;
        return { total: Number(rows[0]?.n ?? 0), firstDeadline: first === null || first === undefined ? Infinity : Number(first) };
      });
    }
    return { tasks: rows.map((row) => toTaskView(row, at)), total };
  }

  /** The count under way per filter: one at a time, shared by every request that waits for it. */
  const counting = new Map<string, Promise<number>>();

  /**
   * A full page's `total`: the filter's last count while it is under TOTAL_TTL_MS old (or COUNTS_APART times as long as
   * that count took: counting a million open tasks takes most of a second on PostgreSQL, bench/browse.json), and after
   * that for as long as nothing a browse reads was written and no counted task's deadline passed (issue 30: what it
   * counted is still there). Else one count of the filter runs while the old total is still answered, so no request
   * waits for a count but the first of a filter, which waits for the one count in flight. `version` was read before
   * any count this call may start.
   */
  async function totalOf(key: string, at: number, version: string, count: () => Promise<{ total: number; firstDeadline: number }>): Promise<number> {
    const cached = totals.get(key);
    if (cached && at - cached.at < Math.max(TOTAL_TTL_MS, COUNTS_APART * cached.tookMs)) return cached.total;
    if (cached && Math.floor(at / 1000) < cached.firstDeadline && !counting.has(key)) {
      const since = await versions.read(cached.version);
      if (!since.changed) {
        totals.set(key, { ...cached, version: since.version, at });
        return cached.total;
      }
    }
    let running = counting.get(key);
    if (!running) {
      const started = performance.now();
      running = count()
        .then(({ total, firstDeadline }) => {
          totals.set(key, { total, firstDeadline, version, at, tookMs: performance.now() - started });
          return total;
        })
        .finally(() => counting.delete(key));
      counting.set(key, running);
    }
    if (!cached) return running;
    running.catch(() => undefined); // a failed background count leaves the last one; the next request tries again
    return cached.total;
  }

  /**
   * What deliveries add to rows: the current worker's latest delivered output (shown to `viewer` when it is the
   * poster, the worker or, in `agent` mode, the verifier that judges it; a released worker's output is never shown)
   * and whether a delivered round waits for the poster's or the verifier's verdict.
   */
  async function extrasFor(rows: readonly TaskRow[], viewer: string | undefined): Promise<Map<string, TaskExtras>> {
    const extras = new Map<string, TaskExtras>();
    if (rows.length === 0) return extras;
    type Delivered = {
      round: number;
      output: string;
      result_hash: string;
      finalized_at: number | null;
      passed: number | null;
      score: number | null;
      reasons: string | null;
    };
    const latest = new Map<string, Delivered>();
    /** The latest round whose evidence is indexed (docs/security.md): what anyone but the worker may read. */
    const evidenced = new Map<string, Delivered>();
    const deliveries = await db
      .selectFrom("deliveries")
      .select(["task_hash", "round", "agent_address", "output", "result_hash", "finalized_at", "passed", "score", "reasons"])
      .where(
        "task_hash",
        "in",
        rows.map((r) => r.task_hash),
      )
      .execute();
    const byHash = new Map(rows.map((r) => [r.task_hash, r]));
    for (const d of deliveries) {
      const row = byHash.get(d.task_hash);
      if (d.agent_address !== row?.worker) continue;
      const seen = latest.get(d.task_hash);
      if (!seen || d.round > seen.round) latest.set(d.task_hash, d);
      // Its submitEvidence is indexed: an earlier round, or this round with this result's hash.
      const onChain = d.round < row.rounds || (d.round === row.rounds && d.result_hash === row.result_hash?.toLowerCase());
      const shown = evidenced.get(d.task_hash);
      if (onChain && (!shown || d.round > shown.round)) evidenced.set(d.task_hash, d);
    }
    for (const row of rows) {
      const d = latest.get(row.task_hash);
      if (!d) continue;
      // The worker reads what it stored; the poster and the verifier only a round whose evidence is on chain, so a
      // result cannot be read, disputed and refunded while its evidence never lands.
      const readable =
        viewer === row.worker
          ? d
          : viewer !== undefined && (viewer === row.escrow_poster || viewer === row.verifier_address)
            ? evidenced.get(row.task_hash)
            : undefined;
      const verdict: RoundVerdict | undefined = !readable
        ? undefined
        : readable.passed !== null
          ? { passed: readable.passed === 1, score: readable.score, reasons: json.read<string[]>(readable.reasons) ?? [] }
          : judgedOnChain(row, readable.round);
      extras.set(row.task_hash, {
        ...(readable ? { output: readable.output } : {}),
        ...(verdict ? { verdict } : {}),
        awaitingVerdict: row.verification_mode !== "auto" && d.finalized_at !== null && d.passed === null,
      });
    }
    return extras;
  }

  /** Rows as task views, with what deliveries add. */
  async function views(rows: readonly TaskRow[], viewer: string | undefined): Promise<TaskView[]> {
    const extras = await extrasFor(rows, viewer);
    const at = now();
    return rows.map((row) => toTaskView(row, at, extras.get(row.task_hash)));
  }

  /** The poster's tasks, newest first, with their delivered outputs; `before` is the `nextCursor` of the previous page. */
  async function posted(poster: string, options: { limit: number; before?: { listedAt: number; taskHash: string } }) {
    // Listed by the poster and funded by it as the escrow holds it now.
    let query = listed().where("l.poster", "=", poster).where("t.poster", "=", poster);
    const before = options.before;
    if (before) {
      query = query.where((eb) =>
        eb.or([eb("l.listed_at", "<", before.listedAt), eb.and([eb("l.listed_at", "=", before.listedAt), eb("l.task_hash", "<", before.taskHash)])]),
      );
    }
    const rows = await query.orderBy("l.listed_at", "desc").orderBy("l.task_hash", "desc").limit(options.limit).execute();
    const last = rows.at(-1);
    return {
      tasks: await views(rows, poster),
      nextCursor: rows.length === options.limit && last ? `${last.listed_at}_${last.task_hash}` : null,
    };
  }

  /**
   * Every listed task anyone may see (pinned ones aside, as in browse), newest first, by keyset cursor (no offset: the
   * millionth task costs what the first does), filtered by status, chain, a required capability, the worker (the
   * escrow's, kept once paid) and a reward range.
   * Rewards are decimal text without leading zeros: compared by length, then as text, alike on SQLite and PostgreSQL.
   */
  async function explore(filter: {
    status?: TaskStatus;
    chain?: string;
    capability?: string;
    worker?: string;
    minReward?: string;
    maxReward?: string;
    limit: number;
    before?: { listedAt: number; taskHash: string };
  }) {
    let query = listed().where("l.target_executor", "is", null);
    if (filter.chain) query = query.where("l.chain", "=", filter.chain);
    if (filter.worker) query = query.where("t.worker", "=", filter.worker);
    if (filter.status) {
      const nowSeconds = Math.floor(now() / 1000);
      const escrow = ESCROW_STATUS_OF[filter.status];
      query = query.where("t.status", "=", escrow);
      if (filter.status === "open") query = query.where("t.deadline", ">", nowSeconds);
      if (filter.status === "expired") query = query.where("t.deadline", "<=", nowSeconds);
    }
    const capability = filter.capability;
    if (capability) {
      query = query.where((eb) =>
        eb.exists(
          eb.selectFrom("listing_capabilities as c").select("c.tag").whereRef("c.task_hash", "=", "l.task_hash").where("c.tag", "=", capability),
        ),
      );
    }
    const min = filter.minReward;
    if (min !== undefined)
      query = query.where(sql<boolean>`(length(t.amount) > ${min.length} or (length(t.amount) = ${min.length} and t.amount >= ${min}))`);
    const max = filter.maxReward;
    if (max !== undefined)
      query = query.where(sql<boolean>`(length(t.amount) < ${max.length} or (length(t.amount) = ${max.length} and t.amount <= ${max}))`);
    const before = filter.before;
    if (before) {
      query = query.where((eb) =>
        eb.or([eb("l.listed_at", "<", before.listedAt), eb.and([eb("l.listed_at", "=", before.listedAt), eb("l.task_hash", "<", before.taskHash)])]),
      );
    }
    const rows = await query.orderBy("l.listed_at", "desc").orderBy("l.task_hash", "desc").limit(filter.limit).execute();
    const last = rows.at(-1);
    return {
      tasks: await views(rows, undefined),
      nextCursor: rows.length === filter.limit && last ? `${last.listed_at}_${last.task_hash}` : null,
    };
  }

  async function get(taskHash: string): Promise<TaskRow | undefined> {
    return listed().where("l.task_hash", "=", taskHash.toLowerCase()).executeTakeFirst();
  }

  /**
   * One task as `viewer` sees it: the delivered output only for its poster, worker and verifier; its history (taken,
   * work failed and why, released...) only for its poster.
   */
  async function view(taskHash: string, viewer: string | undefined): Promise<TaskView | undefined> {
    const row = await get(taskHash);
    if (!row) return undefined;
    const task = (await views([row], viewer))[0]!;
    if (viewer === undefined || viewer !== row.escrow_poster) return task;
    return { ...task, state: { ...task.state, history: await taskHistory(db, row.chain, row.task_hash) } };
  }

  /**
   * Tasks `worker` holds that have not ended (assigned, delivered, judged or in dispute), oldest listing first, each
   * with the rounds it has left. The escrow names a task's worker from its assignment until it ends (a release clears it).
   */
  async function assigned(worker: string, limit = 200): Promise<AssignedTaskView[]> {
    const rows = await listed()
      .where("t.worker", "=", worker)
      .where("t.ending", "=", Ending.None)
      .orderBy("l.listed_at")
      .orderBy("l.task_hash")
      .limit(limit)
      .execute();
    const nowSeconds = Math.floor(now() / 1000);
    const tasks = await views(rows, worker);
    return tasks.map((task, i) => ({ ...task, roundsLeft: roundsLeft(rows[i]!, nowSeconds) }));
  }

  /** How many browse pages and totals are kept in memory (each bounded). */
  const cached = () => ({ pages: pages.size, totals: totals.size });

  return { browse, explore, posted, get, view, assigned, listed, openFor, openCount, cached };
}
