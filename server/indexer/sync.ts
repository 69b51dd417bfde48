import { ZeroHash } from "ethers";
import type { Db } from "../db";
import type { ChainConfig } from "../config";
import { moveCursor, readCursor, rememberBlocks, type BlockRef, type Cursor } from "./cursor";
import { compareEvents, decodeLog, toEventRow, type ChainEvent } from "./events";
import { createBlockRange, type BlockRangeOptions } from "./log-range";
import type { Projection } from "./projection";
import { ChainMovedError, readHeader, readLogs, type IndexerProvider, type RawLog } from "./node";
import { findCommonAncestor, rollbackTo } from "./reorg";
import { createTaskProjection } from "./task-projection";

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
  chain: Pick<ChainConfig, "name" | "escrow" | "startBlock" | "confirmations">;
  provider: IndexerProvider;
  /** Pause between polls once caught up. */
  pollIntervalMs: number;
  /** Read models fed with each range; default: the escrow task projection alone. */
  projections?: Projection[];
  logger?: IndexerLogger;
  /** eth_getLogs range sizing (see log-range.ts). */
  blockRange?: BlockRangeOptions;
  /** Called after every committed range. */
  onProgress?: (progress: RangeProgress) => void;
  /** Called for every failed sync of the polling loop (which retries with backoff). */
  onError?: (error: Error) => void;
  /** Observes each step; tests inject crashes by throwing from it. */
  onStep?: (step: IndexerStep, range: { from: number; to: number }) => void | Promise<void>;
  /** Epoch milliseconds, for `indexer_cursors.updated_at`. */
  now?: () => number;
}

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
  /** Stops after the current range commits. */
  stop(): Promise<void>;
}

const MAX_REORGS_PER_SYNC = 16;
const HEADER_BATCH = 100;
const MAX_BACKOFF_MS = 30_000;
/** 10 columns a row: 20,000 bound parameters, under SQLite's 32,766 and PostgreSQL's 65,535. */
const EVENT_ROWS_PER_INSERT = 2_000;

const silentLogger: IndexerLogger = { debug() {}, info() {}, warn() {}, error() {} };

export function createIndexer(options: IndexerOptions): Indexer {
  const { db, chain, provider, pollIntervalMs } = options;
  const projections = options.projections ?? [createTaskProjection()];
  const logger = options.logger ?? silentLogger;
  const now = options.now ?? Date.now;
  const step = async (name: IndexerStep, range: { from: number; to: number }) => options.onStep?.(name, range);
  const range = createBlockRange(options.blockRange);

  let stopping = false;
  let loop: Promise<void> | undefined;
  let wake: (() => void) | undefined;
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
   * Reads and stores one range starting at `from`. Returns the new cursor, or "reorg" when block `from` does not
   * extend the cursor.
   */
  async function indexRange(cursor: Cursor | undefined, from: number, target: number): Promise<{ cursor: Cursor; events: number } | "reorg"> {
    // The range's last block is read before its logs, and (for several blocks) again after: when both reads agree,
    // the logs and every header read in between come from that one chain.
    const { to, result } = await range.fetch(from, target, async (to) => {
      const anchor = await header(to);
      const logs = await readLogs(provider, chain.escrow, from, to);
      return { anchor, logs };
    });
    const { anchor, logs } = result;
    const first = from === to ? anchor : await header(from);
    // A zero parent hash is Hardhat's: blocks reserved by hardhat_mine carry none. No real chain has one past genesis.
    if (cursor && first.parentHash !== cursor.hash && first.parentHash !== ZeroHash) return "reorg";

    const known = new Map<number, BlockRef>([
      [first.number, first],
      [anchor.number, anchor],
    ]);
    const missing = [...new Set(logs.map((log) => log.blockNumber))].filter((n) => !known.has(n));
    for (const [n, block] of await headers(missing)) known.set(n, block);
    if (from !== to && (await header(to)).hash !== anchor.hash) {
      throw new ChainMovedError(`${chain.name}: block ${to} changed while range ${from}-${to} was read`);
    }
    const events = decodeLogs(logs, known);
    await step("range-fetched", { from, to });

    const next = { number: anchor.number, hash: anchor.hash };
    await db.transaction().execute(async (trx) => {
      const rows = events.map(toEventRow);
      for (let i = 0; i < rows.length; i += EVENT_ROWS_PER_INSERT) {
        await trx.insertInto("escrow_events").values(rows.slice(i, i + EVENT_ROWS_PER_INSERT)).execute();
      }
      for (const projection of projections) await projection.apply(trx, chain.name, events);
      await rememberBlocks(trx, chain.name, [...known.values()], next.number);
      await moveCursor(trx, chain.name, cursor, next, now());
      await step("before-commit", { from, to });
    });
    await step("committed", { from, to });
    options.onProgress?.({ chain: chain.name, from, to, events: events.length, target });
    return { cursor: next, events: events.length };
  }

  function decodeLogs(logs: readonly RawLog[], blocks: ReadonlyMap<number, BlockRef>): ChainEvent[] {
    return logs
      .map((log) => {
        const block = blocks.get(log.blockNumber);
        if (!block || block.hash !== log.blockHash) {
          throw new ChainMovedError(`${chain.name}: log of block ${log.blockNumber} is not on the chain read`);
        }
        return decodeLog(chain.name, log, block.timestamp);
      })
      .sort(compareEvents);
  }

  async function sync(): Promise<SyncResult> {
    const head = await provider.getBlockNumber();
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

    try {
      while (!stopping) {
        const from = cursor ? cursor.number + 1 : chain.startBlock;
        if (from > target) {
          // Nothing new: still make sure the cursor block is canonical (the chain may have got shorter or swapped
          // its last blocks for as many others).
          if (cursor && (await provider.getBlock(cursor.number))?.hash !== cursor.hash) {
            await recoverFrom(cursor);
            continue;
          }
          caughtUp = true;
          break;
        }
        const indexed = await indexRange(cursor, from, target);
        if (indexed === "reorg") {
          await recoverFrom(cursor!);
          continue;
        }
        firstFrom = Math.min(firstFrom ?? from, from);
        cursor = indexed.cursor;
        events += indexed.events;
      }
    } catch (error) {
      if (!(error instanceof ChainMovedError)) throw error;
      logger.debug({ chain: chain.name, reason: error.message }, "indexer: chain moved during a range; reading again");
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
      if (stopping) return resolve();
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
      loop = poll();
    },
    async stop() {
      stopping = true;
      wake?.();
      await loop;
      await running;
      loop = undefined;
      stopping = false;
    },
  };
}
