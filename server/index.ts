import type { ServerConfig } from "./config";
import { createDatabase, migrateToLatest, type Db } from "./db";
import { createChains, type ChainRegistry } from "./chains";
import { createChainClock } from "./chains/clock";
import { createBlobStore } from "./storage/blob-store";
import { buildApp } from "./app";
import type { App } from "./http/types";
import { createIndexer, superviseIndexerWorker, type IndexerLogger } from "./indexer";
import { defaultProjections, DEFAULT_PROJECTIONS_MODULE } from "./projections";
import { createOutbox, type Outbox } from "./outbox";
import { Wallet } from "ethers";

export { loadConfig, type ServerConfig, type ChainConfig } from "./config";
export { buildApp, type App, type AppDeps } from "./app";

export interface RunningServer {
  app: App;
  db: Db;
  chains: ChainRegistry;
  /** Base URL the API listens on. */
  url: string;
  stop(): Promise<void>;
}

/**
 * Runs the whole service: migrates the database, starts one indexer per configured chain (in a worker thread unless
 * the database is in memory; a thread that ends is started again), and listens. `stop()` closes the API, then the
 * indexers, then the database.
 */
export async function startServer(config: ServerConfig): Promise<RunningServer> {
  const db = createDatabase(config);
  await migrateToLatest(db);
  const chains = createChains(config.chains);
  // Deadlines and windows are compared with chain time (server/chains/clock.ts).
  const clock = createChainClock(chains.list(), { intervalMs: Math.max(config.pollIntervalMs, 250) });
  clock.start();
  const now = () => clock.now();
  // The marketplace verifier key sends assignments and verdicts, one outbox (nonce sequence) per chain.
  const outboxes = new Map<string, Outbox>();
  const app = await buildApp({
    db,
    chains,
    blobs: createBlobStore(config.blobDir),
    config,
    outboxes,
    now,
    logger: config.logLevel === "silent" ? false : { level: config.logLevel },
  });
  if (config.verifierKey) {
    for (const chain of chains.list()) {
      const signer = new Wallet(config.verifierKey, chain.provider);
      const outbox = createOutbox({ db, chain, signer, now, logger: app.log });
      outbox.start();
      outboxes.set(chain.name, outbox);
    }
  }
  const log: IndexerLogger = app.log;
  const inWorker = config.indexerInWorker && (config.databaseUrl !== undefined || config.sqlitePath !== ":memory:");
  const indexers = chains.list().map((chain) => {
    if (inWorker) {
      // A thread that ends (a crash, out of memory) is started again with a back-off, resuming from the cursor.
      const worker = superviseIndexerWorker({
        databaseUrl: config.databaseUrl,
        sqlitePath: config.sqlitePath,
        chain: chain.config,
        pollIntervalMs: config.pollIntervalMs,
        projections: DEFAULT_PROJECTIONS_MODULE,
        logger: log,
        onError: (error) => app.log.error({ err: error, chain: chain.name }, "indexer error"),
      });
      return { stop: () => worker.stop() };
    }
    const indexer = createIndexer({
      db,
      chain: chain.config,
      provider: chain.provider,
      pollIntervalMs: config.pollIntervalMs,
      logger: log,
      projections: defaultProjections(),
    });
    indexer.start();
    return { stop: () => indexer.stop() };
  });

  await app.listen({ host: config.host, port: config.port });
  const address = app.server.address();
  const port = typeof address === "object" && address ? address.port : config.port;
  return {
    app,
    db,
    chains,
    url: `http://${config.host}:${port}`,
    async stop() {
      await app.close();
      clock.stop();
      await Promise.all([...outboxes.values()].map((o) => o.stop()));
      await Promise.all(indexers.map((i) => i.stop()));
      for (const chain of chains.list()) chain.provider.destroy?.();
      await db.destroy();
    },
  };
}
