import { ZeroHash } from "ethers";
import { PostgresAdapter, sql, type Insertable } from "kysely";
import type { Db } from "../db";
import type { EscrowEventsTable } from "../db/schema";
import type { ChainConfig } from "../config";
import { lockCursor, moveCursor, prepareCursorStatements, readCursor, rememberBlocks, type BlockRef, type Cursor } from "./cursor";
import { compareEvents, decodeLog, decodeRegistryRawLog, toEventRow, toRegistryEventRow, type ChainEvent } from "./events";
import { createBlockRange, type BlockRangeOptions } from "./log-range";
import { isRegistryProjection, type AnyProjection } from "./projection";
import type { RegistryLog, RegistryName } from "@market/core/registries";
import { ChainMovedError, readHeader, readLogs, type IndexerProvider, type RawLog } from "./node";
import { findCommonAncestor, rollbackTo } from "./reorg";
import { createTaskProjection } from "./task-projection";
import { everyColumn, rowStatement } from "./row-statements";
import { followNewHeads, type HeadFollower } from "./heads";

/** The subset of a pino/Fastify logger the indexer writes to. */
export interface IndexerLogger {
  debug(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/**
 * Points between the steps of a range. `before-commit` runs inside the range's transaction, so throwing there is a
 * crash before the commit; throwing anywhere aborts the sync as a crash would.
 */
export type IndexerStep = "range-fetched" | "before-commit" | "committed" | "reorg-detected" | "rolled-back";

export interface IndexerOptions {
  db: Db;
  /** The escrow, and the registries beside it when configured: their logs are read together, range by range. */
  chain: Pick<ChainConfig, "name" | "escrow" | "startBlock" | "confirmations"> & Partial<Pick<ChainConfig, "identity" | "reputation">>;
  provider: IndexerProvider;
  /** Pause between polls once caught up. */
  pollIntervalMs: number;
  /**
   * The node's WebSocket endpoint (heads.ts newHeadsUrl): the polling loop subscribes to its new heads and syncs as
   * each one is announced, polling every pollIntervalMs still, as the fallback when the node offers no subscription.
   */
  newHeadsUrl?: string;
  /** Read models fed with each range (escrow and registry projections); default: the escrow task projection alone. */
  projections?: AnyProjection[];
  logger?: IndexerLogger;
  /** eth_getLogs range sizing (see log-range.ts). */
  blockRange?: BlockRangeOptions;
  /**
   * Most events stored by one transaction (default 250 with yieldBetweenCommits, 5,000 without). A range with more is
   * committed in several transactions, cut at block boundaries: on SQLite the API's writes wait for the write lock
   * while a transaction holds it.
   */
  maxEventsPerCommit?: number;
  /**
   * Between the transactions of one range, pause as long as the last one held the write lock. For a SQLite file the
   * API writes to from another connection: SQLite's busy handler retries at growing intervals rather than when the
   * lock is released, so transactions back to back would keep a waiting write out for the whole range.
   */
  yieldBetweenCommits?: boolean;
  /** Called after every committed transaction (a range, or a part of a range with many events). */
  onProgress?: (progress: RangeProgress) => void;
  /** Called for every failed sync of the polling loop (which retries with backoff). */
  onError?: (error: Error) => void;
  /** Observes each step; tests inject crashes by throwing from it. */
  onStep?: (step: IndexerStep, range: { from: number; to: number }) => void | Promise<void>;
  /** Epoch milliseconds, for `indexer_cursors.updated_at`. */
  now?: () => number;
}

/** One committed transaction: blocks `from` to `to`, whole. */
export interface RangeProgress {
  chain: string;
  from: number;
  to: number;
  events: number;
  /** Highest block the indexer may index (head minus confirmations) when the sync started. */
  target: number;
}

export interface SyncResult {
  /** First block indexed by this call; `from > to` when nothing new was indexed. */
  from: number;
  /** The cursor after this call (startBlock - 1 when nothing is indexed yet). */
  to: number;
  /** Events stored by this call. */
  events: number;
  /** Events removed by reorgs during this call. */
  removed: number;
  /** Head minus confirmations when the call started. */
  target: number;
  /** Whether the cursor reached the target (false after a stop, or when the chain moved under the sync). */
  caughtUp: boolean;
}

export interface Indexer {
  /** Indexes from the cursor up to head - confirmations, range by range; handles reorgs on the way. */
  syncOnce(): Promise<SyncResult>;
  /** Starts polling: catch-up, then one sync per poll interval. Errors are logged and retried with backoff. */
  start(): void;
  /** Stops after the current transaction commits. */
  stop(): Promise<void>;
}

/** A range as read from the node, decoded: logs of blocks `from` to `to`, with the headers read for them. */
interface FetchedRange {
  from: number;
  to: number;
  first: BlockRef;
  anchor: BlockRef;
  known: ReadonlyMap<number, BlockRef>;
  events: ChainEvent[];
  registryEvents: RegistryLog[];
}

const MAX_REORGS_PER_SYNC = 16;
/** Ranges read ahead of the one being stored (BlockRangeOptions.readAhead). */
const READ_AHEAD = 2;
/** Events of the ranges read ahead and not yet stored beyond which no further range is read. */
const READY_EVENTS = 10_000;
const HEADER_BATCH = 100;
const MAX_BACKOFF_MS = 30_000;
/**
 * Events a transaction stores by default. Where another connection writes the same SQLite file (yieldBetweenCommits),
 * 250: 20-50 ms of write lock with the benchmark's events (bench/indexer.ts, two CPUs). Otherwise 5,000: a commit
 * writes every page its transaction touched, and task hashes are random keys, so small transactions write the same
 * index pages again and again (a catch-up in transactions of 250 events costs half as much CPU again as in 5,000).
 */
const MAX_EVENTS_PER_COMMIT = { shared: 250, alone: 5_000 };

type EventRow = Insertable<EscrowEventsTable>;
const insertEvents = rowStatement<EventRow>(
  everyColumn<EventRow>()(["chain", "block_number", "block_hash", "log_index", "tx_hash", "tx_index", "event", "task_hash", "args", "block_time"]),
  (db, rows) => db.insertInto("escrow_events").values(rows),
);

/**
 * Event rows in task-hash order, so the index on the task hash (random keys) is written leaf after leaf rather than a
 * leaf at random per row. Stable: a task's rows keep their chain order. Nothing reads the table in insertion order.
 */
function byTask(rows: EventRow[]): EventRow[] {
  return rows.sort((a, b) => (a.task_hash === b.task_hash ? 0 : (a.task_hash ?? "") < (b.task_hash ?? "") ? -1 : 1));
}

const silentLogger: IndexerLogger = { debug() {}, info() {}, warn() {}, error() {} };

export function createIndexer(options: IndexerOptions): Indexer {
  const { db, chain, provider, pollIntervalMs } = options;
  const projections = options.projections ?? [createTaskProjection()];
  const escrowProjections = projections.filter((p) => !isRegistryProjection(p));
  const registryProjections = projections.filter(isRegistryProjection);
  // The contracts whose logs are read: the escrow, then the registries configured beside it.
  const registries = new Map<string, RegistryName>();
  if (chain.identity) registries.set(chain.identity.address.toLowerCase(), "identity");
  if (chain.reputation) registries.set(chain.reputation.address.toLowerCase(), "reputation");
  const addresses = [chain.escrow, ...(chain.identity ? [chain.identity.address] : []), ...(chain.reputation ? [chain.reputation.address] : [])];
  const logger = options.logger ?? silentLogger;
  const now = options.now ?? Date.now;
  const step = async (name: IndexerStep, range: { from: number; to: number }) => options.onStep?.(name, range);
  const range = createBlockRange(options.blockRange);
  const readAhead = Math.max(1, options.blockRange?.readAhead ?? READ_AHEAD);
  const maxEventsPerCommit = Math.max(1, options.maxEventsPerCommit ?? MAX_EVENTS_PER_COMMIT[options.yieldBetweenCommits ? "shared" : "alone"]);

  let stopping = false;
  let loop: Promise<void> | undefined;
  let wake: (() => void) | undefined;
  /** A head announced while no poll was waiting: the next wait ends at once. */
  let headPending = false;
  /** The highest head announced and not yet synced to: the next sync takes it as the head instead of asking the node. */
  let announced: number | undefined;
  let heads: HeadFollower | undefined;
  let running: Promise<unknown> = Promise.resolve();

  const header = (number: number) => readHeader(provider, chain.name, number);

  async function headers(numbers: readonly number[]): Promise<Map<number, BlockRef>> {
    const found = new Map<number, BlockRef>();
    for (let i = 0; i < numbers.length; i += HEADER_BATCH) {
      const batch = await Promise.all(numbers.slice(i, i + HEADER_BATCH).map(header));
      for (const block of batch) found.set(block.number, block);
    }
    return found;
  }

  /** Rolls back to the common ancestor; returns the new cursor and how many events went. */
  async function recover(cursor: Cursor, head: number): Promise<{ cursor: Cursor | undefined; removed: number }> {
    await step("reorg-detected", { from: cursor.number, to: cursor.number });
    const ancestor = await findCommonAncestor(db, provider, chain.name, Math.min(cursor.number, head));
    const removed = await rollbackTo(db, chain.name, cursor, ancestor, projections, now());
    logger.warn(
      { chain: chain.name, cursor: cursor.number, ancestor: ancestor?.number ?? null, removed: removed.length },
      "indexer: reorg, rolled back to the common ancestor",
    );
    await step("rolled-back", { from: (ancestor?.number ?? chain.startBlock - 1) + 1, to: cursor.number });
    return { cursor: ancestor, removed: removed.length };
  }

  /**
   * Reads the range of blocks `from` to `to` (fewer when the node refuses that many): its logs decoded, with the
   * headers of its first and last blocks and of every block with a log.
   */
  async function fetchRange(from: number, to: number): Promise<FetchedRange> {
    // The range's last block is read before its logs, and (for several blocks) again after: when both reads agree,
    // the logs and every header read in between come from that one chain. The first block's header is read beside
    // the logs; a log's block is named by its hash, so the headers of the blocks with logs may be read beside the
    // last block's second read (a header that does not match its logs' block hash fails the range).
    const fetched = await range.fetch(
      from,
      to,
      async (to) => {
        if (from === to) {
          // One block (a new head, live): its header and its logs in one round trip (one batch). Each log names its
          // block's hash, checked against the header; a block replaced in between shows at the next range, whose
          // parent hash is not this one.
          const [anchor, logs] = await Promise.all([header(to), readLogs(provider, addresses, from, to)]);
          return { anchor, first: anchor, logs };
        }
        const anchor = await header(to);
        const first = header(from);
        void first.catch(() => undefined); // awaited below, unless the node refuses the logs
        const logs = await readLogs(provider, addresses, from, to);
        return { anchor, first: await first, logs };
      },
      ({ logs }) => logs.length,
    );
    const { anchor, first, logs } = fetched.result;
    const known = new Map<number, BlockRef>([
      [first.number, first],
      [anchor.number, anchor],
    ]);
    const missing = [...new Set(logs.map((log) => log.blockNumber))].filter((n) => !known.has(n));
    const [found, again] = await Promise.all([headers(missing), fetched.to === from ? anchor : header(fetched.to)]);
    if (again.hash !== anchor.hash) {
      throw new ChainMovedError(`${chain.name}: block ${fetched.to} changed while range ${from}-${fetched.to} was read`);
    }
    for (const [n, block] of found) known.set(n, block);
    return { from, to: fetched.to, first, anchor, known, ...decodeLogs(logs, known) };
  }

  /** The hash of the cursor's block as the node has it now (undefined when it has no such block). */
  async function cursorBlockHash(number: number): Promise<string | undefined> {
    try {
      return (await header(number)).hash;
    } catch (error) {
      if (error instanceof ChainMovedError) return undefined;
      throw error;
    }
  }

  /** Whether the range's first block is the child of the cursor's block. */
  async function extendsCursor(cursor: Cursor, first: BlockRef): Promise<boolean> {
    // A zero parent hash is Hardhat's: blocks reserved by hardhat_mine carry none (no real chain has one past
    // genesis). The link cannot be checked then, so the cursor's own block is asked for instead.
    if (first.parentHash === ZeroHash) return (await header(cursor.number)).hash === cursor.hash;
    return first.parentHash === cursor.hash;
  }

  /**
   * Stores a range read by fetchRange after the cursor, in one transaction per slice of at most maxEventsPerCommit
   * events. Returns the new cursor (short of the range's end after a stop).
   */
  async function storeRange(cursor: Cursor | undefined, fetched: FetchedRange, target: number): Promise<{ cursor: Cursor; events: number }> {
    const { from, anchor, known } = fetched;
    let at = cursor;
    let stored = 0;
    let held = 0;
    for (const slice of slicesOf(fetched, from, anchor, known)) {
      const next = { number: slice.to.number, hash: slice.to.hash };
      const done = { from: slice.from, to: next.number };
      if (held > 0 && options.yieldBetweenCommits) await new Promise((resolve) => setTimeout(resolve, held));
      const began = performance.now();
      await db.transaction().execute(async (trx) => {
        if (asyncCommit) await sql`set local synchronous_commit = off`.execute(trx);
        await lockCursor(trx, chain.name);
        if (slice.events.length > 0) await insertEvents(trx, byTask(slice.events.map(toEventRow)));
        const registryRows = slice.registryEvents.map(toRegistryEventRow);
        if (registryRows.length > 0) await trx.insertInto("registry_events").values(registryRows).execute();
        for (const projection of escrowProjections) await projection.apply(trx, chain.name, slice.events);
        for (const projection of registryProjections) await projection.apply(trx, chain.name, slice.registryEvents);
        const blocks = [...known.values()].filter((b) => b.number >= done.from && b.number <= done.to);
        await rememberBlocks(trx, chain.name, blocks, next.number);
        await moveCursor(trx, chain.name, at, next, now());
        await step("before-commit", done);
      });
      held = performance.now() - began;
      await step("committed", done);
      const count = slice.events.length + slice.registryEvents.length;
      options.onProgress?.({ chain: chain.name, ...done, events: count, target });
      at = next;
      stored += count;
      if (stopping) break;
    }
    return { cursor: at!, events: stored };
  }

  /**
   * Cuts a range's events (in chain order) into the transactions that store them: at most maxEventsPerCommit events
   * each, cut between blocks (a block with more events is stored alone). Each slice but the last ends at the block of
   * its last event, whose header was read with the logs; the last ends at the range's end. The registries' few logs go
   * with the slice whose blocks hold them.
   */
  function slicesOf(
    { events, registryEvents }: { events: readonly ChainEvent[]; registryEvents: readonly RegistryLog[] },
    from: number,
    end: BlockRef,
    known: ReadonlyMap<number, BlockRef>,
  ) {
    const slices: Array<{ from: number; to: BlockRef; events: readonly ChainEvent[] }> = [];
    let start = 0;
    let sliceFrom = from;
    while (events.length - start > maxEventsPerCommit) {
      let cut = start + maxEventsPerCommit;
      const block = events[cut]!.blockNumber;
      while (cut > start && events[cut - 1]!.blockNumber === block) cut--;
      if (cut === start) while (cut < events.length && events[cut]!.blockNumber === block) cut++;
      if (cut === events.length) break;
      const last = events[cut - 1]!.blockNumber;
      slices.push({ from: sliceFrom, to: known.get(last)!, events: events.slice(start, cut) });
      start = cut;
      sliceFrom = last + 1;
    }
    slices.push({ from: sliceFrom, to: end, events: events.slice(start) });
    return slices.map((slice) => ({
      ...slice,
      registryEvents: registryEvents.filter((e) => e.blockNumber >= slice.from && e.blockNumber <= slice.to.number),
    }));
  }

  /** The escrow's logs, every one decoded, and the registries' kept logs, each in chain order. */
  function decodeLogs(logs: readonly RawLog[], blocks: ReadonlyMap<number, BlockRef>): { events: ChainEvent[]; registryEvents: RegistryLog[] } {
    const events: ChainEvent[] = [];
    const registryEvents: RegistryLog[] = [];
    for (const log of logs) {
      const block = blocks.get(log.blockNumber);
      if (!block || block.hash !== log.blockHash) {
        throw new ChainMovedError(`${chain.name}: log of block ${log.blockNumber} is not on the chain read`);
      }
      // A provider that is not asked for several addresses (one contract) may leave the address out of its logs.
      const registry = log.address ? registries.get(log.address.toLowerCase()) : undefined;
      if (registry === undefined) {
        events.push(decodeLog(chain.name, log, block.timestamp));
        continue;
      }
      const decoded = decodeRegistryRawLog(chain.name, registry, log, block.timestamp);
      if (decoded) registryEvents.push(decoded);
    }
    return { events: events.sort(compareEvents), registryEvents: registryEvents.sort(compareEvents) };
  }

  /** Whether `next` continues `range` (its first block the child of range's last) and both fit one transaction. */
  function joins(range: FetchedRange, next: FetchedRange): boolean {
    const events = range.events.length + range.registryEvents.length + next.events.length + next.registryEvents.length;
    return next.from === range.to + 1 && next.first.parentHash === range.anchor.hash && events <= maxEventsPerCommit;
  }

  /** Two consecutive ranges as one (see joins). */
  function joined(range: FetchedRange, next: FetchedRange): FetchedRange {
    return {
      from: range.from,
      to: next.to,
      first: range.first,
      anchor: next.anchor,
      known: new Map([...range.known, ...next.known]),
      events: range.events.concat(next.events),
      registryEvents: range.registryEvents.concat(next.registryEvents),
    };
  }

  let prepared = false;
  /**
   * On PostgreSQL the indexer's transactions commit without waiting for their WAL to reach the disk
   * (`synchronous_commit = off` for them alone): a server crash may lose the last few hundred milliseconds of commits,
   * cursor and rows together, which the indexer then reads from the chain again; nothing else depends on them having
   * been durable. About 7% of a catch-up (bench/indexer.ts). SQLite's WAL with synchronous=NORMAL is alike already.
   */
  const asyncCommit = db.getExecutor().adapter instanceof PostgresAdapter;

  async function sync(): Promise<SyncResult> {
    if (!prepared) {
      // Compiled before any transaction holds the write lock.
      insertEvents.prepare(db);
      prepareCursorStatements(db);
      for (const projection of escrowProjections) projection.prepare?.(db);
      prepared = true;
    }
    // An announced head saves a round trip; were it wrong, reading its block fails the range and the next sync asks.
    const head = announced ?? (await provider.getBlockNumber());
    announced = undefined;
    const target = head - chain.confirmations;
    let cursor = await readCursor(db, chain.name);
    let firstFrom: number | undefined;
    let events = 0;
    let removed = 0;
    let reorgs = 0;
    let caughtUp = false;
    const recoverFrom = async (at: Cursor) => {
      if (++reorgs > MAX_REORGS_PER_SYNC) throw new Error(`${chain.name}: the chain keeps reorganizing; giving up this sync`);
      const recovered = await recover(at, head);
      cursor = recovered.cursor;
      removed += recovered.removed;
    };

    // Ranges are read ahead of the one being stored, each from where the one before it was planned to end: the node
    // serves some while this thread decodes and stores another. At most readAhead reads in flight, none while the
    // ranges read and not stored hold READY_EVENTS events, and one range alone until an answer tells the logs' density.
    // A range that does not start at the cursor (after a refusal shortened the one before, or a reorg) drops those
    // after it.
    type Read = { from: number; fetched: Promise<FetchedRange>; ready?: FetchedRange };
    let queue: Read[] = [];
    const reads = new Set<Promise<unknown>>();
    let nextFrom = 0;
    let answered = false;
    let finished = false;
    const read = () => {
      const from = nextFrom;
      const to = range.end(from, target);
      const entry: Read = { from, fetched: fetchRange(from, to) };
      // Awaited when taken; a range dropped (or not taken after a stop or an error) is only waited for.
      reads.add(
        entry.fetched.then(
          (fetched) => {
            entry.ready = fetched;
            answered = true;
            fill();
          },
          () => undefined,
        ),
      );
      queue.push(entry);
      nextFrom = to + 1;
    };
    const fill = () => {
      for (;;) {
        let inFlight = 0;
        let ready = 0;
        for (const entry of queue) {
          if (entry.ready) ready += entry.ready.events.length + entry.ready.registryEvents.length;
          else inFlight++;
        }
        if (finished || stopping || !answered || nextFrom > target || inFlight >= readAhead || ready >= READY_EVENTS) return;
        read();
      }
    };
    const take = (from: number): Promise<FetchedRange> => {
      if (queue[0]?.from !== from) {
        queue = [];
        nextFrom = from;
        read();
      }
      const next = queue.shift()!;
      fill();
      return next.fetched;
    };
    try {
      while (!stopping) {
        const from = cursor ? cursor.number + 1 : chain.startBlock;
        if (from > target) {
          // Nothing new: still make sure the cursor block is canonical (the chain may have got shorter or swapped
          // its last blocks for as many others).
          if (cursor && (await cursorBlockHash(cursor.number)) !== cursor.hash) {
            await recoverFrom(cursor);
            continue;
          }
          caughtUp = true;
          break;
        }
        const fetched = await take(from);
        if (cursor && !(await extendsCursor(cursor, fetched.first))) {
          await recoverFrom(cursor);
          continue;
        }
        await step("range-fetched", { from, to: fetched.to });
        // The ranges already read after it join its transaction, up to maxEventsPerCommit events: when the node answers
        // faster than ranges are stored, fewer and larger commits (each commit writes every page it touched).
        let batch = fetched;
        for (let next = queue[0]?.ready; next && !stopping && joins(batch, next); next = queue[0]?.ready) {
          queue.shift();
          fill();
          await step("range-fetched", { from: next.from, to: next.to });
          batch = joined(batch, next);
        }
        const indexed = await storeRange(cursor, batch, target);
        firstFrom = Math.min(firstFrom ?? from, from);
        cursor = indexed.cursor;
        events += indexed.events;
      }
    } catch (error) {
      if (!(error instanceof ChainMovedError)) throw error;
      logger.debug({ chain: chain.name, reason: error.message }, "indexer: chain moved during a range; reading again");
    } finally {
      // Ranges read ahead and not stored: let their requests end before this sync does.
      finished = true;
      await Promise.all(reads);
    }
    const to = cursor?.number ?? chain.startBlock - 1;
    return { from: firstFrom ?? to + 1, to, events, removed, target, caughtUp };
  }

  /** One sync at a time, whether called directly or by the polling loop. */
  function syncOnce(): Promise<SyncResult> {
    const result = running.then(sync, sync);
    running = result.catch(() => undefined);
    return result;
  }

  function sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      if (stopping || headPending) {
        headPending = false;
        return resolve();
      }
      const done = () => {
        clearTimeout(timer);
        wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      wake = done;
    });
  }

  async function poll(): Promise<void> {
    let failures = 0;
    while (!stopping) {
      try {
        const result = await syncOnce();
        failures = 0;
        // Keep going without a pause while a catch-up makes progress.
        if (!result.caughtUp && result.to >= result.from) continue;
        await sleep(pollIntervalMs);
      } catch (error) {
        failures++;
        const err = error instanceof Error ? error : new Error(String(error));
        logger.error({ chain: chain.name, err, failures }, "indexer: sync failed; retrying");
        options.onError?.(err);
        await sleep(Math.min(MAX_BACKOFF_MS, pollIntervalMs * 2 ** Math.min(failures, 10)));
      }
    }
  }

  return {
    syncOnce,
    start() {
      if (loop) return;
      stopping = false;
      if (options.newHeadsUrl) {
        heads = followNewHeads(
          options.newHeadsUrl,
          (number) => {
            if (Number.isSafeInteger(number) && number > (announced ?? -1)) announced = number;
            if (wake) wake();
            else headPending = true;
          },
          logger,
        );
      }
      loop = poll();
    },
    async stop() {
      stopping = true;
      heads?.stop();
      heads = undefined;
      wake?.();
      await loop;
      await running;
      loop = undefined;
      stopping = false;
    },
  };
}
