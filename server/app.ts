import Fastify, { type FastifyInstance } from "fastify";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import { DEFAULT_ABUSE, type AbuseConfig, type ServerConfig } from "./config";
import type { Db } from "./db";
import type { ChainRegistry } from "./chains";
import type { BlobStore } from "./storage/blob-store";
import type { Outbox } from "./outbox";
import type { App } from "./http/types";
import { serverOptions, transport } from "./http/transport";
import { createAuth } from "./auth";
import { API_KEYS_PREFIX, apiKeyRoutes, SESSION_PREFIX, sessionRoutes } from "./auth/routes";
import { API_PREFIX } from "./http/prefix";
import { AGENTS_PREFIX, agentRoutes, createAgentRegistry } from "./agents";
import { ASSIGNED_TASKS_PREFIX, createFunding, createListings, createTaskQueries, assignedTaskRoutes, taskRoutes } from "./tasks";
import { createAutoVerification, createVerifierPool, verificationRoutes, type VerifierPool, type VerifierPoolOptions } from "./verification";
import {
  createAccepting,
  createBidding,
  createCustody,
  createDelivery,
  createOffers,
  createSettlementCalls,
  marketplaceRoutes,
  MARKETPLACE_PREFIX,
} from "./marketplace";
import { HEALTH_PREFIX, healthRoutes, SETTLEMENT_PREFIX, settlementRoutes } from "./health";
import { createUploads, STORAGE_PREFIX, storageRoutes } from "./storage";
import { a2aRoutes } from "./a2a";
import { AGENT_CARD_PATH, discoveryRoutes } from "./discovery";
import { feedbackRoutes } from "./feedback";
import { badgeAdminRoutes, REPUTATION_PREFIX, reputationRoutes } from "./reputation";
import { createQuoteStore, mcpRoutes, QUOTES_PREFIX, quoteRoutes } from "./mcp";
import { createIdentityLookup, createIdentityMinting } from "./identity";
import { bridgeHealthRoutes, createHosting, HOSTED_PREFIX, hostedRoutes, type Hosting } from "./hosted";
import { skillRoutes } from "./skills";
import { createServiceStore, serviceRoutes } from "./services";
import { ADMIN_PREFIX, adminRoutes, createAdminCheck } from "./admin";
import { createEventFeed, createTaskWatches, EVENTS_PREFIX, eventRoutes } from "./events";
import { createWebhookStore, WEBHOOKS_PREFIX, webhookRoutes, type SecretBox } from "./webhooks";
import { answerWithPage, webRoutes } from "./web";
import { createVault } from "./hosted/vault";
import { boundedFetch, privateUrlReason } from "./hosted/runner/bounds";
import { DEFAULT_HOSTED, type HostedConfig } from "./config";

export type { App } from "./http/types";

export interface AppDeps {
  db: Db;
  chains: ChainRegistry;
  blobs: BlobStore;
  config: Pick<ServerConfig, "publicUrl" | "rateLimit" | "offerWindowMs" | "custodyKey"> &
    Partial<Pick<ServerConfig, "trustProxy" | "identity" | "adminApiKey">> & {
      hosted?: HostedConfig;
      /** Defaults: DEFAULT_ABUSE (server/config.ts). */
      abuse?: Partial<AbuseConfig>;
      /**
       * The event log's readers (issue 27): streams and webhooks per account (default 10 each), how often the log heads
       * are polled (ms, default 50).
       */
      events?: { streamsPerAccount?: number; webhooksPerAccount?: number; feedPollMs?: number };
    };
  /** Hosted agents, built by the caller to attach their runners once the API listens; built here (never attached) when absent. */
  hosting?: Hosting;
  /** Address of the configured marketplace verifier key (GET /health/bridge compares it with each escrow's). */
  verifierAddress?: string;
  /** The marketplace verifier key's outbox per chain; without one a chain cannot assign or judge. */
  outboxes?: ReadonlyMap<string, Outbox>;
  /** Clock in milliseconds; tests move it. */
  now?: () => number;
  /** Pino options, or false for silence (tests). `stream` replaces stdout (tests read what is logged). */
  logger?: boolean | { level: string; stream?: { write(line: string): void } };
  /** How long an answer waits for the indexer to show a confirmed transaction (ms). */
  indexerWaitMs?: number;
  /**
   * The rule engine's threads (server/verification/pool.ts): their options (DEFAULT_VERIFIER_POOL when absent), or a
   * running pool the app uses and leaves open (several apps of one process share it: the test suites build hundreds,
   * and a thread's start-up costs each of them).
   */
  verifierPool?: VerifierPoolOptions | { shared: VerifierPool };
  /** The leases this process holds now, for GET /health (server/db/leases.ts); none when absent. */
  leases?: () => readonly string[];
  /** The web app's built files (issue 28: server/web, `web/dist`), served on the same port; the API alone when absent. */
  web?: { root: string };
}

export { DEFAULT_BODY_LIMIT } from "./http/transport";

/** Identity minting when the configuration names none (server/config.ts reads IDENTITY_*). */
const DEFAULT_IDENTITY: ServerConfig["identity"] = { chain: "0g", retryMs: 30_000, maxRetryMs: 3_600_000 };

/** Builds the API without listening (tests use `app.inject()`). */
export async function buildApp(deps: AppDeps): Promise<App> {
  const now = deps.now ?? Date.now;
  const app = Fastify(serverOptions({ logger: deps.logger, trustProxy: deps.config.trustProxy })).withTypeProvider<TypeBoxTypeProvider>();
  // The hosted runners of this process all call from this host: their own tokens skip the per-IP window (the hosting is
  // built below; until then no token is exempt).
  let ownRunnerToken: (token: string) => boolean = () => false;
  await app.register(transport, {
    publicUrl: deps.config.publicUrl,
    rateLimit: deps.config.rateLimit,
    now,
    exemptFromIpLimit: (token) => ownRunnerToken(token),
    // A browser's GET of one of the web app's own paths gets its page (issue 28); everything else the envelope.
    ...(deps.web ? { pageOf: (request, reply) => answerWithPage(request, reply, deps.web!.root) } : {}),
  });

  // The composition root: every service is built once here from the app's dependencies, and each route plugin is
  // registered with exactly the services it uses.
  const { db, chains, blobs } = deps;
  const outboxes = deps.outboxes ?? new Map<string, Outbox>();
  const indexerWaitMs = deps.indexerWaitMs;
  const signInChainId = chains.list().find((c) => c.config.postable)?.config.chainId;
  const auth = createAuth({ db, now, publicUrl: deps.config.publicUrl, signInChainId });
  const agents = createAgentRegistry({ db, now });
  const custody = createCustody(deps.config.custodyKey);
  const offers = createOffers({ db, agents, now, windowMs: deps.config.offerWindowMs, rewrappable: custody.available });
  const queries = createTaskQueries({ db, now });
  const services = createServiceStore({ db, now });
  const terms = { blobs, agents, custody, services };
  const funding = createFunding({ db, deps: terms });
  const listings = createListings({ db, deps: terms, now, onListed: (listing, deadline) => offers.open(listing, deadline) });
  const pool = verifierPoolOf(app, deps.verifierPool);
  const verification = createAutoVerification({ db, chains, outboxes, now, indexerWaitMs, pool });
  const abuse: AbuseConfig = { ...DEFAULT_ABUSE, ...deps.config.abuse };
  // Uploads with an owner, a quota and a rate per account; unreferenced blobs collected in the background.
  const uploads = createUploads({ db, blobs, now, limits: abuse.uploads, onSweepError: (err) => app.log.error({ err }, "blob collection failed") });
  uploads.start();
  app.addHook("onClose", () => uploads.stop());
  const market = { db, chains, agents, offers, custody, outboxes, now, indexerWaitMs, abuse };
  const identity = createIdentityLookup({ db, chains });
  // Hosted-agent deploys mint identity tokens through it (identityMinting.requestMint); retries run in the background.
  const identityMinting = createIdentityMinting({ db, chains, outboxes, now, logger: app.log, ...(deps.config.identity ?? DEFAULT_IDENTITY) });
  identityMinting.start();
  app.addHook("onClose", () => identityMinting.stop());

  // Each route plugin is registered under its prefix: API_PREFIX, or the longer path its routes share.
  await app.register(healthRoutes, {
    prefix: HEALTH_PREFIX,
    db,
    chains,
    now,
    leases: deps.leases ?? (() => []),
    // The hosting (built below) owns the sandbox; /health is asked only once the app listens.
    sandbox: () => hosting.sandbox.status(),
  });
  await app.register(settlementRoutes, { prefix: SETTLEMENT_PREFIX, db, chains, custodyPublicKey: custody.publicKey });
  await app.register(sessionRoutes, { prefix: SESSION_PREFIX, auth });
  await app.register(apiKeyRoutes, { prefix: API_KEYS_PREFIX, auth });
  await app.register(storageRoutes, { prefix: STORAGE_PREFIX, auth, blobs, uploads });
  await app.register(taskRoutes, { prefix: API_PREFIX, auth, chains, queries, funding, listings });
  await app.register(agentRoutes, { prefix: AGENTS_PREFIX, auth, agents });
  await app.register(marketplaceRoutes, {
    prefix: MARKETPLACE_PREFIX,
    auth,
    accepting: createAccepting(market),
    bidding: createBidding(market),
    delivery: createDelivery({ db, chains, now, verification }),
    settlement: createSettlementCalls({ db, chains, now }),
  });
  await app.register(verificationRoutes, { prefix: API_PREFIX, auth, db, chains, now, outboxes, indexerWaitMs, verification, pool });
  await app.register(feedbackRoutes, { prefix: API_PREFIX, auth, db, chains, now });
  await app.register(reputationRoutes, { prefix: REPUTATION_PREFIX, db, now });
  await app.register(assignedTaskRoutes, { prefix: ASSIGNED_TASKS_PREFIX, auth, queries });
  // One admin check for every admin route: one count of failed attempts per client IP.
  const requireAdmin = createAdminCheck(deps.config.adminApiKey, now);
  await app.register(adminRoutes, { prefix: ADMIN_PREFIX, db, now, requireAdmin });
  // Verified badges per tag or skill (issue 25 item 7), granted by the admin.
  await app.register(badgeAdminRoutes, { prefix: ADMIN_PREFIX, db, now, requireAdmin });
  const hosting =
    deps.hosting ?? createHosting({ db, chains, config: deps.config.hosted ?? DEFAULT_HOSTED, tokens: auth.agentTokens, now, logger: app.log });
  ownRunnerToken = (token) => hosting.runners.isOwnToken(token);
  // A hosted deploy asks for the agent's identity token (best effort: the mint is recorded and retried, never fails the deploy).
  hosting.onDeployed(async (agent) => {
    await identityMinting.requestMint({
      agentWallet: agent.address,
      agentPublicKey: agent.publicKey,
      ownerWallet: agent.ownerAddress,
      cardUrl: `${deps.config.publicUrl}${AGENT_CARD_PATH.replace("{address}", agent.address)}`,
    });
  });
  // The event log's replay and stream (issue 27): one poll of the log heads wakes every stream of this process.
  const feed = createEventFeed({ db, pollMs: deps.config.events?.feedPollMs ?? 50 });
  app.addHook("onClose", () => feed.close());
  await app.register(quoteRoutes, { prefix: QUOTES_PREFIX, auth, quotes: createQuoteStore({ db, now }) });
  await app.register(mcpRoutes, {
    auth,
    watchTask: createTaskWatches({ db, feed }),
    chains,
    inject: (options) => app.inject(options),
    custody: { db, store: hosting.store, agents: hosting.agents, tokens: auth.agentTokens, signing: hosting.signing, now },
  });
  await app.register(hostedRoutes, { prefix: HOSTED_PREFIX, auth, agents: hosting.agents, store: hosting.store });
  await app.register(skillRoutes, { prefix: API_PREFIX, auth, skills: hosting.skills });
  await app.register(serviceRoutes, {
    prefix: API_PREFIX,
    auth,
    services,
    requireOwnedAgent: (id, principal) => hosting.store.requireOwned(id, principal),
  });
  await app.register(bridgeHealthRoutes, {
    prefix: HEALTH_PREFIX,
    chains,
    now,
    sponsor: hosting.sponsor,
    ...(deps.verifierAddress ? { verifierAddress: deps.verifierAddress } : {}),
  });

  await app.register(eventRoutes, { prefix: EVENTS_PREFIX, auth, db, chains, feed, streamsPerAccount: deps.config.events?.streamsPerAccount ?? 10 });
  const webhookGuard = webhookOutbound(deps.config.hosted ?? DEFAULT_HOSTED);
  const webhooks = createWebhookStore({
    db,
    chains,
    now,
    ...(webhookGuard.box ? { box: webhookGuard.box } : {}),
    urlRefusal: webhookGuard.urlRefusal,
    perAccount: deps.config.events?.webhooksPerAccount ?? 10,
  });
  await app.register(webhookRoutes, { prefix: WEBHOOKS_PREFIX, auth, store: webhooks });
  // A2A streams and push configs are the same log and webhooks; the cards say what is on.
  await app.register(a2aRoutes, { queries, auth, agents, db, feed, ...(webhookGuard.box ? { push: webhooks } : {}) });
  const a2aCapabilities = { streaming: true, pushNotifications: webhookGuard.box !== undefined };
  await app.register(discoveryRoutes, { publicUrl: deps.config.publicUrl, agents, identity, services, a2aCapabilities });

  // The web app's files (issue 28), when `npm run build` has built it.
  if (deps.web) await app.register(webRoutes, { root: deps.web.root });
  await app.ready();
  return app;
}

/**
 * What webhooks send through, shared by the API (checking URLs) and the sender (server/index.ts): the master key's
 * vault for their secrets, and the hosted HTTP tools' guard. Private and loopback addresses are refused, in the URL
 * and at connect time, unless HOSTED_ALLOW_PRIVATE_NETWORKS allows them (then plain http is allowed too).
 */
export function webhookOutbound(hosted: Pick<HostedConfig, "masterKey" | "allowPrivateNetworks">): {
  box?: SecretBox;
  fetch: typeof fetch;
  urlRefusal: (url: URL) => string | undefined;
} {
  const allow = hosted.allowPrivateNetworks;
  return {
    ...(hosted.masterKey ? { box: createVault(hosted.masterKey) } : {}),
    fetch: boundedFetch({ maxBytes: 64 * 1024, allowPrivateNetworks: allow }),
    urlRefusal(url) {
      if (url.protocol !== "https:" && !(allow && url.protocol === "http:")) return "is not https";
      return allow ? undefined : privateUrlReason(url.toString());
    },
  };
}

/** The app's rule-engine pool: a shared one as given (left open), else its own, closed with the app. */
function verifierPoolOf(app: Pick<FastifyInstance, "addHook">, given: AppDeps["verifierPool"]): VerifierPool {
  if (given && "shared" in given) return given.shared;
  const own = createVerifierPool(given);
  app.addHook("onClose", () => own.close());
  return own;
}
