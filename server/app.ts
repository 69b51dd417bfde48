import Fastify, { type FastifyInstance } from "fastify";
import { STATUS_CODES, type IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import swagger from "@fastify/swagger";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import { isAddress as isChecksummedAddress } from "ethers";
import { DEFAULT_ABUSE, type AbuseConfig, type ServerConfig } from "./config";
import type { Db } from "./db";
import type { ChainRegistry } from "./chains";
import type { BlobStore } from "./storage/blob-store";
import type { Outbox } from "./outbox";
import type { App } from "./http/types";
import { MarketError, errorBody, sendError } from "./http/errors";
import { createRateLimiter } from "./http/rate-limit";
import { memoizedSchemaCompilers } from "./http/schema-compilers";
import { createAuth } from "./auth";
import { authRoutes } from "./auth/routes";
import { agentRoutes, createAgentRegistry } from "./agents";
import { createFunding, createListings, createTaskQueries, assignedTaskRoutes, taskRoutes } from "./tasks";
import { createAutoVerification, createVerifierPool, verificationRoutes, type VerifierPool, type VerifierPoolOptions } from "./verification";
import { createAccepting, createBidding, createCustody, createDelivery, createOffers, createSettlementCalls, marketplaceRoutes } from "./marketplace";
import { healthRoutes } from "./health";
import { createUploads, storageRoutes } from "./storage";
import { a2aRoutes } from "./a2a";
import { AGENT_CARD_PATH, discoveryRoutes } from "./discovery";
import { feedbackRoutes } from "./feedback";
import { badgeAdminRoutes, reputationRoutes } from "./reputation";
import { createQuoteStore, mcpRoutes } from "./mcp";
import { createIdentityLookup, createIdentityMinting } from "./identity";
import { bridgeHealthRoutes, createHosting, hostedRoutes, type Hosting } from "./hosted";
import { skillRoutes } from "./skills";
import { createServiceStore, serviceRoutes } from "./services";
import { adminRoutes, createAdminCheck } from "./admin";
import { createEventFeed, createTaskWatches, eventRoutes } from "./events";
import { createWebhookStore, webhookRoutes, type SecretBox } from "./webhooks";
import { createVault } from "./hosted/vault";
import { boundedFetch, privateUrlReason } from "./hosted/runner/bounds";
import { DEFAULT_HOSTED, type HostedConfig } from "./config";
import { ADDRESS_FORMAT, ErrorEnvelope } from "../core/api";
import type { ErrorCode } from "../core/errors";
import { hasLoneSurrogate } from "../core/text";

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
}

export const DEFAULT_BODY_LIMIT = 1024 * 1024;

/** Identity minting when the configuration names none (server/config.ts reads IDENTITY_*). */
const DEFAULT_IDENTITY: ServerConfig["identity"] = { chain: "0g", retryMs: 30_000, maxRetryMs: 3_600_000 };

/** Fastify's `trustProxy`; a hop count trusts the nearest `hops` proxies. */
function trustedProxies(setting: ServerConfig["trustProxy"] | undefined): boolean | string[] | ((address: string, hop: number) => boolean) {
  if (typeof setting !== "number") return setting ?? false;
  return (_address, hop) => hop < setting;
}

/** Builds the API without listening (tests use `app.inject()`). */
export async function buildApp(deps: AppDeps): Promise<App> {
  const now = deps.now ?? Date.now;
  const app = Fastify({
    logger:
      deps.logger === false
        ? false
        : {
            level: typeof deps.logger === "object" ? deps.logger.level : "info",
            // Credentials never reach the logs.
            redact: ["req.headers.authorization", 'req.headers["x-api-key"]', 'req.headers["x-admin-key"]', "req.headers.cookie"],
            ...(typeof deps.logger === "object" && deps.logger.stream ? { stream: deps.logger.stream } : {}),
          },
    clientErrorHandler: answerClientError,
    // Router refusals (a path parameter over 100 characters, bad percent-encoding) answer the envelope too.
    frameworkErrors: (error, request, reply) => {
      const badPath = error.code === "FST_ERR_MAX_PARAM_LENGTH" || error.code === "FST_ERR_BAD_URL";
      const message = error.code === "FST_ERR_MAX_PARAM_LENGTH" ? "is too long" : "is not a valid URL component";
      void sendError(
        request,
        reply,
        badPath ? new MarketError("VALIDATION_FAILED", `A path parameter ${message}.`, { details: [{ field: "params", message }] }) : error,
      );
    },
    // Behind a reverse proxy, the client IP (rate limits) comes from X-Forwarded-For of the trusted hops only.
    trustProxy: trustedProxies(deps.config.trustProxy),
    bodyLimit: DEFAULT_BODY_LIMIT,
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, allErrors: false, formats: { [ADDRESS_FORMAT]: isChecksummedAddress } } },
    // Answers are not re-validated: the serializer only needs to know the format exists.
    serializerOpts: { ajv: { formats: { [ADDRESS_FORMAT]: true } } },
    schemaController: { compilersFactory: memoizedSchemaCompilers },
    // Requests carry no trailing-slash variants or case games.
    routerOptions: { ignoreTrailingSlash: true },
  }).withTypeProvider<TypeBoxTypeProvider>();

  // JSON only: Fastify's default text/plain parser would hand routes a string instead of answering 415.
  app.removeContentTypeParser("text/plain");
  // Fastify's JSON parser, refusing U+0000 in any string (PostgreSQL text cannot hold it: a 500 on insert otherwise) and
  // a lone UTF-16 surrogate (`\ud800` alone: stored and hashed as U+FFFD, so two briefs would hash alike).
  const parseJson = app.getDefaultJsonParser("error", "error");
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (request, raw, done) => {
    const text = raw as string;
    void parseJson(request, text, (error: Error | null, body?: unknown) => {
      const suspect = !error && (text.includes("\\u0000") || /\\u[dD][89a-fA-F]/.test(text));
      const found = suspect ? fieldWithBadText(body) : undefined;
      if (found === undefined) return done(error, body);
      const [field, problem] = found;
      const refusal =
        problem === "nul"
          ? new MarketError("VALIDATION_FAILED", `${field} contains U+0000`, { details: [{ field, message: "contains U+0000" }] })
          : new MarketError("LONE_SURROGATE", `${field} holds a UTF-16 surrogate without its pair`, {
              details: [{ field, message: "holds a lone surrogate (not Unicode text)" }],
            });
      done(refusal, undefined);
    });
  });
  app.addSchema(ErrorEnvelope);
  await app.register(swagger, {
    // Shared schemas keep their $id as their name under components.schemas (`ErrorEnvelope`, not `def-0`).
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === "string" ? json.$id : `def-${i}`) },
    openapi: {
      openapi: "3.0.3",
      info: {
        title: "market API",
        version: "1.0.0",
        description:
          "Task marketplace API. Successful answers are `{ success: true, data }`; errors are " +
          "`{ success: false, error: { code, message, reason?, details? } }` with the stable codes of docs/errors.md. " +
          "Amounts are strings of raw units. Authenticate with `X-API-Key: sk_...` or `Authorization: Bearer <session token>`.",
      },
      servers: [{ url: deps.config.publicUrl }],
      components: {
        securitySchemes: {
          apiKey: { type: "apiKey", in: "header", name: "X-API-Key" },
          session: { type: "http", scheme: "bearer", description: "Session token from POST /api/v1/auth/verify." },
          adminKey: { type: "apiKey", in: "header", name: "X-Admin-Key", description: "The service admin's key (MARKET_ADMIN_API_KEY)." },
        },
      },
    },
  });

  app.addHook("onRequest", guardBodyEncoding);
  // The hosted runners of this process all call from this host: their own tokens skip the per-IP window (the hosting is
  // built below; until then no token is exempt).
  let ownRunnerToken: (token: string) => boolean = () => false;
  app.addHook("onRequest", createRateLimiter(deps.config.rateLimit, now, { exemptFromIpLimit: (token) => ownRunnerToken(token) }));
  app.setErrorHandler((error, request, reply) => sendError(request, reply, error));
  app.setNotFoundHandler((request, reply) =>
    sendError(request, reply, new MarketError("NOT_FOUND", `No route ${request.method} ${request.url.split("?")[0]}`)),
  );

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

  await app.register(healthRoutes, {
    db,
    chains,
    now,
    custodyPublicKey: custody.publicKey,
    leases: deps.leases ?? (() => []),
    // The hosting (built below) owns the sandbox; /health is asked only once the app listens.
    sandbox: () => hosting.sandbox.status(),
  });
  await app.register(authRoutes, { auth });
  await app.register(storageRoutes, { auth, blobs, uploads });
  await app.register(taskRoutes, { auth, chains, queries, funding, listings });
  await app.register(agentRoutes, { auth, agents });
  await app.register(marketplaceRoutes, {
    auth,
    accepting: createAccepting(market),
    bidding: createBidding(market),
    delivery: createDelivery({ db, chains, now, verification }),
    settlement: createSettlementCalls({ db, chains, now }),
  });
  await app.register(verificationRoutes, { auth, db, chains, now, outboxes, indexerWaitMs, verification, pool });
  await app.register(feedbackRoutes, { auth, db, chains, now });
  await app.register(reputationRoutes, { db, now });
  await app.register(assignedTaskRoutes, { auth, queries });
  // One admin check for every admin route: one count of failed attempts per client IP.
  const requireAdmin = createAdminCheck(deps.config.adminApiKey, now);
  await app.register(adminRoutes, { db, now, requireAdmin });
  // Verified badges per tag or skill (issue 25 item 7), granted by the admin.
  await app.register(badgeAdminRoutes, { db, now, requireAdmin });
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
  await app.register(mcpRoutes, {
    auth,
    watchTask: createTaskWatches({ db, feed }),
    quotes: createQuoteStore({ db, now }),
    chains,
    inject: (options) => app.inject(options),
    custody: { db, store: hosting.store, agents: hosting.agents, tokens: auth.agentTokens, signing: hosting.signing, now },
  });
  await app.register(hostedRoutes, { auth, agents: hosting.agents, store: hosting.store });
  await app.register(skillRoutes, { auth, skills: hosting.skills });
  await app.register(serviceRoutes, { auth, services, requireOwnedAgent: (id, principal) => hosting.store.requireOwned(id, principal) });
  await app.register(bridgeHealthRoutes, {
    chains,
    now,
    sponsor: hosting.sponsor,
    ...(deps.verifierAddress ? { verifierAddress: deps.verifierAddress } : {}),
  });

  await app.register(eventRoutes, { auth, db, chains, feed, streamsPerAccount: deps.config.events?.streamsPerAccount ?? 10 });
  const webhookGuard = webhookOutbound(deps.config.hosted ?? DEFAULT_HOSTED);
  const webhooks = createWebhookStore({
    db,
    chains,
    now,
    ...(webhookGuard.box ? { box: webhookGuard.box } : {}),
    urlRefusal: webhookGuard.urlRefusal,
    perAccount: deps.config.events?.webhooksPerAccount ?? 10,
  });
  await app.register(webhookRoutes, { auth, store: webhooks });
  // A2A streams and push configs are the same log and webhooks; the cards say what is on.
  await app.register(a2aRoutes, { queries, auth, agents, db, feed, ...(webhookGuard.box ? { push: webhooks } : {}) });
  const a2aCapabilities = { streaming: true, pushNotifications: webhookGuard.box !== undefined };
  await app.register(discoveryRoutes, { publicUrl: deps.config.publicUrl, agents, identity, services, a2aCapabilities });

  app.get("/openapi.json", { schema: { hide: true } }, async () => app.swagger());
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

/** Node's HTTP parser errors, raised before a request reaches Fastify, onto the table. */
const CLIENT_ERROR_CODES: Record<string, ErrorCode> = {
  // The connection ended before Content-Length bytes arrived.
  HPE_INVALID_EOF_STATE: "BODY_LENGTH_MISMATCH",
  HPE_INVALID_CONTENT_LENGTH: "BODY_LENGTH_MISMATCH",
  HPE_UNEXPECTED_CONTENT_LENGTH: "BODY_LENGTH_MISMATCH",
  HPE_HEADER_OVERFLOW: "BODY_TOO_LARGE",
  ERR_HTTP_REQUEST_TIMEOUT: "REQUEST_ABORTED",
};

/**
 * Answers a request Node could not parse with the same error envelope as every route (Fastify's default answers
 * `{ error, message, statusCode }` without a code). Other parse errors on a kept-alive connection come from bytes
 * beyond the previous request's Content-Length, hence BODY_LENGTH_MISMATCH as the fallback.
 */
function answerClientError(error: Error & { code?: string }, socket: Duplex) {
  if (error.code === "ECONNRESET" || socket.destroyed) return;
  if (socket.writable) {
    const coded = new MarketError(CLIENT_ERROR_CODES[error.code ?? ""] ?? "BODY_LENGTH_MISMATCH");
    const body = JSON.stringify(errorBody(coded));
    socket.write(
      `HTTP/1.1 ${coded.status} ${STATUS_CODES[coded.status]}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `Content-Type: application/json; charset=utf-8\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}

/**
 * The first field of a parsed body (`body.tasks.0.publicBrief`) whose name or text holds U+0000 or a lone surrogate,
 * and which; walked without recursion.
 */
function fieldWithBadText(body: unknown): [string, "nul" | "surrogate"] | undefined {
  const problem = (text: string) => (text.includes("\0") ? "nul" : hasLoneSurrogate(text) ? "surrogate" : undefined);
  const pending: Array<[unknown, string]> = [[body, "body"]];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [value, field] = next;
    if (typeof value === "string") {
      const found = problem(value);
      if (found) return [field, found];
    } else if (value !== null && typeof value === "object") {
      for (const [key, child] of Object.entries(value)) {
        const found = problem(key);
        if (found) return [field, found];
        pending.push([child, `${field}.${key}`]);
      }
    }
  }
  return undefined;
}

/** Refuses bodies the JSON parser would misread: a charset other than UTF-8, or a compressed body. */
async function guardBodyEncoding(request: { headers: IncomingMessage["headers"] }) {
  const encoding = request.headers["content-encoding"];
  if (encoding !== undefined && encoding.trim().toLowerCase() !== "identity") {
    throw new MarketError("UNSUPPORTED_ENCODING", `Content-Encoding ${encoding} is not accepted; send the body uncompressed.`);
  }
  const type = request.headers["content-type"];
  if (type) {
    const charset = /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(type)?.[1];
    if (charset && !/^utf-?8$/i.test(charset)) {
      throw new MarketError("UNSUPPORTED_CHARSET", `charset ${charset} is not accepted; send UTF-8.`);
    }
  }
}

/** The app's rule-engine pool: a shared one as given (left open), else its own, closed with the app. */
function verifierPoolOf(app: Pick<FastifyInstance, "addHook">, given: AppDeps["verifierPool"]): VerifierPool {
  if (given && "shared" in given) return given.shared;
  const own = createVerifierPool(given);
  app.addHook("onClose", () => own.close());
  return own;
}
