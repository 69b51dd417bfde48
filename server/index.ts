import type { ServerConfig } from "./config";
import { createDatabase, migrateToLatest, type Db } from "./db";
import { createChains, type ChainRegistry } from "./chains";
import { createChainClock } from "./chains/clock";
import { createBlobStore, createDatabaseBlobStore } from "./storage/blob-store";
import { buildApp, webhookOutbound } from "./app";
import { createEventFeed } from "./events";
import { createWebhookSender, WEBHOOKS_LEASE } from "./webhooks";
import type { App } from "./http/types";
import { applyIndexerV8Flags, createIndexer, newHeadsUrl, superviseIndexerWorker, type IndexerLogger } from "./indexer";
import { defaultProjections, DEFAULT_PROJECTIONS_MODULE } from "./projections";
import { createOutbox, type Outbox } from "./outbox";
import { Wallet } from "ethers";
import { createHosting, type RunnerLogger } from "./hosted";
import { createLeases, HOSTED_RUNNERS_LEASE, indexerLease, senderLease, type Leases } from "./db/leases";
import { lockSqliteFile } from "./db/sqlite-lock";
import { createAgentTokens } from "./auth";
import { WEB_DIST, webBuilt } from "./web";

export { loadConfig, type ServerConfig, type ChainConfig } from "./config";
export { buildApp, type App, type AppDeps } from "./app";

export interface RunningServer {
  app: App;
  db: Db;
  chains: ChainRegistry;
  /** The leases this process competes for (each chain's indexer, the verifier key's sender, the hosted runners). */
  leases: Leases;
  /** Base URL the API listens on. */
  url: string;
  stop(): Promise<void>;
}

/**
 * Runs the whole service: migrates the database, and listens. The work one process at a time may do is leased
 * (docs/scaling.md): each chain's indexer (in a worker thread unless the database is in memory; a thread that ends is
 * started again), the verifier key's sender on each chain, the hosted-agent runners. On SQLite this, the only
 * process (a second one on the same file is refused), holds every lease; on PostgreSQL any number of processes share
 * the database and each lease is held by one of them at a time, taken over by another within `leaseRetryMs` when its
 * holder dies. Every process answers reads and writes; requests for the verifier key's transactions are recorded in
 * the shared outbox, which the sender signs. `stop()` stops the hosted runners, closes the API, gives up the leases
 * (indexers and senders stop), then closes the database.
 */
export async function startServer(config: ServerConfig): Promise<RunningServer> {
  const sqliteFile = !config.databaseUrl && config.sqlitePath !== ":memory:" ? config.sqlitePath : undefined;
  const unlockSqlite = sqliteFile === undefined ? undefined : lockSqliteFile(sqliteFile);
  try {
    return await run(config, unlockSqlite);
  } catch (error) {
    unlockSqlite?.();
    throw error;
  }
}

async function run(config: ServerConfig, unlockSqlite: (() => void) | undefined): Promise<RunningServer> {
  const db = createDatabase(config);
  await migrateToLatest(db);
  const chains = createChains(config.chains);
  // Deadlines and windows are compared with chain time (server/chains/clock.ts).
  const clock = createChainClock(chains.list(), { intervalMs: Math.max(config.pollIntervalMs, 250) });
  clock.start();
  // Chain time from the first request on: a sign-in message, a deadline or a rate window is never judged by the wall
  // clock alone while the chains are ahead of it (a process started later reads the same heads).
  await clock.refresh();
  const now = () => clock.now();
  // The marketplace verifier key sends assignments and verdicts, one outbox (nonce sequence) per chain.
  const outboxes = new Map<string, Outbox>();
  // Hosted agents and leases log through the API's logger, which exists once the app is built.
  let log: RunnerLogger = { info: () => undefined, warn: () => undefined };
  const logger = { info: (obj: object, msg: string) => log.info(obj, msg), warn: (obj: object, msg: string) => log.warn(obj, msg) };
  const leases = createLeases({ databaseUrl: config.databaseUrl, retryMs: config.leaseRetryMs, logger });
  const hosting = createHosting({
    db,
    chains,
    config: config.hosted,
    tokens: createAgentTokens({ db, now: Date.now }),
    now: Date.now,
    logger,
  });
  const app = await buildApp({
    db,
    chains,
    blobs: config.blobStore === "database" ? createDatabaseBlobStore(db) : createBlobStore(config.blobDir),
    config,
    outboxes,
    now,
    hosting,
    ...(config.verifierKey ? { verifierAddress: new Wallet(config.verifierKey).address } : {}),
    logger: config.logLevel === "silent" ? false : { level: config.logLevel },
    leases: () => leases.names(),
    // The web app, on the same port, once `npm run build` has built it (issue 28).
    ...(webBuilt() ? { web: { root: WEB_DIST } } : {}),
  });
  log = app.log;

  if (config.verifierKey) {
    for (const chain of chains.list()) {
      const signer = new Wallet(config.verifierKey, chain.provider);
      // Every process records requests and waits for them; the holder of the key's sender lease signs and sends.
      const outbox = createOutbox({ db, chain, signer, now, logger: app.log, leading: false });
      outbox.start();
      outboxes.set(chain.name, outbox);
      leases.hold(senderLease(chain.name, signer.address), { acquired: () => outbox.lead(), lost: () => outbox.follow() });
    }
  }

  // Webhooks (issue 27): every process records subscriptions; the holder of the webhooks lease sends.
  const outbound = webhookOutbound(config.hosted);
  const webhookFeed = createEventFeed({ db });
  if (outbound.box) {
    const sender = createWebhookSender({
      db,
      box: outbound.box,
      fetch: outbound.fetch,
      feed: webhookFeed,
      timeoutMs: config.events.webhookTimeoutMs,
      ...(config.events.retryDelaysMs ? { retryDelaysMs: config.events.retryDelaysMs } : {}),
      logger: app.log,
    });
    leases.hold(WEBHOOKS_LEASE, { acquired: () => sender.start(), lost: () => sender.stop() });
  }

  const indexerLog: IndexerLogger = app.log;
  const inWorker = config.indexerInWorker && (config.databaseUrl !== undefined || config.sqlitePath !== ":memory:");
  // V8's heap settings for catch-ups (server/indexer/worker.ts), before the first indexer thread starts.
  if (inWorker && config.indexerV8Tuning && chains.list().length > 0) applyIndexerV8Flags();
  for (const chain of chains.list()) {
    let running: { stop(): Promise<void> } | undefined;
    leases.hold(indexerLease(chain.name), {
      acquired() {
        if (inWorker) {
          // A thread that ends (a crash, out of memory) is started again with a back-off, resuming from the cursor.
          running = superviseIndexerWorker({
            databaseUrl: config.databaseUrl,
            sqlitePath: config.sqlitePath,
            chain: chain.config,
            pollIntervalMs: config.pollIntervalMs,
            subscribe: config.indexerSubscribe,
            projections: DEFAULT_PROJECTIONS_MODULE,
            logger: indexerLog,
            onError: (error) => app.log.error({ err: error, chain: chain.name }, "indexer error"),
          });
          return;
        }
        const indexer = createIndexer({
          db,
          chain: chain.config,
          provider: chain.provider,
          pollIntervalMs: config.pollIntervalMs,
          newHeadsUrl: config.indexerSubscribe ? newHeadsUrl(chain.config) : undefined,
          logger: indexerLog,
          projections: defaultProjections(config.reputation),
        });
        indexer.start();
        running = indexer;
      },
      async lost() {
        const stopping = running;
        running = undefined;
        await stopping?.stop();
      },
    });
  }

  try {
    await app.listen({ host: config.host, port: config.port });
  } catch (error) {
    // Not listening (the port is taken): nothing of this process keeps running.
    await leases.close();
    await app.close().catch(() => undefined);
    await Promise.all([...outboxes.values()].map((o) => o.stop()));
    clock.stop();
    for (const chain of chains.list()) chain.provider.destroy?.();
    await db.destroy();
    throw error;
  }
  const address = app.server.address();
  const port = typeof address === "object" && address ? address.port : config.port;
  // Running hosted agents come back: their runners call this API on loopback as their agents. One process runs them
  // all, following the starts and stops any process records.
  const loopbackHost = config.host === "0.0.0.0" || config.host === "::" ? "127.0.0.1" : config.host;
  const endpoints = {
    apiUrl: `http://${loopbackHost.includes(":") ? `[${loopbackHost}]` : loopbackHost}:${port}`,
    rpcUrls: Object.fromEntries(chains.list().map((c) => [c.name, c.config.rpcUrl])),
    escrows: Object.fromEntries(chains.list().map((c) => [c.name, c.config.escrow])),
  };
  let following: NodeJS.Timeout | undefined;
  let reconciling: Promise<void> | undefined;
  leases.hold(HOSTED_RUNNERS_LEASE, {
    async acquired() {
      await hosting.attach(endpoints);
      following = setInterval(() => {
        // One round at a time: starting many agents may take longer than a round.
        reconciling ??= hosting
          .reconcile()
          .catch((error: unknown) => app.log.warn({ err: error }, "hosted runners: following recorded states failed"))
          .finally(() => (reconciling = undefined));
      }, config.leaseRetryMs);
    },
    async lost() {
      clearInterval(following);
      following = undefined;
      await reconciling;
      await hosting.close();
    },
  });
  return {
    app,
    db,
    chains,
    leases,
    url: `http://${config.host}:${port}`,
    async stop() {
      await leases.release(HOSTED_RUNNERS_LEASE);
      await app.close();
      clock.stop();
      await leases.close();
      webhookFeed.close();
      await Promise.all([...outboxes.values()].map((o) => o.stop()));
      for (const chain of chains.list()) chain.provider.destroy?.();
      await db.destroy();
      unlockSqlite?.();
    },
  };
}
