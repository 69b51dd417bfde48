/**
 * A whole API over the in-process Hardhat chain, for route tests with `app.inject()`: SQLite in memory, the real
 * escrow deployed by the deploy code, an in-process indexer synced on demand, and a clock that follows chain time.
 *
 * Tests reuse expensive state: every server starts from a snapshot of the chain (Hardhat's `loadFixture`) and a copy
 * of a database image (migrated once per process); `serverFixture` also snapshots what a suite's `seed` did once
 * (keys, agents, tasks), so each test starts from it without doing it again.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { sql } from "kysely";
import { Client } from "pg";
import hre from "hardhat";
import { loadFixture, time } from "@nomicfoundation/hardhat-network-helpers";
import type { HardhatEthersSigner } from "@nomicfoundation/hardhat-ethers/signers";
import type { LightMyRequestResponse } from "fastify";
import { deployEscrowFixture } from "../fixtures/escrow";
import { registriesFixture } from "../fixtures/registries";
import { buildApp, type App, type AppDeps } from "../../server/app";
import type { BuiltTask, ListingOutcome, NonceAnswer, Session, CreatedApiKey, Uploaded, UnsignedTx } from "@market/core/api";
import { createDatabase, migrateToLatest, type Db } from "../../server/db";
import { createChains } from "../../server/chains";
import { createBlobStore, type BlobStore } from "../../server/storage/blob-store";
import { createIndexer } from "../../server/indexer";
import { defaultProjections } from "../../server/projections";
import { createOutbox } from "../../server/outbox";
import { DEFAULT_HOSTED, DEFAULT_SANDBOX, type AbuseConfig, type ChainConfig, type HostedConfig, type ServerConfig } from "../../server/config";
import { createHosting, type Hosting } from "../../server/hosted";
import { createAgentTokens } from "../../server/auth";
import { encryptBrief, publicKeyFromPrivateKey, publicTaskHash, wrapBriefKey } from "@market/core/crypto";
import { hardhatAccountKeys } from "../../scripts/lib/local-chain";
import { DEFAULT_CREDIT_RULE, type CreditRule } from "@market/core/reputation";
import { createVerifierPool, type VerifierPool } from "../../server/verification";
import { WEB_DIST } from "../../server/web";

export const PUBLIC_URL = "http://127.0.0.1:3000";
const KEYS = hardhatAccountKeys();

/** The private key of one of the Hardhat accounts (tests need it to register public keys and decrypt). */
export function privateKeyOf(signer: HardhatEthersSigner): string {
  const index = KEYS.findIndex((k) => new hre.ethers.Wallet(k).address === signer.address);
  if (index < 0) throw new Error(`no known key for ${signer.address}`);
  return KEYS[index]!;
}

export interface Answer<T = unknown> {
  status: number;
  body: { success: boolean; data: T; error: { code: string; message: string; details?: Array<Record<string, unknown>> } };
  headers: LightMyRequestResponse["headers"];
}

export interface TestServerOptions {
  rateLimit?: { perIp: number; perKey: number; windowMs: number };
  /** Proxies whose X-Forwarded-For names the client; none by default. */
  trustProxy?: ServerConfig["trustProxy"];
  /** Changes to the `arc` chain's configuration (e.g. another escrow address). */
  arc?: Partial<ChainConfig>;
  /** Further chains, built from `arc`'s configuration with these changes. */
  extraChains?: Array<Partial<ChainConfig> & Pick<ChainConfig, "name">>;
  /** Pino options (e.g. a `stream` to read the log); silent by default. */
  logger?: AppDeps["logger"];
  /** Exclusive offer window (ms); 0 (no offers) unless a test is about offers. */
  offerWindowMs?: number;
  custodyKey?: string;
  /** Blob storage in place of a directory store (e.g. one that fails). */
  blobs?: BlobStore;
  /** Leave out the verifier key's outbox (the service cannot assign or judge). */
  withoutVerifierKey?: boolean;
  /**
   * Deploy the identity NFT and the reputation registry beside the escrow and wire them (test/fixtures/registries.ts):
   * the escrow writes reputation at settlement, the verifier key mints identities, and the indexer reads both. With
   * `arc: { name: "0g" }` the server's one chain is `0g`, postable, as a deployment that posts on `0g` has it.
   */
  registries?: boolean;
  /** Base URL written into cards (default PUBLIC_URL): a test that listens on a port of its own names it here. */
  publicUrl?: string;
  /** Hosted-agent settings over the test defaults (a master key, private networks allowed, fast browsing). */
  hosted?: Partial<HostedConfig>;
  /** Abuse limits in place of DEFAULT_ABUSE (server/config.ts). */
  abuse?: Partial<AbuseConfig>;
  /** Which payouts credit reputation, in place of DEFAULT_CREDIT_RULE (core/reputation.ts). */
  credit?: Partial<CreditRule>;
  /** The service admin's key (`X-Admin-Key`); admin routes are off without one. */
  adminApiKey?: string;
  /** Serve the built web app (web/dist, issue 28) on the same port, as `npm start` does. */
  web?: boolean;
}

/** A fixed test master key: hosted agents are on in every test server. */
export const TEST_MASTER_KEY = "11".repeat(32);

/**
 * A database's whole state, to start other databases from: SQLite's file bytes, or, when TEST_DATABASE_URL names a
 * PostgreSQL server, a database on it that new ones are created from (`CREATE DATABASE ... TEMPLATE`).
 */
export type DatabaseImage = { sqlite: Buffer } | { postgresTemplate: string };

interface TestDatabase {
  db: Db;
  /** The database's connection string on PostgreSQL (for another process or thread to open it); none on SQLite. */
  url?: string;
  /** Closes the database and removes it. */
  drop(): Promise<void>;
  /** Closes the database and keeps what it holds as an image. */
  keep(): Promise<DatabaseImage>;
}

const postgresUrl = () => process.env.TEST_DATABASE_URL;

async function postgresAdmin(statement: string): Promise<void> {
  const admin = new Client({ connectionString: postgresUrl() });
  await admin.connect();
  try {
    await admin.query(statement);
  } finally {
    await admin.end();
  }
}

function postgresDatabaseUrl(name: string): string {
  const target = new URL(postgresUrl()!);
  target.pathname = `/${name}`;
  return target.toString();
}

function postgresDatabase(name: string): Db {
  return createDatabase({ databaseUrl: postgresDatabaseUrl(name) });
}

/** A SQLite database's image (`VACUUM INTO` a file, read back); the database stays open. */
async function sqliteImage(db: Db): Promise<DatabaseImage> {
  const dir = mkdtempSync(path.join(tmpdir(), "market-db-"));
  try {
    const file = path.join(dir, "image.sqlite");
    await sql`vacuum into ${sql.lit(file)}`.execute(db);
    return { sqlite: readFileSync(file) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A database that starts as a copy of `image`. */
async function openDatabase(image: DatabaseImage): Promise<TestDatabase> {
  if ("sqlite" in image) {
    const db = createDatabase({ sqliteImage: image.sqlite });
    return {
      db,
      drop: () => db.destroy(),
      async keep() {
        const kept = await sqliteImage(db);
        await db.destroy();
        return kept;
      },
    };
  }
  const name = `market_test_${Date.now()}_${Math.floor(Math.random() * 1e9)}`;
  await postgresAdmin(`CREATE DATABASE ${name} TEMPLATE ${image.postgresTemplate}`);
  const db = postgresDatabase(name);
  return {
    db,
    url: postgresDatabaseUrl(name),
    async drop() {
      await db.destroy();
      await postgresAdmin(`DROP DATABASE ${name}`);
    },
    // Kept databases are templates for the rest of the run; the cluster of `npm run test:postgres` is thrown away.
    async keep() {
      await db.destroy();
      return { postgresTemplate: name };
    },
  };
}

let migrated: Promise<DatabaseImage> | undefined;

/** The image of an empty database with every migration applied, built once per process. */
function migratedImage(): Promise<DatabaseImage> {
  migrated ??= (async () => {
    const name = `market_migrated_${process.pid}`;
    if (postgresUrl()) await postgresAdmin(`CREATE DATABASE ${name}`);
    const db = postgresUrl() ? postgresDatabase(name) : createDatabase({ sqlitePath: ":memory:" });
    try {
      await migrateToLatest(db);
      return postgresUrl() ? { postgresTemplate: name } : await sqliteImage(db);
    } finally {
      await db.destroy();
    }
  })();
  return migrated;
}

/**
 * A fresh migrated database: SQLite in memory, or, when TEST_DATABASE_URL names a PostgreSQL server, a new database on
 * it (dropped again by `drop`), so the same tests prove the schema and queries portable.
 */
export async function testDatabase(): Promise<{ db: Db; url?: string; drop(): Promise<void> }> {
  return openDatabase(await migratedImage());
}

type EscrowDeployment = Awaited<ReturnType<typeof deployEscrowFixture>>;

/** The registries of a deployment that has them, as the server's chain configuration names them. */
function registriesOf(base: EscrowDeployment): Pick<ChainConfig, "identity" | "reputation"> {
  const { identity, reputation } = base.deployment;
  return {
    ...(identity ? { identity: { address: identity.proxy, block: identity.block } } : {}),
    ...(reputation ? { reputation: { address: reputation.proxy, block: reputation.block } } : {}),
  };
}

/** The chain a server starts on: the deployed escrow, with the registries beside it when asked for. */
async function deployedFixture(options: TestServerOptions): Promise<EscrowDeployment> {
  return options.registries ? loadFixture(registriesFixture) : loadFixture(deployEscrowFixture);
}

/** A test server on the deployed escrow (the chain as `loadFixture` left it), its database a copy of a migrated one. */
/**
 * One rule-engine pool for every test server of the process: a pool thread's start-up (ts-node loading the rule
 * engine) would otherwise be paid by each test that verifies. Its threads are unref'd and end with the process.
 */
let verifierPool: VerifierPool | undefined;
function sharedVerifierPool(): VerifierPool {
  return (verifierPool ??= createVerifierPool());
}

export async function startTestServer(options: TestServerOptions = {}) {
  return startServer(await deployedFixture(options), { database: await migratedImage() }, options);
}

const keptBlobDirs: string[] = [];
process.on("exit", () => {
  for (const dir of keptBlobDirs) rmSync(dir, { recursive: true, force: true });
});

/**
 * For suites whose tests all begin alike (keys, agents, tasks): `seed` runs once on a fresh server, and each test
 * starts a server from the chain snapshot and the database and blob images taken after it, with what the seed
 * answered. Made once per suite, at module level (loadFixture knows a fixture by its function):
 *   const seededServer = serverFixture(async (s) => ({ posterKey: await s.apiKeyFor(s.poster) }));
 *   beforeEach(async () => ({ server: s, seeded: { posterKey } } = await seededServer()));
 * The seed ends synced, with nothing in flight.
 */
export function serverFixture<Seed>(
  seed: (s: TestServer) => Promise<Seed>,
  options: TestServerOptions = {},
): () => Promise<{ server: TestServer; seeded: Seed }> {
  async function seededServerFixture() {
    const deployment = await deployedFixture(options);
    const s = await startServer(deployment, { database: await migratedImage() }, options);
    let images: Required<ServerImages> | undefined;
    try {
      const seeded = await seed(s);
      await s.sync();
      images = await s.keep();
      keptBlobDirs.push(images.blobs);
      return { deployment, images, seeded };
    } finally {
      if (!images) await s.close();
    }
  }
  return async () => {
    const { deployment, images, seeded } = await loadFixture(seededServerFixture);
    return { server: await startServer(deployment, images, options), seeded };
  };
}

/** What a server starts from: a database image and, optionally, a directory of stored blobs to copy. */
interface ServerImages {
  database: DatabaseImage;
  blobs?: string;
}

async function startServer(base: EscrowDeployment, images: ServerImages, options: TestServerOptions) {
  const { db, drop, keep: keepDatabase } = await openDatabase(images.database);
  const chainConfig: ChainConfig = {
    name: "arc",
    chainId: Number((await hre.ethers.provider.getNetwork()).chainId),
    rpcUrl: "in-process",
    escrow: base.escrowAddress,
    token: base.token,
    startBlock: base.deployment.block,
    confirmations: 0,
    postable: true,
    ...registriesOf(base),
    ...options.arc,
  };
  const extra = (options.extraChains ?? []).map((c): ChainConfig => ({ ...chainConfig, postable: false, ...c }));
  const chains = createChains([chainConfig, ...extra], { provider: () => hre.ethers.provider });
  const blobDir = mkdtempSync(path.join(tmpdir(), "market-blobs-"));
  if (images.blobs) cpSync(images.blobs, blobDir, { recursive: true });
  // Wall time until the first sync, then chain time (tests that time-travel sync first).
  let chainTimeMs = 0;
  let skewMs = 0;
  const now = () => Math.max(Date.now(), chainTimeMs) + skewMs;
  const verifierWallet = new hre.ethers.Wallet(privateKeyOf(base.verifier), hre.ethers.provider);
  const outbox = createOutbox({ db, chain: chains.require(chainConfig.name), signer: verifierWallet, now, pollMs: 20 });
  const hostedConfig: HostedConfig = {
    ...DEFAULT_HOSTED,
    masterKey: TEST_MASTER_KEY,
    allowPrivateNetworks: true,
    browseIntervalMs: 100,
    // Sandboxes in the weighted cgroup, not the default idle one: on a busy shared machine an idle-group run may not
    // start within its timeout (test/sandbox/priority.test.ts tests the idle group; bench/sandbox.ts measures it).
    sandbox: { ...DEFAULT_SANDBOX, cpuIdle: false },
    ...options.hosted,
  };
  // Runners log through the app's logger, which exists once the app is built.
  const logTo: { app?: App["log"] } = {};
  const agentTokens = createAgentTokens({ db, now });
  const hosting: Hosting = createHosting({
    db,
    chains,
    config: hostedConfig,
    tokens: agentTokens,
    now,
    logger: { info: (obj, msg) => logTo.app?.info(obj, msg), warn: (obj, msg) => logTo.app?.warn(obj, msg) },
  });
  const app: App = await buildApp({
    db,
    chains,
    blobs: options.blobs ?? createBlobStore(blobDir),
    config: {
      publicUrl: options.publicUrl ?? PUBLIC_URL,
      rateLimit: options.rateLimit ?? { perIp: 1e9, perKey: 1e9, windowMs: 60_000 },
      offerWindowMs: options.offerWindowMs ?? 0,
      custodyKey: options.custodyKey,
      trustProxy: options.trustProxy,
      abuse: options.abuse,
      // Webhooks seal their secrets with its master key and follow its private-network switch.
      hosted: hostedConfig,
      ...(options.adminApiKey ? { adminApiKey: options.adminApiKey } : {}),
    },
    outboxes: options.withoutVerifierKey ? new Map() : new Map([[chainConfig.name, outbox]]),
    now,
    logger: options.logger ?? false,
    ...(options.web ? { web: { root: WEB_DIST } } : {}),
    indexerWaitMs: 5_000,
    verifierPool: { shared: sharedVerifierPool() },
    hosting,
    verifierAddress: base.verifier.address,
  });
  logTo.app = app.log;
  const indexer = createIndexer({
    db,
    chain: chainConfig,
    provider: hre.ethers.provider,
    pollIntervalMs: 20,
    projections: defaultProjections({ ...DEFAULT_CREDIT_RULE, ...options.credit }),
  });
  indexer.start();

  /** Waits until the indexer has everything mined so far, and moves the clock to chain time. */
  async function sync() {
    const head = await hre.ethers.provider.getBlockNumber();
    for (let i = 0; ; i++) {
      const cursor = await db.selectFrom("indexer_cursors").select("block_number").where("chain", "=", chainConfig.name).executeTakeFirst();
      if (cursor && Number(cursor.block_number) >= head) break;
      if (i > 1000) throw new Error("the indexer did not catch up");
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    chainTimeMs = (await time.latest()) * 1000;
  }

  async function call<T = unknown>(
    method: "GET" | "POST" | "DELETE" | "PATCH",
    url: string,
    options: { body?: unknown; key?: string; headers?: Record<string, string> } = {},
  ): Promise<Answer<T>> {
    const response = await app.inject({
      method,
      url,
      headers: { ...(options.key ? { "x-api-key": options.key } : {}), ...options.headers },
      ...(options.body === undefined ? {} : { payload: options.body as object }),
    });
    return { status: response.statusCode, body: response.json(), headers: response.headers };
  }

  /** Signs in with the wallet (EIP-4361 through the API) and creates an API key: the path a user takes. */
  async function apiKeyFor(signer: HardhatEthersSigner, name = "test"): Promise<string> {
    const nonce = await call<NonceAnswer>("POST", "/api/v1/auth/nonce", { body: { address: signer.address } });
    const signature = await signer.signMessage(nonce.body.data.message);
    const session = await call<Session>("POST", "/api/v1/auth/verify", { body: { message: nonce.body.data.message, signature } });
    const key = await call<CreatedApiKey>("POST", "/api/v1/api-keys", {
      body: { name },
      headers: { authorization: `Bearer ${session.body.data.token}` },
    });
    if (key.status !== 200) throw new Error(`creating a key failed: ${JSON.stringify(key.body)}`);
    return key.body.data.key;
  }

  /** Registers the signer as an agent on arc with the given capabilities; returns its API key. */
  async function registerAgent(signer: HardhatEthersSigner, capabilities: string[] = [], extra: Record<string, unknown> = {}) {
    const key = await apiKeyFor(signer, "agent");
    const registered = await call("POST", "/api/v1/a2a/register", {
      key,
      body: { publicKey: publicKeyFromPrivateKey(privateKeyOf(signer)), capabilities, supportedChains: ["arc"], ...extra },
    });
    if (registered.status !== 200) throw new Error(`registering failed: ${JSON.stringify(registered.body)}`);
    return key;
  }

  /**
   * Deploys a hosted agent of `owner` through the API with `key` (stopped; its model a loopback address nothing
   * answers unless `body` names one), `body` overriding the deploy's fields; returns the agent.
   */
  async function deployHostedAgent(owner: HardhatEthersSigner, key: string, body: Record<string, unknown> = {}) {
    const deployed = await call<{ agent: { id: number; address: string } }>("POST", "/api/v1/agents", {
      key,
      body: {
        displayName: "Test agent",
        instructions: "Answer briefly.",
        model: { baseUrl: "http://127.0.0.1:9/v1", name: "m" },
        ownerPublicKey: publicKeyFromPrivateKey(privateKeyOf(owner)),
        start: false,
        ...body,
      },
    });
    if (deployed.status !== 200) throw new Error(`deploying failed: ${JSON.stringify(deployed.body)}`);
    return deployed.body.data.agent;
  }

  /** Sends the transactions the API built, from the signer, and returns the last receipt's hash. */
  async function sendAll(signer: HardhatEthersSigner, transactions: ReadonlyArray<Pick<UnsignedTx, "to" | "data">>): Promise<string> {
    let hash = "";
    for (const tx of transactions) {
      const sent = await signer.sendTransaction({ to: tx.to, data: tx.data });
      await sent.wait();
      hash = sent.hash;
    }
    return hash;
  }

  /** Task fields for a public brief. */
  function publicTask(brief: string, extra: Record<string, unknown> = {}) {
    return {
      taskHash: publicTaskHash(brief),
      privacy: "public",
      publicBrief: brief,
      verificationMode: "auto",
      verificationCriteria: { min_length: 10 },
      ...extra,
    };
  }

  /** Task fields for a private brief wrapped to the given agents, its ciphertext uploaded. */
  async function privateTask(brief: string, agents: HardhatEthersSigner[], key: string, extra: Record<string, unknown> = {}) {
    const encrypted = encryptBrief(brief);
    const upload = await call<Uploaded>("POST", "/api/v1/storage/upload", {
      key,
      body: { data: Buffer.from(encrypted.ciphertext).toString("base64") },
    });
    const wrappedKeys = Object.fromEntries(agents.map((a) => [a.address, wrapBriefKey(encrypted.key, publicKeyFromPrivateKey(privateKeyOf(a)))]));
    return {
      fields: {
        taskHash: upload.body.data.rootHash,
        privacy: "private",
        rootHash: upload.body.data.rootHash,
        wrappedKeys,
        verificationMode: "auto",
        verificationCriteria: { min_length: 10 },
        ...extra,
      },
      aesKey: encrypted.key,
    };
  }

  /** Builds, funds and lists a task through the API; returns the task hash and the funding transaction. */
  async function post(poster: HardhatEthersSigner, key: string, fields: Record<string, unknown>, amount = 5_000_000n, duration = 86_400) {
    const built = await call<BuiltTask>("POST", "/api/v1/tasks", {
      key,
      body: { ...fields, amount: amount.toString(), duration },
    });
    if (built.status !== 200) throw new Error(`building failed: ${JSON.stringify(built.body)}`);
    const txHash = await sendAll(poster, built.body.data.transactions);
    const listed = await call<ListingOutcome>("POST", "/api/v1/a2a/tasks/index", { key, body: { ...fields, txHash } });
    if (listed.status !== 200) throw new Error(`listing failed: ${JSON.stringify(listed.body)}`);
    await sync();
    return { taskHash: built.body.data.taskHash, txHash };
  }

  /** Moves the API's clock forward (not the chain's): expiries of nonces, sessions and rate windows. */
  function advanceClock(ms: number) {
    skewMs += ms;
  }

  async function stop() {
    await hosting.close();
    await indexer.stop();
    await outbox.stop();
    await app.close();
  }

  async function close() {
    await stop();
    await drop();
    rmSync(blobDir, { recursive: true, force: true });
  }

  /** Stops the server and keeps its database and stored blobs as images to start other servers from. */
  async function keep(): Promise<Required<ServerImages>> {
    await stop();
    return { database: await keepDatabase(), blobs: blobDir };
  }

  return {
    ...base,
    app,
    db,
    indexer,
    outbox,
    hosting,
    hostedConfig,
    chainConfig,
    /** A running hosted agent's own token, as its runner is issued one (no runner need run). */
    agentToken: (agentId: number) => agentTokens.issue(agentId),
    sync,
    call,
    advanceClock,
    apiKeyFor,
    registerAgent,
    deployHostedAgent,
    sendAll,
    publicTask,
    privateTask,
    post,
    close,
    keep,
  };
}

export type TestServer = Awaited<ReturnType<typeof startTestServer>>;
