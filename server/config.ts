import { readFileSync } from "node:fs";
import path from "node:path";
import { getAddress } from "ethers";
import { readDeployment } from "../deploy/deployments";
import { CHAIN_NAMES, chainEnvPrefix, isChainName, type ChainName } from "@market/core/chains";
import { DEFAULT_ASSIGNMENT_CAP, DEFAULT_CREDIT_RULE, type AssignmentCapRule, type CreditRule } from "@market/core/reputation";
import { ACCEPTS_PER_MINUTE, BLOB_GC_GRACE_MS, BLOB_GC_INTERVAL_MS, UPLOAD_BYTES_PER_MINUTE, UPLOAD_QUOTA_BYTES } from "@market/core/limits";

/** One chain the server follows: its RPC, its escrow and settlement token. */
export interface ChainConfig {
  name: ChainName;
  chainId: number;
  rpcUrl: string;
  escrow: string;
  token: string;
  /** Block to start indexing from (the escrow's deployment block). */
  startBlock: number;
  /** Blocks behind the head the indexer stays; 0 on a local automining chain. */
  confirmations: number;
  /** Whether new tasks may be posted on this chain (`POSTABLE_CHAINS`; default `arc` only). */
  postable: boolean;
  /** The node's WebSocket endpoint for new heads (`<PREFIX>WS_URL`; default: rpcUrl as ws:// or wss://). Issue 30. */
  wsUrl?: string;
  /** The ERC-8004-compatible identity NFT on this chain (its proxy and deployment block), when deployed. */
  identity?: RegistryConfig;
  /** The reputation registry the chain's escrow writes at settlement, when deployed. */
  reputation?: RegistryConfig;
}

/** A registry beside a chain's escrow: the indexer reads its events from `block` on. */
export interface RegistryConfig {
  address: string;
  block: number;
}

export interface RateLimitConfig {
  /** Requests per window per client IP. */
  perIp: number;
  /** Requests per window per API key or session. */
  perKey: number;
  windowMs: number;
}

/** Hosted agents (docs/hosted-agents.md): custody, the deploy fee, and the bounds of the runner. */
export interface HostedConfig {
  /** 32-byte key (64 hex) that seals custodied secrets (AES-256-GCM); hosted agents are off without it. Never logged. */
  masterKey?: string;
  /** Deploy fee in raw units of the settlement token, paid to the treasury on the settlement chain; 0: free. */
  deployFeeRaw: bigint;
  /** Deploys per account per hour. */
  deploysPerHour: number;
  /** Hosted agents an account may have (deleted ones not counted). */
  maxAgentsPerAccount: number;
  /** Tasks one agent works at once. */
  agentConcurrency: number;
  /** Tasks all hosted agents of this server work at once. */
  serverConcurrency: number;
  /** Model calls per task (the tool-call loop's step limit). */
  maxSteps: number;
  /** Time one task may take from the first model call to the answer (ms). */
  taskBudgetMs: number;
  /** Time one model call may take (ms). */
  modelTimeoutMs: number;
  /** Model calls per agent per minute. */
  modelCallsPerMinute: number;
  /** How often a running agent browses (ms). */
  browseIntervalMs: number;
  /** How often a running agent looks for escalated work it may release (`releaseUnjudgedWork`) (ms). */
  releaseCheckMs: number;
  /** Let models and tools be reached on loopback and private networks (local models; tests). Off by default. */
  allowPrivateNetworks: boolean;
  /**
   * How long the service's hold on an agent's wallet (a withdrawal, an owner's MCP spend) lasts unless renewed (ms):
   * the holder renews it every third of this, so a hold left by a process that died lapses within it.
   */
  walletHoldMs: number;
  /** The gas sponsor switch: `paused` (default) or `on`. */
  gasSponsor: "on" | "paused";
  /** The wallet that pays sponsored gas. Never logged. */
  gasSponsorKey?: string;
  /** JS Eval and Sandbox tools (issue 26, server/sandbox): DEFAULT_SANDBOX when absent. */
  sandbox?: SandboxConfig;
  // Issue 23 (security, second pass): what a hosted agent's model can spend and what it works for.
  /** Share of a task's reward (basis points) its sub-tasks (`delegate_to_agent`) may pay in all. */
  subtaskShareBps: number;
  /** Raw units one agent's sub-tasks may pay in all over any 24 hours. */
  subtaskDailyCapRaw: bigint;
  /** An agent with sub-tasks on accepts no task paying less (raw units); nor does it delegate for one. */
  subtaskMinParentRewardRaw: bigint;
  /** The `minReward` of a hosted agent deployed without one (raw units). */
  defaultMinRewardRaw: bigint;
}

/** The sandbox of JS Eval and Sandbox tools (issue 26, docs/hosted-agents.md "Sandbox tools"). */
export interface SandboxConfig {
  /** The bubblewrap binary. */
  bwrap: string;
  /** Uid and gid sandboxes run as when the server runs as root (RLIMIT_NPROC does not bind the host's root). */
  uid: number;
  /** Sandboxes running at once on this server. */
  concurrency: number;
  /** Sandbox runs one hosted agent may start per minute (the window starts at its first run). */
  runsPerMinute: number;
  /** Wall-clock seconds of sandbox runs one hosted agent may use per UTC day (its daily cost cap). */
  dailySeconds: number;
  /** A tool's timeout when it states none (seconds; a tool may state 1 to 600). */
  defaultTimeoutSeconds: number;
  /** Per-process memory (RLIMIT_DATA), processes per sandbox, scratch tmpfs size, stdout kept. */
  memoryBytes: number;
  processes: number;
  scratchBytes: number;
  maxOutputBytes: number;
  /** CPU weight of the sandboxes' shared cgroup where one is writable (v2 scale, 100 = a default group; issue 26). */
  cpuWeight?: number;
  /** The sandboxes' shared cgroup is SCHED_IDLE (`cpu.idle` 1) where the kernel has it; false: weighted by cpuWeight. */
  cpuIdle?: boolean;
}

export const DEFAULT_SANDBOX: SandboxConfig = {
  bwrap: "bwrap",
  uid: 65534,
  concurrency: 4,
  runsPerMinute: 10,
  dailySeconds: 600,
  defaultTimeoutSeconds: 30,
  memoryBytes: 256 * 1024 * 1024,
  processes: 32,
  scratchBytes: 64 * 1024 * 1024,
  maxOutputBytes: 64 * 1024,
  cpuWeight: 10,
  cpuIdle: true,
};

/** Uploads (docs/security.md): a quota and a rate per account, and the collection of blobs nothing references. */
export interface UploadLimits {
  /** Bytes of blobs no listed task references that one account may hold. */
  quotaBytes: number;
  /** Bytes one account may upload per minute. */
  bytesPerMinute: number;
  /** How long an unreferenced blob is kept after its latest upload (ms). */
  graceMs: number;
  /** How often unreferenced blobs are collected (ms); 0: never here (another instance collects). */
  gcIntervalMs: number;
}

/** Limits against abuse (docs/security.md); each has an environment variable. */
export interface AbuseConfig {
  /** Undelivered assignments per agent: `base`, one more per `completionsPerSlot` credited tasks, at most `max`. */
  assignmentCap: AssignmentCapRule;
  /** Accepts per agent per minute. */
  acceptsPerMinute: number;
  uploads: UploadLimits;
}

export const DEFAULT_ABUSE: AbuseConfig = {
  assignmentCap: { ...DEFAULT_ASSIGNMENT_CAP },
  acceptsPerMinute: ACCEPTS_PER_MINUTE,
  uploads: {
    quotaBytes: UPLOAD_QUOTA_BYTES,
    bytesPerMinute: UPLOAD_BYTES_PER_MINUTE,
    graceMs: BLOB_GC_GRACE_MS,
    gcIntervalMs: BLOB_GC_INTERVAL_MS,
  },
};

export interface ServerConfig {
  host: string;
  port: number;
  /** Public base URL written into cards and sign-in messages. */
  publicUrl: string;
  /** PostgreSQL connection string; when absent, SQLite at `sqlitePath`. */
  databaseUrl?: string;
  sqlitePath: string;
  /** Where stored blobs' bytes go: files under `blobDir` (default), or the database (every API process reads them). */
  blobStore: "files" | "database";
  blobDir: string;
  chains: ChainConfig[];
  /** Marketplace verifier key: sends marketplaceAssign and completeVerification. Never logged. */
  verifierKey?: string;
  /** Key that opens `keyCustodyBlob` copies of brief keys, to re-wrap them to an accepting agent. Never logged. */
  custodyKey?: string;
  /** The service admin's key (`X-Admin-Key`) for admin routes (the disputes awaiting a ruling); off when absent. Never logged. */
  adminApiKey?: string;
  /** Length of the exclusive window the best-ranked eligible agent gets when a task opens (ms); 0 disables offers. */
  offerWindowMs: number;
  rateLimit: RateLimitConfig;
  abuse: AbuseConfig;
  /** Which settled tasks credit reputation, score and badges (reputation farming, docs/security.md). */
  reputation: CreditRule;
  /**
   * Which proxies' `X-Forwarded-For` names the client (the IP rate limits count): false (default) uses the socket's
   * peer; true trusts every hop; a number trusts that many hops; a list trusts those addresses or CIDR ranges.
   */
  trustProxy: boolean | number | string[];
  /** Indexer poll interval (ms). */
  pollIntervalMs: number;
  /** Run the indexer in a worker thread (default) or on the API's event loop. */
  indexerInWorker: boolean;
  /** `INDEXER_SUBSCRIBE` (default true; issue 30): follow new heads over the node's WebSocket, polling as the fallback. */
  indexerSubscribe: boolean;
  /**
   * `INDEXER_V8_TUNING` (default true; issue 30): a process that runs indexer threads sets V8's heap growing factor
   * and memory reducer for catch-ups (INDEXER_V8_FLAGS in server/indexer/worker.ts); false keeps V8's defaults.
   */
  indexerV8Tuning: boolean;
  /**
   * On PostgreSQL, how often a process tries the leases it lacks (each chain's indexer, the verifier key's sender, the
   * hosted runners) and checks those it holds (ms): another process takes over a dead leader's work within about this
   * long (docs/scaling.md).
   */
  leaseRetryMs: number;
  logLevel: string;
  hosted: HostedConfig;
  /** Identity minting for hosted agents (server/identity): the chain the token is minted on, and its retry back-off. */
  identity: IdentityConfig;
  /** The event log's streams and webhooks (issue 27, docs/events.md). */
  events: EventsConfig;
}

/** `EVENT_STREAMS_PER_ACCOUNT`, `WEBHOOKS_PER_ACCOUNT`, `WEBHOOK_RETRY_DELAYS_MS` (comma-separated), `WEBHOOK_TIMEOUT_MS`. */
export interface EventsConfig {
  streamsPerAccount: number;
  webhooksPerAccount: number;
  /** Waits after each failed attempt; absent: Standard Webhooks' schedule over 27 h (server/webhooks/sender.ts). */
  retryDelaysMs?: number[];
  webhookTimeoutMs: number;
}

export interface IdentityConfig {
  /** The chain identity tokens are minted on (`0g`); minting needs its identity contract and the verifier key's outbox. */
  chain: ChainName;
  /** First pause after a failed mint (ms); doubles per failure up to `maxRetryMs`. */
  retryMs: number;
  maxRetryMs: number;
}

/** One browse interval of the worker runtime: the offered agent sees the task at its next browse. */
export const DEFAULT_OFFER_WINDOW_MS = 15_000;

/** Chains new tasks are posted on when `POSTABLE_CHAINS` is not set. */
export const DEFAULT_POSTABLE_CHAINS: readonly ChainName[] = ["arc"];

export const DEFAULT_RATE_LIMIT: RateLimitConfig = { perIp: 1200, perKey: 600, windowMs: 60_000 };

export const DEFAULT_HOSTED: HostedConfig = {
  deployFeeRaw: 0n,
  deploysPerHour: 5,
  maxAgentsPerAccount: 10,
  agentConcurrency: 2,
  serverConcurrency: 8,
  maxSteps: 8,
  taskBudgetMs: 300_000,
  modelTimeoutMs: 60_000,
  modelCallsPerMinute: 30,
  browseIntervalMs: 15_000,
  releaseCheckMs: 600_000,
  allowPrivateNetworks: false,
  walletHoldMs: 120_000,
  gasSponsor: "paused",
  subtaskShareBps: 5_000,
  subtaskDailyCapRaw: 5_000_000n,
  subtaskMinParentRewardRaw: 1_000_000n,
  defaultMinRewardRaw: 10_000n,
};

/**
 * Reads the configuration from the environment. Per chain `<C>` (`ARC`, `0G`, `BASE`):
 * `CHAIN_<C>_RPC_URL` enables it; `CHAIN_<C>_DEPLOYMENT` names a `deployments/<network>.json` record (default: the
 * chain's name), and `CHAIN_<C>_ESCROW`, `CHAIN_<C>_TOKEN`, `CHAIN_<C>_CHAIN_ID`, `CHAIN_<C>_START_BLOCK`,
 * `CHAIN_<C>_CONFIRMATIONS` override or replace it; `CHAIN_<C>_IDENTITY` and `CHAIN_<C>_REPUTATION` name the registries
 * beside the escrow (default: the record's `identity` and `reputation`). `POSTABLE_CHAINS` lists the chains new tasks
 * may be posted on (default `arc`).
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): ServerConfig {
  const dataDir = env.MARKET_DATA_DIR ?? path.resolve(__dirname, "..", "data");
  const port = integer(env.PORT, 3000, "PORT");
  const host = env.HOST ?? "127.0.0.1";
  const postable = chainList(env.POSTABLE_CHAINS, DEFAULT_POSTABLE_CHAINS, "POSTABLE_CHAINS");
  return {
    host,
    port,
    publicUrl: env.MARKET_PUBLIC_URL ?? `http://${host}:${port}`,
    databaseUrl: env.DATABASE_URL || undefined,
    sqlitePath: env.SQLITE_PATH ?? path.join(dataDir, "market.sqlite"),
    blobStore: blobStore(env.BLOB_STORE),
    blobDir: env.BLOB_DIR ?? path.join(dataDir, "blobs"),
    chains: CHAIN_NAMES.flatMap((name) => {
      const chain = chainFromEnv(name, env, postable);
      return chain ? [chain] : [];
    }),
    verifierKey: env.MARKET_VERIFIER_PRIVATE_KEY || undefined,
    custodyKey: env.MARKET_CUSTODY_PRIVATE_KEY || undefined,
    adminApiKey: adminApiKey(env.MARKET_ADMIN_API_KEY),
    offerWindowMs: integer(env.OFFER_WINDOW_MS, DEFAULT_OFFER_WINDOW_MS, "OFFER_WINDOW_MS"),
    rateLimit: {
      perIp: integer(env.RATE_LIMIT_PER_IP, DEFAULT_RATE_LIMIT.perIp, "RATE_LIMIT_PER_IP"),
      perKey: integer(env.RATE_LIMIT_PER_KEY, DEFAULT_RATE_LIMIT.perKey, "RATE_LIMIT_PER_KEY"),
      windowMs: integer(env.RATE_LIMIT_WINDOW_MS, DEFAULT_RATE_LIMIT.windowMs, "RATE_LIMIT_WINDOW_MS"),
    },
    abuse: {
      assignmentCap: {
        base: integer(env.ASSIGNMENT_CAP_BASE, DEFAULT_ABUSE.assignmentCap.base, "ASSIGNMENT_CAP_BASE"),
        completionsPerSlot: integer(
          env.ASSIGNMENT_CAP_COMPLETIONS_PER_SLOT,
          DEFAULT_ABUSE.assignmentCap.completionsPerSlot,
          "ASSIGNMENT_CAP_COMPLETIONS_PER_SLOT",
        ),
        max: integer(env.ASSIGNMENT_CAP_MAX, DEFAULT_ABUSE.assignmentCap.max, "ASSIGNMENT_CAP_MAX"),
      },
      acceptsPerMinute: integer(env.ACCEPTS_PER_MINUTE, DEFAULT_ABUSE.acceptsPerMinute, "ACCEPTS_PER_MINUTE"),
      uploads: {
        quotaBytes: integer(env.UPLOAD_QUOTA_BYTES, DEFAULT_ABUSE.uploads.quotaBytes, "UPLOAD_QUOTA_BYTES"),
        bytesPerMinute: integer(env.UPLOAD_BYTES_PER_MINUTE, DEFAULT_ABUSE.uploads.bytesPerMinute, "UPLOAD_BYTES_PER_MINUTE"),
        graceMs: integer(env.BLOB_GC_GRACE_MS, DEFAULT_ABUSE.uploads.graceMs, "BLOB_GC_GRACE_MS"),
        gcIntervalMs: integer(env.BLOB_GC_INTERVAL_MS, DEFAULT_ABUSE.uploads.gcIntervalMs, "BLOB_GC_INTERVAL_MS"),
      },
    },
    reputation: creditRuleFromEnv(env),
    trustProxy: trustProxy(env.TRUST_PROXY),
    pollIntervalMs: integer(env.INDEXER_POLL_MS, 200, "INDEXER_POLL_MS"),
    indexerInWorker: env.INDEXER_IN_WORKER !== "false",
    // Issue 30: the indexer follows new heads over the node's WebSocket (eth_subscribe), polling as the fallback.
    indexerSubscribe: env.INDEXER_SUBSCRIBE !== "false",
    indexerV8Tuning: env.INDEXER_V8_TUNING !== "false",
    leaseRetryMs: Math.max(50, integer(env.LEASE_RETRY_MS, 1_000, "LEASE_RETRY_MS")),
    logLevel: env.LOG_LEVEL ?? "info",
    identity: {
      chain: chainList(env.IDENTITY_CHAIN, ["0g"], "IDENTITY_CHAIN")[0]!,
      retryMs: integer(env.IDENTITY_MINT_RETRY_MS, 30_000, "IDENTITY_MINT_RETRY_MS"),
      maxRetryMs: integer(env.IDENTITY_MINT_MAX_RETRY_MS, 3_600_000, "IDENTITY_MINT_MAX_RETRY_MS"),
    },
    hosted: hostedFromEnv(env),
    events: {
      streamsPerAccount: integer(env.EVENT_STREAMS_PER_ACCOUNT, 10, "EVENT_STREAMS_PER_ACCOUNT"),
      webhooksPerAccount: integer(env.WEBHOOKS_PER_ACCOUNT, 10, "WEBHOOKS_PER_ACCOUNT"),
      ...(env.WEBHOOK_RETRY_DELAYS_MS
        ? { retryDelaysMs: env.WEBHOOK_RETRY_DELAYS_MS.split(",").map((d) => integer(d.trim(), 0, "WEBHOOK_RETRY_DELAYS_MS")) }
        : {}),
      webhookTimeoutMs: integer(env.WEBHOOK_TIMEOUT_MS, 10_000, "WEBHOOK_TIMEOUT_MS"),
    },
  };
}

/**
 * `MARKET_MASTER_KEY` (64 hex) or `MARKET_MASTER_KEY_FILE` (a file holding it), `HOSTED_DEPLOY_FEE_RAW`,
 * `HOSTED_DEPLOYS_PER_HOUR`, `HOSTED_MAX_AGENTS_PER_ACCOUNT`, `HOSTED_AGENT_CONCURRENCY`, `HOSTED_SERVER_CONCURRENCY`,
 * `HOSTED_MAX_STEPS`, `HOSTED_TASK_BUDGET_MS`, `HOSTED_MODEL_TIMEOUT_MS`, `HOSTED_MODEL_CALLS_PER_MINUTE`,
 * `HOSTED_BROWSE_INTERVAL_MS`, `HOSTED_RELEASE_CHECK_MS`, `HOSTED_ALLOW_PRIVATE_NETWORKS`, `HOSTED_WALLET_HOLD_MS`, `MARKET_GAS_SPONSOR` (`on`/`paused`),
 * `MARKET_GAS_SPONSOR_PRIVATE_KEY`; issue 23: `HOSTED_SUBTASK_SHARE_BPS`, `HOSTED_SUBTASK_DAILY_CAP_RAW`,
 * `HOSTED_SUBTASK_MIN_PARENT_REWARD_RAW`, `HOSTED_DEFAULT_MIN_REWARD_RAW`.
 */
function hostedFromEnv(env: NodeJS.ProcessEnv): HostedConfig {
  const file = env.MARKET_MASTER_KEY_FILE;
  const masterKey = (env.MARKET_MASTER_KEY || (file ? readFileSync(file, "utf8") : "")).trim().replace(/^0x/i, "");
  if (masterKey && !/^[0-9a-fA-F]{64}$/.test(masterKey)) throw new Error("MARKET_MASTER_KEY must be 32 bytes as 64 hex characters");
  const fee = env.HOSTED_DEPLOY_FEE_RAW?.trim() || "0";
  if (!/^[0-9]{1,78}$/.test(fee)) throw new Error(`HOSTED_DEPLOY_FEE_RAW must be a whole number of raw units, got ${JSON.stringify(fee)}`);
  const sponsor = (env.MARKET_GAS_SPONSOR ?? "paused").trim().toLowerCase();
  if (sponsor !== "on" && sponsor !== "paused") throw new Error(`MARKET_GAS_SPONSOR must be on or paused, got ${JSON.stringify(sponsor)}`);
  const d = DEFAULT_HOSTED;
  return {
    ...(masterKey ? { masterKey } : {}),
    deployFeeRaw: BigInt(fee),
    deploysPerHour: integer(env.HOSTED_DEPLOYS_PER_HOUR, d.deploysPerHour, "HOSTED_DEPLOYS_PER_HOUR"),
    maxAgentsPerAccount: integer(env.HOSTED_MAX_AGENTS_PER_ACCOUNT, d.maxAgentsPerAccount, "HOSTED_MAX_AGENTS_PER_ACCOUNT"),
    agentConcurrency: Math.max(1, integer(env.HOSTED_AGENT_CONCURRENCY, d.agentConcurrency, "HOSTED_AGENT_CONCURRENCY")),
    serverConcurrency: Math.max(1, integer(env.HOSTED_SERVER_CONCURRENCY, d.serverConcurrency, "HOSTED_SERVER_CONCURRENCY")),
    maxSteps: Math.max(1, integer(env.HOSTED_MAX_STEPS, d.maxSteps, "HOSTED_MAX_STEPS")),
    taskBudgetMs: integer(env.HOSTED_TASK_BUDGET_MS, d.taskBudgetMs, "HOSTED_TASK_BUDGET_MS"),
    modelTimeoutMs: integer(env.HOSTED_MODEL_TIMEOUT_MS, d.modelTimeoutMs, "HOSTED_MODEL_TIMEOUT_MS"),
    modelCallsPerMinute: integer(env.HOSTED_MODEL_CALLS_PER_MINUTE, d.modelCallsPerMinute, "HOSTED_MODEL_CALLS_PER_MINUTE"),
    browseIntervalMs: integer(env.HOSTED_BROWSE_INTERVAL_MS, d.browseIntervalMs, "HOSTED_BROWSE_INTERVAL_MS"),
    releaseCheckMs: integer(env.HOSTED_RELEASE_CHECK_MS, d.releaseCheckMs, "HOSTED_RELEASE_CHECK_MS"),
    allowPrivateNetworks: env.HOSTED_ALLOW_PRIVATE_NETWORKS === "true",
    walletHoldMs: Math.max(1_000, integer(env.HOSTED_WALLET_HOLD_MS, d.walletHoldMs, "HOSTED_WALLET_HOLD_MS")),
    gasSponsor: sponsor,
    ...(env.MARKET_GAS_SPONSOR_PRIVATE_KEY ? { gasSponsorKey: env.MARKET_GAS_SPONSOR_PRIVATE_KEY } : {}),
    subtaskShareBps: Math.min(10_000, integer(env.HOSTED_SUBTASK_SHARE_BPS, d.subtaskShareBps, "HOSTED_SUBTASK_SHARE_BPS")),
    subtaskDailyCapRaw: rawAmount(env.HOSTED_SUBTASK_DAILY_CAP_RAW, d.subtaskDailyCapRaw, "HOSTED_SUBTASK_DAILY_CAP_RAW"),
    subtaskMinParentRewardRaw: rawAmount(
      env.HOSTED_SUBTASK_MIN_PARENT_REWARD_RAW,
      d.subtaskMinParentRewardRaw,
      "HOSTED_SUBTASK_MIN_PARENT_REWARD_RAW",
    ),
    defaultMinRewardRaw: rawAmount(env.HOSTED_DEFAULT_MIN_REWARD_RAW, d.defaultMinRewardRaw, "HOSTED_DEFAULT_MIN_REWARD_RAW"),
    sandbox: sandboxFromEnv(env),
  };
}

/**
 * `SANDBOX_BWRAP`, `SANDBOX_UID`, `SANDBOX_CONCURRENCY`, `SANDBOX_RUNS_PER_MINUTE`, `SANDBOX_DAILY_SECONDS`,
 * `SANDBOX_DEFAULT_TIMEOUT_SECONDS`, `SANDBOX_MEMORY_MB`, `SANDBOX_PROCESSES`, `SANDBOX_SCRATCH_MB`,
 * `SANDBOX_MAX_OUTPUT_BYTES`, `SANDBOX_CPU_WEIGHT`, `SANDBOX_CPU_IDLE` (issue 26).
 */
function sandboxFromEnv(env: NodeJS.ProcessEnv): SandboxConfig {
  const d = DEFAULT_SANDBOX;
  const mb = 1024 * 1024;
  return {
    bwrap: env.SANDBOX_BWRAP?.trim() || d.bwrap,
    uid: integer(env.SANDBOX_UID, d.uid, "SANDBOX_UID"),
    concurrency: Math.max(1, integer(env.SANDBOX_CONCURRENCY, d.concurrency, "SANDBOX_CONCURRENCY")),
    runsPerMinute: integer(env.SANDBOX_RUNS_PER_MINUTE, d.runsPerMinute, "SANDBOX_RUNS_PER_MINUTE"),
    dailySeconds: integer(env.SANDBOX_DAILY_SECONDS, d.dailySeconds, "SANDBOX_DAILY_SECONDS"),
    defaultTimeoutSeconds: Math.min(
      600,
      Math.max(1, integer(env.SANDBOX_DEFAULT_TIMEOUT_SECONDS, d.defaultTimeoutSeconds, "SANDBOX_DEFAULT_TIMEOUT_SECONDS")),
    ),
    memoryBytes: Math.max(64, integer(env.SANDBOX_MEMORY_MB, d.memoryBytes / mb, "SANDBOX_MEMORY_MB")) * mb,
    processes: Math.max(8, integer(env.SANDBOX_PROCESSES, d.processes, "SANDBOX_PROCESSES")),
    scratchBytes: Math.max(1, integer(env.SANDBOX_SCRATCH_MB, d.scratchBytes / mb, "SANDBOX_SCRATCH_MB")) * mb,
    maxOutputBytes: Math.max(1024, integer(env.SANDBOX_MAX_OUTPUT_BYTES, d.maxOutputBytes, "SANDBOX_MAX_OUTPUT_BYTES")),
    cpuWeight: Math.min(10_000, Math.max(1, integer(env.SANDBOX_CPU_WEIGHT, d.cpuWeight ?? 10, "SANDBOX_CPU_WEIGHT"))),
    // SANDBOX_CPU_IDLE=0 (or false): the weighted cgroup instead of the idle one.
    cpuIdle: !["0", "false"].includes(env.SANDBOX_CPU_IDLE?.trim() ?? "") && (d.cpuIdle ?? true),
  };
}

/** A whole number of raw units from the environment (issue 23's settings); `fallback` when unset. */
function rawAmount(value: string | undefined, fallback: bigint, name: string): bigint {
  const text = value?.trim();
  if (!text) return fallback;
  if (!/^[0-9]{1,78}$/.test(text)) throw new Error(`${name} must be a whole number of raw units, got ${JSON.stringify(text)}`);
  return BigInt(text);
}

/**
 * `REPUTATION_MIN_REWARD_RAW` (default 1000000: 1 USDC), `REPUTATION_CREDITS_PER_PAIR` (5) and
 * `REPUTATION_PAIR_PERIOD_SECONDS` (604800: a week). The indexer's reputation projection reads them (in its worker
 * thread too), so every instance must have the same.
 */
export function creditRuleFromEnv(env: NodeJS.ProcessEnv = process.env): CreditRule {
  const min = env.REPUTATION_MIN_REWARD_RAW?.trim() || DEFAULT_CREDIT_RULE.minRewardRaw.toString();
  if (!/^[0-9]{1,78}$/.test(min)) throw new Error(`REPUTATION_MIN_REWARD_RAW must be a whole number of raw units, got ${JSON.stringify(min)}`);
  return {
    minRewardRaw: BigInt(min),
    perPair: integer(env.REPUTATION_CREDITS_PER_PAIR, DEFAULT_CREDIT_RULE.perPair, "REPUTATION_CREDITS_PER_PAIR"),
    periodSeconds: integer(env.REPUTATION_PAIR_PERIOD_SECONDS, DEFAULT_CREDIT_RULE.periodSeconds, "REPUTATION_PAIR_PERIOD_SECONDS"),
  };
}

/** A comma-separated list of chain names (`arc,0g`); unset or empty: the default. */
function chainList(value: string | undefined, fallback: readonly ChainName[], name: string): ChainName[] {
  const entries = (value ?? "")
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "");
  if (entries.length === 0) return [...fallback];
  const bad = entries.find((entry) => !isChainName(entry));
  if (bad !== undefined) throw new Error(`${name} must list chains among ${CHAIN_NAMES.join(", ")}, got ${JSON.stringify(bad)}`);
  return entries.filter(isChainName);
}

function chainFromEnv(name: ChainName, env: NodeJS.ProcessEnv, postable: readonly ChainName[]): ChainConfig | undefined {
  const prefix = chainEnvPrefix(name);
  const rpcUrl = env[`${prefix}RPC_URL`];
  if (!rpcUrl) return undefined;
  const recorded = readDeployment(env[`${prefix}DEPLOYMENT`] ?? name, env.DEPLOYMENTS_DIR || undefined);
  const escrow = env[`${prefix}ESCROW`] ?? recorded?.proxy;
  const token = env[`${prefix}TOKEN`] ?? recorded?.token;
  const chainId = env[`${prefix}CHAIN_ID`] ? integer(env[`${prefix}CHAIN_ID`], 0, `${prefix}CHAIN_ID`) : recorded?.chainId;
  if (!escrow || !token || chainId === undefined) {
    throw new Error(`${name}: set ${prefix}DEPLOYMENT to a recorded deployment, or ${prefix}ESCROW, ${prefix}TOKEN and ${prefix}CHAIN_ID`);
  }
  return {
    name,
    chainId,
    rpcUrl,
    escrow: getAddress(escrow),
    token: getAddress(token),
    startBlock: integer(env[`${prefix}START_BLOCK`], recorded?.block ?? 0, `${prefix}START_BLOCK`),
    confirmations: integer(env[`${prefix}CONFIRMATIONS`], 0, `${prefix}CONFIRMATIONS`),
    postable: postable.includes(name),
    ...(env[`${prefix}WS_URL`] ? { wsUrl: env[`${prefix}WS_URL`] } : {}),
    ...registry("identity", env[`${prefix}IDENTITY`], recorded?.identity),
    ...registry("reputation", env[`${prefix}REPUTATION`], recorded?.reputation),
  };
}

/**
 * A registry from its variable (an address: read from the chain's start block) or the deployment record (read from
 * the registry's deployment block); none when neither names one.
 */
function registry(
  key: "identity" | "reputation",
  address: string | undefined,
  recorded: { proxy: string; block: number } | undefined,
): Partial<Pick<ChainConfig, "identity" | "reputation">> {
  if (address)
    return { [key]: { address: getAddress(address), block: recorded && getAddress(recorded.proxy) === getAddress(address) ? recorded.block : 0 } };
  return recorded ? { [key]: { address: getAddress(recorded.proxy), block: recorded.block } } : {};
}

/** `MARKET_ADMIN_API_KEY`: at least 32 characters (a guessable key would open the admin routes); unset: off. */
function adminApiKey(value: string | undefined): string | undefined {
  const key = value?.trim();
  if (!key) return undefined;
  if (key.length < 32) throw new Error("MARKET_ADMIN_API_KEY must be at least 32 characters (e.g. `openssl rand -hex 32`)");
  return key;
}

/** `BLOB_STORE`: `files` (default) or `database`. */
function blobStore(value: string | undefined): ServerConfig["blobStore"] {
  const text = (value ?? "").trim().toLowerCase() || "files";
  if (text !== "files" && text !== "database") throw new Error(`BLOB_STORE must be files or database, got ${JSON.stringify(value)}`);
  return text;
}

/** `TRUST_PROXY`: unset or `false`, `true`, a hop count, or a comma-separated list of addresses and CIDR ranges. */
function trustProxy(value: string | undefined): boolean | number | string[] {
  const text = value?.trim() ?? "";
  if (text === "" || text === "false") return false;
  if (text === "true") return true;
  if (/^\d+$/.test(text)) return integer(text, 0, "TRUST_PROXY");
  const entries = text.split(",").map((entry) => entry.trim());
  const bad = entries.find((entry) => !/^[0-9a-fA-F.:]+(\/\d{1,3})?$/.test(entry));
  if (bad !== undefined) throw new Error(`TRUST_PROXY must be true, false, a hop count or addresses/CIDR ranges, got ${JSON.stringify(bad)}`);
  return entries;
}

function integer(value: string | undefined, fallback: number, name: string): number {
  if (value === undefined || value === "") return fallback;
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`${name} must be a whole number, got ${JSON.stringify(value)}`);
  return n;
}
