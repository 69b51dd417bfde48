/** Body of the indexer's worker thread (see worker.ts): its own database connection, provider and polling loop. */
import { parentPort, workerData } from "node:worker_threads";
import { createDatabase } from "../db";
import { ChainRpcProvider } from "../chains/rpc";
import { createIndexer, type IndexerLogger } from "./sync";
import type { AnyProjection } from "./projection";
import { newHeadsUrl } from "./heads";
import type { IndexerWorkerData, IndexerWorkerMessage } from "./worker";

const port = parentPort;
if (!port) throw new Error("worker-entry runs only inside the indexer's worker thread");
const data = workerData as IndexerWorkerData;
const post = (message: IndexerWorkerMessage) => port.postMessage(message);

/** Log objects cross the thread boundary as plain data (errors lose their prototype there). */
const plain = (obj: object): object =>
  JSON.parse(
    JSON.stringify(obj, (_key, value: unknown) => (value instanceof Error ? { message: value.message, stack: value.stack } : value)),
  ) as object;
const logger: IndexerLogger = {
  debug: (obj, msg) => post({ type: "log", level: "debug", obj: plain(obj), msg }),
  info: (obj, msg) => post({ type: "log", level: "info", obj: plain(obj), msg }),
  warn: (obj, msg) => post({ type: "log", level: "warn", obj: plain(obj), msg }),
  error: (obj, msg) => post({ type: "log", level: "error", obj: plain(obj), msg }),
};

function loadProjections(): AnyProjection[] | undefined {
  if (!data.projections) return undefined;
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const factory = (require(data.projections.module) as Record<string, unknown>)[data.projections.export];
  if (typeof factory !== "function") {
    throw new Error(`${data.projections.module} has no function export ${data.projections.export} returning the projections`);
  }
  return (factory as () => AnyProjection[])();
}

const db = createDatabase({ databaseUrl: data.databaseUrl, sqlitePath: data.sqlitePath });
const provider = new ChainRpcProvider(data.chain);
const indexer = createIndexer({
  db,
  chain: data.chain,
  provider,
  pollIntervalMs: data.pollIntervalMs,
  newHeadsUrl: data.subscribe ? newHeadsUrl(data.chain) : undefined,
  blockRange: data.blockRange,
  // The API writes to the same SQLite file from the main thread: let its writes in between a range's transactions.
  yieldBetweenCommits: !data.databaseUrl,
  projections: loadProjections(),
  logger,
  onProgress: (progress) => post({ type: "progress", progress }),
  onError: (error) => post({ type: "error", error: { name: error.name, message: error.message, stack: error.stack } }),
});

port.on("message", (message: { type: string }) => {
  if (message.type !== "stop") return;
  void (async () => {
    await indexer.stop();
    provider.destroy();
    await db.destroy();
    process.exit(0);
  })();
});
indexer.start();
