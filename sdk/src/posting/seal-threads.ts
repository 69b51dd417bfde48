/**
 * Sealing private briefs on worker threads, where the engine runs in Node (issue 30): one thread per core, each
 * sealing with core/crypto itself (the same code as everywhere else), so the thread that signs, funds and lists only
 * posts a brief and gets its ciphertext and wrapped keys back. Node is found through `process.getBuiltinModule`, never
 * imported: the web app bundles this engine for the page, where there is no such thing and `defaultSealer` seals in
 * the calling thread.
 *
 * The threads start when a run starts (`warm`) or on the first brief; a brief sent before any is ready waits for one
 * (a thread is ready a few tens of ms after it starts): sealing it in the calling thread meanwhile cost that thread
 * the set-up of the curve's tables (about half a second of CPU, on top of each thread's own) while it stages the first
 * chunk. They keep the process alive only while they hold work, and stop after a spell without any. A ready thread
 * that dies fails its briefs (the engine fails their chunk unpaid) and is replaced; threads that cannot start leave
 * the sealing to the calling thread, which seals the briefs they were waiting with.
 */
import type { Worker } from "node:worker_threads";
import { CryptoError, type CryptoErrorCode } from "@market/core/crypto";
import { inlineSealer, sealHere, type BriefSealer, type SealedBrief } from "./seal";

type WorkerThreads = typeof import("node:worker_threads");
type Os = typeof import("node:os");

/**
 * What a thread runs: load core/crypto, then seal each brief it is sent. Run from TypeScript sources (tests, benches,
 * through ts-node), the thread is handed the JavaScript the calling thread's ts-node compiles core/crypto.ts to and
 * evaluates it as Node would the compiled file (its own require, __filename and __dirname): loading TypeScript in each
 * thread would cost it more CPU than the briefs of a whole chunk.
 */
const BOOTSTRAP = `
const { parentPort, workerData } = require("node:worker_threads");
let crypto;
if (workerData.code === null) crypto = require(workerData.file);
else {
  const module = { exports: {} };
  const evaluate = new Function("exports", "require", "module", "__filename", "__dirname", workerData.code);
  evaluate(module.exports, require("node:module").createRequire(workerData.file), module, workerData.file, require("node:path").dirname(workerData.file));
  crypto = module.exports;
}
const { encryptBrief, createBriefKeyWrapper } = crypto;
// One ephemeral key for the briefs of this thread (core/crypto createBriefKeyWrapper), made now with the curve's table
// of base-point multiples, while the run looks its agents up, before any brief is here.
const wrapper = createBriefKeyWrapper();
wrapper.wrap(new Uint8Array(32), []);
parentPort.on("message", ({ id, instructions, readers }) => {
  try {
    const { ciphertext, key } = encryptBrief(instructions);
    parentPort.postMessage({ id, sealed: { ciphertext, key, wrappedKeys: wrapper.wrap(key, readers) } });
  } catch (error) {
    parentPort.postMessage({ id, error: { name: error && error.name, code: error && error.code, message: String((error && error.message) || error) } });
  }
});
parentPort.postMessage({ ready: true });
`;

type Reply = { ready: true } | { id: number; sealed: SealedBrief } | { id: number; error: { name?: string; code?: string; message: string } };

interface Job {
  instructions: string;
  readers: readonly string[];
  resolve(sealed: SealedBrief): void;
  reject(error: Error): void;
}

interface Thread {
  worker: Worker;
  ready: boolean;
  jobs: Map<number, Job>;
}

export interface ThreadSealerOptions {
  /** Threads (default: the machine's cores). */
  threads?: number;
  /** Threads stop after this long without a brief to seal (ms, default 10,000). */
  idleMs?: number;
}

export interface ThreadSealer extends BriefSealer {
  /** Threads started and ready to seal. */
  readonly readyThreads: number;
  /** Briefs sealed so far on the threads, and in the calling thread (where no thread could start). */
  readonly sealed: { onThreads: number; here: number };
  /** Starts the threads now, without a brief. */
  warm(): void;
  /** Stops the threads now (briefs in flight are refused); the next brief starts them again. */
  close(): Promise<void>;
}

/** ts-node's instance in this process (its documented REGISTER_INSTANCE symbol), when it runs TypeScript here. */
const TS_NODE = Symbol.for("ts-node.register.instance");
type TsNode = { compile(code: string, fileName: string): string };

/**
 * What a thread needs to load core/crypto: its file, and the file compiled to JavaScript when it is TypeScript run by
 * ts-node here; undefined where that is not possible (then the calling thread seals).
 */
function workerData(fs: typeof import("node:fs")): { file: string; code: string | null } | undefined {
  if (typeof __dirname !== "string") return undefined;
  if (!__filename.endsWith(".ts")) {
    try {
      return { file: require.resolve("@market/core/crypto"), code: null };
    } catch {
      return undefined;
    }
  }
  const tsNode = (process as unknown as Record<symbol, TsNode | undefined>)[TS_NODE];
  const file = `${__dirname}/../../../core/crypto.ts`;
  try {
    return tsNode ? { file, code: tsNode.compile(fs.readFileSync(file, "utf8"), file) } : undefined;
  } catch {
    return undefined;
  }
}

/** Seals briefs on `threads.Worker`s (see the top of this file); `undefined` where threads cannot load core/crypto. */
export function createThreadSealer(
  node: { threads: WorkerThreads; fs: typeof import("node:fs") },
  options: ThreadSealerOptions & { cores: number },
): ThreadSealer | undefined {
  const data = workerData(node.fs);
  if (!data) return undefined;
  const size = Math.max(1, options.threads ?? options.cores);
  const idleMs = options.idleMs ?? 10_000;
  const pool: Thread[] = [];
  const sealed = { onThreads: 0, here: 0 };
  let nextId = 1;
  let idleTimer: ReturnType<typeof setTimeout> | undefined;
  /** A thread died before it was ready: its siblings would too, so the calling thread seals from now on. */
  let cannotStart = false;

  const inFlight = () => pool.reduce((n, t) => n + t.jobs.size, 0);

  function spawn(): void {
    const worker = new node.threads.Worker(BOOTSTRAP, { eval: true, workerData: data, name: "brief-sealer" });
    const thread: Thread = { worker, ready: false, jobs: new Map() };
    worker.unref();
    worker.on("message", (reply: Reply) => {
      if ("ready" in reply) {
        thread.ready = true;
        if (inFlight() === 0) idleSoon();
        return;
      }
      const job = thread.jobs.get(reply.id);
      if (!job) return;
      thread.jobs.delete(reply.id);
      if (thread.jobs.size === 0) worker.unref();
      if ("sealed" in reply) {
        sealed.onThreads++;
        job.resolve(reply.sealed);
      } else job.reject(asError(reply.error));
      if (inFlight() === 0) idleSoon();
    });
    const stopped = (why: Error) => {
      const at = pool.indexOf(thread);
      if (at < 0) return;
      pool.splice(at, 1);
      // A thread that never got ready: none can start here, and the briefs it was waiting with are sealed here.
      const startFailed = !thread.ready;
      if (startFailed) cannotStart = true;
      for (const job of thread.jobs.values()) {
        if (!startFailed) job.reject(why);
        else
          try {
            job.resolve(sealHere(job.instructions, job.readers));
            sealed.here++;
          } catch (error) {
            job.reject(error as Error);
          }
      }
      thread.jobs.clear();
    };
    worker.on("error", (error) => {
      stopped(new Error(`the brief-sealing thread failed: ${error.message}`));
      void worker.terminate();
    });
    worker.on("exit", (code) => stopped(new Error(`the brief-sealing thread stopped (exit code ${code})`)));
    pool.push(thread);
  }

  function idleSoon(): void {
    clearTimeout(idleTimer);
    idleTimer = setTimeout(() => {
      if (inFlight() === 0) void close();
    }, idleMs);
    idleTimer.unref?.();
  }

  async function close(): Promise<void> {
    clearTimeout(idleTimer);
    const stopping = pool.splice(0);
    for (const thread of stopping) {
      for (const job of thread.jobs.values()) job.reject(new Error("the brief-sealing threads were stopped"));
      thread.jobs.clear();
    }
    await Promise.all(stopping.map((t) => t.worker.terminate()));
  }

  return {
    get readyThreads() {
      return pool.filter((t) => t.ready).length;
    },
    get sealed() {
      return { ...sealed };
    },
    warm() {
      if (!cannotStart) while (pool.length < size) spawn();
    },
    async seal(instructions, readers) {
      clearTimeout(idleTimer);
      if (!cannotStart) while (pool.length < size) spawn();
      // The thread with the fewest briefs in hand, a ready one first (a starting one seals them once ready); none
      // (none can start): this thread.
      let thread: Thread | undefined;
      for (const t of pool) if (!thread || (t.ready && !thread.ready) || (t.ready === thread.ready && t.jobs.size < thread.jobs.size)) thread = t;
      if (!thread) {
        const here = sealHere(instructions, readers);
        sealed.here++;
        return here;
      }
      const chosen = thread;
      const id = nextId++;
      return new Promise<SealedBrief>((resolve, reject) => {
        if (chosen.jobs.size === 0) chosen.worker.ref();
        chosen.jobs.set(id, { instructions, readers, resolve, reject });
        chosen.worker.postMessage({ id, instructions, readers: [...readers] });
      });
    },
    close,
  };
}

function asError(error: { name?: string; code?: string; message: string }): Error {
  return error.name === "CryptoError" && error.code ? new CryptoError(error.code as CryptoErrorCode, error.message) : new Error(error.message);
}

let shared: BriefSealer | undefined;

/**
 * The sealer the engine uses when its caller names none: this process's brief-sealing threads in Node (one set per
 * process, as threads are a process's resource), the calling thread elsewhere.
 */
export function defaultSealer(): BriefSealer {
  if (shared) return shared;
  const node = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process?.getBuiltinModule;
  const threads = node?.("node:worker_threads") as WorkerThreads | undefined;
  const fs = node?.("node:fs") as typeof import("node:fs") | undefined;
  const os = node?.("node:os") as Os | undefined;
  shared = (threads && fs && os && createThreadSealer({ threads, fs }, { cores: os.availableParallelism() })) || inlineSealer;
  return shared;
}
