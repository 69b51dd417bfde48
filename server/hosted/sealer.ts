/**
 * The owner's ECIES copies of a hosted agent's secrets, made off the API's event loop (issue 23 item 2): each copy is
 * two secp256k1 multiplications in JavaScript (about a millisecond or two), so a deploy's secrets sealed on the event
 * loop stalled every route. One worker thread per process, started on first use and never keeping the process alive,
 * seals them with the same code as everywhere else (core/crypto `sealToPublicKey`).
 */
import { Worker } from "node:worker_threads";

const BOOTSTRAP = `
const { parentPort, workerData } = require("node:worker_threads");
if (workerData.tsNode) require(workerData.tsNode).register({ transpileOnly: true });
const { sealToPublicKey } = require(workerData.crypto);
parentPort.on("message", ({ id, values, publicKey }) => {
  try {
    parentPort.postMessage({ id, sealed: values.map((v) => sealToPublicKey(Buffer.from(v, "utf8"), publicKey)) });
  } catch (error) {
    parentPort.postMessage({ id, error: String((error && error.message) || error) });
  }
});
`;

type Reply = { id: number; sealed: string[] } | { id: number; error: string };

let worker: Worker | undefined;
let nextId = 1;
const pending = new Map<number, { resolve(sealed: string[]): void; reject(error: Error): void }>();

function thread(): Worker {
  if (worker) return worker;
  // core/crypto.ts under ts-node (scripts/lib/core-sources.js), the package's build under plain Node.
  const crypto = require.resolve("@market/core/crypto");
  const started = new Worker(BOOTSTRAP, {
    eval: true,
    workerData: { crypto, tsNode: crypto.endsWith(".ts") ? require.resolve("ts-node") : null },
  });
  started.unref();
  started.on("message", (reply: Reply) => {
    const waiter = pending.get(reply.id);
    if (!waiter) return;
    pending.delete(reply.id);
    if ("error" in reply) waiter.reject(new Error(reply.error));
    else waiter.resolve(reply.sealed);
  });
  const fail = (error: Error) => {
    if (worker === started) worker = undefined;
    for (const [id, waiter] of pending) {
      pending.delete(id);
      waiter.reject(error);
    }
  };
  started.on("error", fail);
  started.on("exit", (code) => fail(new Error(`the sealing thread exited (${code})`)));
  worker = started;
  return started;
}

/** ECIES copies of `values` (UTF-8) to `publicKey`, hex as `sealToPublicKey` writes them, in order; sealed off the event loop. */
export function sealCopiesOffLoop(values: readonly string[], publicKey: string): Promise<string[]> {
  if (values.length === 0) return Promise.resolve([]);
  const id = nextId++;
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject });
    thread().postMessage({ id, values, publicKey });
  });
}
