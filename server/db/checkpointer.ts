/**
 * WAL checkpoints of a SQLite file, on a thread of their own (issue 30).
 *
 * By default SQLite checkpoints inside a commit: the connection whose commit takes the WAL past 1,000 pages copies
 * every page of the WAL back into the database file before its commit returns. For the indexer that is the catch-up's
 * write path stopping for the copy (a quarter of its time in bench/indexer.ts: 33-36k events/s with it, 44-49k
 * without), and for the API a write that now and then takes the copy's time. So a connection opened on a file turns
 * its own automatic checkpoints off (all but a safety net, below), and one thread per file and process runs a PASSIVE
 * checkpoint every CHECKPOINT_EVERY_MS on its own connection: it copies what no reader still needs while the writers
 * go on (a passive checkpoint takes no lock a writer waits for), and the writer starts the WAL over once everything
 * in it is copied. The copy runs on another core than the writer's.
 *
 * The safety net: a connection keeps SQLite's own checkpoint at WRITER_LIMIT_FACTOR times the restart bound. The
 * thread's RESTART needs a gap between the writer's transactions, which a loaded machine may not give it in time (CI
 * saw a WAL of 27,000 pages against a bound of 500); past that size the writer copies the rest itself (most of it
 * already copied by the thread) and starts the WAL over at its next write, so the WAL has a bound whatever the timing.
 *
 * Should the thread fail to start or end unexpectedly, every connection of the file gets its automatic checkpoints
 * back, as SQLite's default. The thread is unreferenced (it never keeps a process alive) and ends when the last
 * connection of its file closes.
 */
import { Worker } from "node:worker_threads";
import type { Database as SqliteHandle } from "better-sqlite3";

/** How often the thread checkpoints (ms). A checkpoint with nothing to copy costs a few microseconds. */
export const CHECKPOINT_EVERY_MS = 100;
/**
 * WAL pages past which the thread restarts the WAL (RESTART: it waits up to RESTART_WAIT_MS for the writer and the
 * readers still on the WAL, while new writes wait for it). A passive checkpoint copies, but the WAL starts over only
 * when a write finds all of it copied, which a writer committing without pause never does: without this the WAL of a
 * long catch-up would grow without bound.
 */
export const RESTART_PAGES = 8_000;
const RESTART_WAIT_MS = 200;
/** A connection's own automatic checkpoint, in multiples of the restart bound: the WAL's bound when the thread lags. */
export const WRITER_LIMIT_FACTOR = 2;
/** SQLite's own default, given back to the connections when the thread is gone. */
const AUTOCHECKPOINT_PAGES = 1_000;

/** The thread's body: plain JavaScript (no TypeScript loader in a worker), the same better-sqlite3 as the caller. */
const BODY = `
const { parentPort, workerData } = require("node:worker_threads");
const Database = require(workerData.module);
const db = new Database(workerData.file, { fileMustExist: true });
db.pragma("busy_timeout = 0");
let stopped = false;
const pause = new Int32Array(new SharedArrayBuffer(4));
let last = { log: -1, checkpointed: -1 };
const tick = () => {
  if (stopped) return;
  try {
    let [result] = db.pragma("wal_checkpoint(PASSIVE)");
    if (result.log > workerData.restartPages) {
      // Writers that never leave a gap keep the WAL from starting over: wait for a gap (a short while) and restart it.
      // SQLite's busy handler would sleep 1, 2, 5, 10... ms between tries and miss a writer's sub-millisecond gaps;
      // this tries every quarter millisecond.
      const until = Date.now() + workerData.restartWaitMs;
      for (;;) {
        try {
          [result] = db.pragma("wal_checkpoint(RESTART)");
          if (result.busy === 0) break;
        } catch (error) {
          if (error.code !== "SQLITE_BUSY" && error.code !== "SQLITE_LOCKED") throw error;
        }
        if (Date.now() >= until) break;
        Atomics.wait(pause, 0, 0, 0.25);
      }
    }
    if (result.log !== last.log || result.checkpointed !== last.checkpointed) {
      last = result;
      parentPort.postMessage({ type: "checkpoint", log: result.log, checkpointed: result.checkpointed });
    }
  } catch (error) {
    // SQLITE_BUSY: another checkpoint runs (another thread's); the next tick tries again.
    if (error.code !== "SQLITE_BUSY" && error.code !== "SQLITE_LOCKED") throw error;
  }
  setTimeout(tick, workerData.everyMs);
};
parentPort.on("message", (message) => {
  if (message !== "stop") return;
  stopped = true;
  db.close();
  parentPort.close();
});
tick();
`;

interface FileCheckpointer {
  worker: Worker;
  connections: Set<SqliteHandle>;
  /** The last checkpoint's figures: frames in the WAL and frames copied. */
  last?: { log: number; checkpointed: number };
}

const byFile = new Map<string, FileCheckpointer>();

/** Gives every connection of the file its automatic checkpoints back (the thread is gone). */
function fallBack(file: string, entry: FileCheckpointer): void {
  if (byFile.get(file) === entry) byFile.delete(file);
  for (const connection of entry.connections) {
    if (connection.open) connection.pragma(`wal_autocheckpoint = ${AUTOCHECKPOINT_PAGES}`);
  }
}

/**
 * Hands the checkpoints of `connection`'s file (in WAL mode) to the file's checkpoint thread, started if needed;
 * returns what to call when the connection closes.
 */
export function checkpointInBackground(
  connection: SqliteHandle,
  file: string,
  { everyMs = CHECKPOINT_EVERY_MS, restartPages = RESTART_PAGES }: { everyMs?: number; restartPages?: number } = {},
): () => void {
  let entry = byFile.get(file);
  if (!entry) {
    let worker: Worker;
    try {
      worker = new Worker(BODY, {
        eval: true,
        workerData: {
          file,
          module: require.resolve("better-sqlite3"),
          everyMs,
          restartPages,
          restartWaitMs: RESTART_WAIT_MS,
        },
      });
    } catch {
      return () => undefined; // SQLite's own checkpoints stay on
    }
    worker.unref();
    const created: FileCheckpointer = { worker, connections: new Set() };
    worker.on("message", (message: { type: string; log: number; checkpointed: number }) => {
      if (message.type === "checkpoint") created.last = { log: message.log, checkpointed: message.checkpointed };
    });
    worker.on("error", () => fallBack(file, created));
    worker.on("exit", () => fallBack(file, created));
    byFile.set(file, created);
    entry = created;
  }
  const owner = entry;
  connection.pragma(`wal_autocheckpoint = ${restartPages * WRITER_LIMIT_FACTOR}`);
  owner.connections.add(connection);
  return () => {
    owner.connections.delete(connection);
    if (owner.connections.size > 0) return;
    if (byFile.get(file) === owner) byFile.delete(file);
    owner.worker.postMessage("stop");
  };
}

/** The file's checkpoint thread, for tests: its last figures, or undefined when the file has none running. */
export function checkpointerOf(file: string): { worker: Worker; last?: { log: number; checkpointed: number } } | undefined {
  return byFile.get(file);
}
