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
import { createHosting, type RunnerLogger } from "./hosted";
import { createAgentTokens } from "./auth";

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
  // Hosted agents log through the API's logger, which exists once the app is built.
  let log: RunnerLogger = { info: () => undefined, warn: () => undefined };
  const hosting = createHosting({
    db,
    chains,
    config: config.hosted,
    tokens: createAgentTokens({ db, now: Date.now }),
    now: Date.now,
    logger: { info: (obj, msg) => log.info(obj, msg), warn: (obj, msg) => log.warn(obj, msg) },
  });
  const app = await buildApp({
    db,
    chains,
    blobs: createBlobStore(config.blobDir),
    config,
    outboxes,
    now,
    hosting,
    ...(config.verifierKey ? { verifierAddress: new Wallet(config.verifierKey).address } : {}),
    logger: config.logLevel === "silent" ? false : { level: config.logLevel },
  });
  log = app.log;
  if (config.verifierKey) {
    for (const chain of chains.list()) {
      const signer = new Wallet(config.verifierKey, chain.provider);
      const outbox = createOutbox({ db, chain, signer, now, logger: app.log });
      outbox.start();
      outboxes.set(chain.name, outbox);
    }
  }
  const indexerLog: IndexerLogger = app.log;
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
        logger: indexerLog,
        onError: (error) => app.log.error({ err: error, chain: chain.name }, "indexer error"),
      });
      return { stop: () => worker.stop() };
    }
    const indexer = createIndexer({
      db,
      chain: chain.config,
      provider: chain.provider,
      pollIntervalMs: config.pollIntervalMs,
      logger: indexerLog,
      projections: defaultProjections(config.reputation),
    });
    indexer.start();
    return { stop: () => indexer.stop() };
  });

  await app.listen({ host: config.host, port: config.port });
  const address = app.server.address();
  const port = typeof address === "object" && address ? address.port : config.port;
  // Running hosted agents come back: their runners call this API on loopback as their agents.
  const loopbackHost = config.host === "0.0.0.0" || config.host === "::" ? "127.0.0.1" : config.host;
  await hosting.attach({
    apiUrl: `http://${loopbackHost.includes(":") ? `[${loopbackHost}]` : loopbackHost}:${port}`,
    rpcUrls: Object.fromEntries(chains.list().map((c) => [c.name, c.config.rpcUrl])),
    escrows: Object.fromEntries(chains.list().map((c) => [c.name, c.config.escrow])),
  });
  return {
    app,
    db,
    chains,
    url: `http://${config.host}:${port}`,
    async stop() {
      await hosting.close();
      await app.close();
      clock.stop();
      await Promise.all([...outboxes.values()].map((o) => o.stop()));
      await Promise.all(indexers.map((i) => i.stop()));
      for (const chain of chains.list()) chain.provider.destroy?.();
      await db.destroy();
    },
  };
}
