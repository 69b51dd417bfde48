import type { Generated, Insertable, Selectable, Updateable } from "kysely";

/**
 * Tables of the service. Portable across SQLite and PostgreSQL: amounts are decimal strings of raw units, times are
 * epoch milliseconds in bigint columns (read back as numbers), booleans are 0/1 integers, lists and objects are JSON
 * text.
 */
export interface Database {
  accounts: AccountsTable;
  account_wallets: AccountWalletsTable;
  auth_nonces: AuthNoncesTable;
  sessions: SessionsTable;
  api_keys: ApiKeysTable;
  agents: AgentsTable;
  agent_capabilities: AgentCapabilitiesTable;
  blobs: BlobsTable;
  blob_uploads: BlobUploadsTable;
  listings: ListingsTable;
  listing_capabilities: ListingCapabilitiesTable;
  task_keys: TaskKeysTable;
  indexer_cursors: IndexerCursorsTable;
  indexed_blocks: IndexedBlocksTable;
  escrow_events: EscrowEventsTable;
  escrow_tasks: EscrowTasksTable;
  escrow_state: EscrowStateTable;
  assignments: AssignmentsTable;
  offers: OffersTable;
  bids: BidsTable;
  deliveries: DeliveriesTable;
  outbox: OutboxTable;
  outbox_nonces: OutboxNoncesTable;
  row_locks: RowLocksTable;
  rate_windows: RateWindowsTable;
  blob_contents: BlobContentsTable;
  reputation: ReputationTable;
  capability_stats: CapabilityStatsTable;
  reputation_credits: ReputationCreditsTable;
  reviews: ReviewsTable;
  task_messages: TaskMessagesTable;
  mcp_quotes: McpQuotesTable;
  registry_events: RegistryEventsTable;
  identity_tokens: IdentityTokensTable;
  onchain_reputation: OnchainReputationTable;
  identity_mints: IdentityMintsTable;
  hosted_agents: HostedAgentsTable;
  hosted_agent_tools: HostedAgentToolsTable;
  hosted_agent_secrets: HostedAgentSecretsTable;
  hosted_agent_tokens: HostedAgentTokensTable;
  hosted_task_runs: HostedTaskRunsTable;
  deploy_fee_credits: DeployFeeCreditsTable;
  key_exports: KeyExportsTable;
  gas_sponsorships: GasSponsorshipsTable;
  hosted_subtasks: HostedSubtasksTable;
  hosted_mcp_runs: HostedMcpRunsTable;
  hosted_agent_messages: HostedAgentMessagesTable;
  services: ServicesTable;
  service_sales: ServiceSalesTable;
  // issue 25
  skills: SkillsTable;
  hosted_agent_skills: HostedAgentSkillsTable;
  // issue 26
  sandbox_usage: SandboxUsageTable;
  // The event log (server/events, issue 27).
  event_heads: EventHeadsTable;
  events: EventsTable;
  event_audience: EventAudienceTable;
  webhook_subscriptions: WebhookSubscriptionsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  // Per-skill stats and verified badges (issue 25 item 7).
  skill_stats: SkillStatsTable;
  verified_badges: VerifiedBadgesTable;
}

/** Epoch milliseconds. */
type Millis = number;

export interface AccountsTable {
  id: Generated<number>;
  created_at: Millis;
}

/** Wallets linked to an account by signing in; `position` 0 is the first linked wallet. */
export interface AccountWalletsTable {
  address: string;
  account_id: number;
  position: number;
  linked_at: Millis;
}

export interface AuthNoncesTable {
  nonce: string;
  address: string;
  created_at: Millis;
  expires_at: Millis;
  used_at: Millis | null;
}

export interface SessionsTable {
  id: Generated<number>;
  /** SHA-256 of the bearer token; the token itself is never stored. */
  token_hash: string;
  account_id: number;
  address: string;
  created_at: Millis;
  expires_at: Millis;
  revoked_at: Millis | null;
}

export interface ApiKeysTable {
  id: Generated<number>;
  account_id: number;
  /** The wallet the key acts as: the account's first linked wallet when the key was created. */
  wallet_address: string;
  /** SHA-256 of the key; keys carry 256 random bits, so a fast hash is enough to store them safely. */
  key_hash: string;
  /** First characters of the key, to tell keys apart in listings. */
  key_prefix: string;
  name: string;
  created_at: Millis;
  revoked_at: Millis | null;
  last_used_at: Millis | null;
}

export interface AgentsTable {
  address: string;
  account_id: number | null;
  /** Uncompressed secp256k1 public key, 130 hex characters without 0x. */
  public_key: string | null;
  display_name: string | null;
  /** Raw units; null when not set. */
  min_reward: string | null;
  /** JSON array of capability tags. */
  capabilities: string;
  /** JSON array of chain names, or null when never recorded (then only `base`). */
  supported_chains: string | null;
  registered_at: Millis;
  updated_at: Millis;
}

export interface AgentCapabilitiesTable {
  agent_address: string;
  tag: string;
}

export interface BlobsTable {
  root_hash: string;
  size: number;
  created_at: Millis;
}

/** Who uploaded a blob (one row per account and blob; uploading the same bytes again moves `uploaded_at`). */
export interface BlobUploadsTable {
  root_hash: string;
  account_id: number;
  size: number;
  uploaded_at: Millis;
}

/** The marketplace's listing of a funded task; its properties are fixed by the first listing. */
export interface ListingsTable {
  task_hash: string;
  chain: string;
  poster: string;
  privacy: "public" | "private";
  public_brief: string | null;
  routing_summary: string | null;
  root_hash: string | null;
  verification_mode: "auto" | "manual" | "agent";
  /** JSON object or null. */
  verification_criteria: string | null;
  /** JSON array of tags. */
  required_capabilities: string;
  location_zone: string;
  target_executor: string | null;
  target_executor_type: string | null;
  service_id: number | null;
  verifier_address: string | null;
  key_custody_blob: string | null;
  /** The task's amount is escrow_tasks.amount (one copy, issue 24). */
  token: string;
  funding_tx: string;
  listed_at: Millis;
}

export interface ListingCapabilitiesTable {
  task_hash: string;
  tag: string;
}

/** A private brief's AES key wrapped (ECIES) to one agent. */
export interface TaskKeysTable {
  task_hash: string;
  agent_address: string;
  wrapped_key: string;
}

/** Where the indexer stopped on each chain; written in the same transaction as the data it covers. */
export interface IndexerCursorsTable {
  chain: string;
  block_number: number;
  block_hash: string;
  updated_at: Millis;
}

/** Recent blocks the indexer has seen, to find the common ancestor after a reorg. */
export interface IndexedBlocksTable {
  chain: string;
  block_number: number;
  block_hash: string;
  parent_hash: string;
}

/** Raw escrow logs, decoded. */
export interface EscrowEventsTable {
  chain: string;
  block_number: number;
  block_hash: string;
  log_index: number;
  tx_hash: string;
  tx_index: number;
  event: string;
  task_hash: string | null;
  /** JSON object of the decoded arguments; bigints as decimal strings. */
  args: string;
  block_time: Millis;
}

/** Each task as the escrow's events project it. */
export interface EscrowTasksTable {
  chain: string;
  task_hash: string;
  poster: string;
  token: string;
  amount: string;
  verifier: string | null;
  worker: string | null;
  /**
   * Who assigned the current worker on chain (WorkerAssigned.assignedBy): the poster for `assignWorker`, the
   * marketplace verifier for `marketplaceAssign`; null while the task has no worker. Reputation counts a task only
   * when this is not the poster.
   */
  assigned_by: string | null;
  /** Block time (seconds) of the deadline, moved by every finished pause. */
  deadline: number;
  /** Escrow status number (core/escrow `EscrowStatus`). */
  status: number;
  rounds: number;
  ending: number;
  result_hash: string | null;
  /** Seconds: latest failed verdict, dispute or escalation. */
  phase_at: number | null;
  last_score: number | null;
  payout: string | null;
  fee: string | null;
  created_block: number;
  created_tx: string;
  updated_block: number;
}

/** Escrow-wide state the projection needs (pauses move deadlines). */
export interface EscrowStateTable {
  chain: string;
  paused_at: number | null;
  total_paused: number;
  fee_bps: number;
}

/** An agent accepting (accept lock) or holding a task; one row per task. */
export interface AssignmentsTable {
  task_hash: string;
  agent_address: string;
  status: "accepting" | "assigned";
  outbox_id: number | null;
  created_at: Millis;
  updated_at: Millis;
}

/** Exclusive windows: while one is open for an agent, other agents get `OFFER_HELD`. */
export interface OffersTable {
  task_hash: string;
  agent_address: string;
  rank: number;
  starts_at: Millis;
  expires_at: Millis;
  declined_at: Millis | null;
}

export interface BidsTable {
  task_hash: string;
  agent_address: string;
  message: string | null;
  created_at: Millis;
}

/** One delivered result per submission round. */
export interface DeliveriesTable {
  task_hash: string;
  round: number;
  agent_address: string;
  output: string;
  result_hash: string;
  evidence_tx: string | null;
  /** The worker's signed evidence transaction, kept to rebroadcast it. */
  evidence_raw: string | null;
  delivered_at: Millis;
  finalized_at: Millis | null;
  passed: number | null;
  score: number | null;
  /** JSON array of reasons. */
  reasons: string | null;
  judged_by: "auto" | "poster" | "verifier" | "admin" | null;
}

/**
 * Transactions of the service's verifier key: a request recorded by any replica (`queued`, nothing signed yet), then
 * one row per nonce once the sender signed it.
 */
export interface OutboxTable {
  id: Generated<number>;
  chain: string;
  sender: string;
  /** Null while queued. */
  nonce: number | null;
  /** What the transaction does, e.g. `assign:<task>:<agent>`; one entry per purpose that is not `reverted`. */
  purpose: string;
  to_address: string;
  data: string;
  gas_limit: string | null;
  max_fee: string | null;
  priority_fee: string | null;
  raw: string | null;
  tx_hash: string | null;
  /** JSON array of every hash signed for this nonce (fee bumps replace the transaction). */
  hashes: string | null;
  status: "queued" | "signed" | "sent" | "mined" | "reverted";
  attempts: number;
  mined_block: number | null;
  error: string | null;
  /** JSON `{ name, args }`: the escrow's custom error when the request was refused as it was about to be signed. */
  revert: string | null;
  created_at: Millis;
  sent_at: Millis | null;
  updated_at: Millis;
}

/** The next nonce of a key on a chain: moved by the transaction that signs at it (server/outbox). */
export interface OutboxNoncesTable {
  chain: string;
  sender: string;
  next_nonce: number;
  updated_at: Millis;
}

/** A name a transaction holds until it commits, by updating its row first (server/db/locks.ts). */
export interface RowLocksTable {
  name: string;
  locked_at: Millis;
}

/** A stored blob's bytes, when the database keeps them (`BLOB_STORE=database`; server/storage/blob-store.ts). */
export interface BlobContentsTable {
  root_hash: string;
  data: Uint8Array;
}

/** A fixed-window counter shared by every API process (server/http/rate-limit.ts `createSharedWindows`). */
export interface RateWindowsTable {
  key: string;
  started_at: Millis;
  count: number;
}

/** Earned numbers of a wallet, derived from escrow events. */
export interface ReputationTable {
  address: string;
  reputation: number;
  tasks_completed: number;
  failed_rounds: number;
  disputes: number;
  disputes_lost: number;
  earnings: string;
  raw_score: number;
  /** Seconds (block time) of the latest settled task. */
  last_settled_at: number | null;
}

/** A settled task that credited its worker's reputation, score and badges (docs/security.md, reputation farming). */
export interface ReputationCreditsTable {
  chain: string;
  task_hash: string;
  worker: string;
  poster: string;
  /** Seconds (block time) of the settlement. */
  credited_at: number;
}

export interface CapabilityStatsTable {
  address: string;
  tag: string;
  completions: number;
  failures: number;
}

export interface ReviewsTable {
  task_hash: string;
  agent_address: string;
  poster: string;
  rating: number;
  comment: string | null;
  created_at: Millis;
}

export interface TaskMessagesTable {
  id: Generated<number>;
  task_hash: string;
  sender: string;
  body: string;
  created_at: Millis;
}

/** A hosted agent: a wallet the service generated and custodies, run by the service on the owner's model. */
export interface HostedAgentsTable {
  id: Generated<number>;
  /** The agent's wallet. */
  address: string;
  /** The owner's account (the signed-in account that deployed it). */
  account_id: number;
  /** Where withdrawals go: the wallet the owner deployed with. */
  owner_address: string;
  /** Uncompressed secp256k1 key (130 hex) every secret's owner copy is sealed to. */
  owner_public_key: string;
  display_name: string;
  instructions: string;
  model_base_url: string;
  model_name: string;
  /** JSON array of capability tags. */
  capabilities: string;
  min_reward: string | null;
  /** Raw units the agent may put into one sub-task (`delegate_to_agent`); null: the option is off. */
  subtask_max_reward: string | null;
  /** `withdrawing`: stopped, a withdrawal from its wallet under way (no start, no second withdrawal, no delete meanwhile). */
  state: "running" | "stopped" | "withdrawing" | "deleted";
  /** JSON of what the agent started with (instructions, tools, capabilities); kept while it runs. */
  running_config: string | null;
  last_error: string | null;
  /** First key export; an exported wallet is never gas-sponsored again. */
  exported_at: Millis | null;
  created_at: Millis;
  updated_at: Millis;
}

export interface HostedAgentToolsTable {
  agent_id: number;
  name: string;
  /** Where the tool came from: `deploy` (later: a skill's slug). */
  origin: string;
  /** JSON of the HTTP tool definition; never a secret (only the secret's name). */
  definition: string;
}

/** A custodied secret: sealed under the server's master key, and a copy sealed (ECIES) to the owner's public key. */
export interface HostedAgentSecretsTable {
  agent_id: number;
  kind: "wallet" | "model" | "tool";
  name: string;
  sealed: string;
  owner_copy: string;
  created_at: Millis;
}

/** Tokens of running agents (SHA-256, as API keys); one per run, deleted when it stops. */
export interface HostedAgentTokensTable {
  token_hash: string;
  agent_id: number;
  created_at: Millis;
}

/** A hosted agent's work on one task: `running` is resumed after a restart, `failed` is never tried again. */
export interface HostedTaskRunsTable {
  agent_id: number;
  task_hash: string;
  status: "running" | "delivered" | "failed";
  steps: number;
  error: string | null;
  started_at: Millis;
  ended_at: Millis | null;
}

/** A deploy-fee payment, credited to one deploy; the primary key (chain, tx) credits it once. */
export interface DeployFeeCreditsTable {
  chain: string;
  tx_hash: string;
  agent_id: number;
  account_id: number;
  payer: string;
  amount: string;
  credited_at: Millis;
}

export interface KeyExportsTable {
  id: Generated<number>;
  agent_id: number;
  account_id: number;
  ip: string | null;
  exported_at: Millis;
}

/** Gas the service sent a hosted agent's wallet; unique per purpose, so each is sponsored at most once. */
/** Sub-tasks a hosted agent posted while working a task (`delegate_to_agent`): their count and total per task. */
export interface HostedSubtasksTable {
  id: Generated<number>;
  agent_id: number;
  /** The task being worked when the sub-task was posted. */
  task_hash: string;
  /** The sub-task's reward (raw units), counted from the moment it is asked for. */
  amount: string;
  /** The sub-task, once listed. */
  subtask_hash: string | null;
  created_at: Millis;
}

/**
 * The run of one MCP spending call (`post_tasks`, `rent_service`) made by an owner for a hosted agent's custodied
 * wallet, under one idempotencyKey: the fingerprint of the call's rows (`tasks`) and the posting engine's journal as
 * JSON Lines (server/mcp/run-journal.ts), each entry saved before the step it records goes on, so a repeat of the call
 * on any API process never pays twice.
 */
export interface HostedMcpRunsTable {
  agent_id: number;
  /** The call's id: a hash of the wallet and the idempotencyKey (sdk/src/posting/journal/call.ts `callId`). */
  run: string;
  tasks: string;
  journal: string;
  updated_at: Millis;
}

export interface GasSponsorshipsTable {
  id: Generated<number>;
  chain: string;
  agent_address: string;
  /** `first-evidence`, or `release:<task hash>`. */
  purpose: string;
  /** Native units (wei). */
  amount: string;
  tx_hash: string | null;
  status: "sending" | "sent" | "failed";
  created_at: Millis;
}

/** Messages between a hosted agent and its owner (no task). */
export interface HostedAgentMessagesTable {
  id: Generated<number>;
  agent_id: number;
  sender: "owner" | "agent";
  body: string;
  created_at: Millis;
}

export type Account = Selectable<AccountsTable>;
export type ApiKey = Selectable<ApiKeysTable>;
export type Agent = Selectable<AgentsTable>;
export type NewAgent = Insertable<AgentsTable>;
export type Listing = Selectable<ListingsTable>;
/** A listing with its task's amount, read from `escrow_tasks` (the one copy of it). */
export type ListingWithAmount = Listing & { amount: string };
export type NewListing = Insertable<ListingsTable>;
export type EscrowTask = Selectable<EscrowTasksTable>;
export type EscrowTaskUpdate = Updateable<EscrowTasksTable>;
export type EscrowEvent = Selectable<EscrowEventsTable>;

/** A quote of an MCP spending call (two-step spend): single-use, valid until `expires_at`. */
export interface McpQuotesTable {
  id: string;
  /** The wallet the quote was made for (the API key's). */
  wallet: string;
  tool: string;
  /** SHA-256 of the call's arguments and the facts the quote showed (sdk/src/mcp/quotes.ts). */
  fingerprint: string;
  /** The quote as shown (JSON). */
  quote: string;
  created_at: Millis;
  expires_at: Millis;
  used_at: Millis | null;
}
/** The identity and reputation registries' kept logs, decoded (core/registries.ts). */
export interface RegistryEventsTable {
  chain: string;
  block_number: number;
  block_hash: string;
  log_index: number;
  tx_hash: string;
  tx_index: number;
  registry: "identity" | "reputation";
  event: string;
  /** What the event is about: the agent id (identity) or the agent wallet (reputation); see `registrySubject`. */
  subject: string;
  /** JSON object of the decoded arguments. */
  args: string;
  block_time: Millis;
}

/** Each identity token as the identity contract's events project it. */
export interface IdentityTokensTable {
  chain: string;
  /** uint256 as a decimal string. */
  agent_id: string;
  owner: string;
  agent_uri: string;
  /** The `agentWallet` metadata entry; null once cleared (a transfer clears it). */
  agent_wallet: string | null;
  /** The `metadataHash` metadata entry (0x hex), when set. */
  metadata_hash: string | null;
  registered_block: number;
  updated_block: number;
}

/** Per chain and agent wallet, the reputation contract's numbers as its events project them. */
export interface OnchainReputationTable {
  chain: string;
  agent: string;
  tasks_completed: number;
  score_sum: number;
  score_count: number;
  disputes: number;
}

/** Identity tokens the service mints for hosted agents, best effort, with their retry state. */
export interface IdentityMintsTable {
  agent_wallet: string;
  chain: string;
  owner_wallet: string;
  card_url: string;
  metadata_hash: string;
  /** `pending` until a mint is confirmed (retried at `next_attempt_at`), then `minted`. */
  state: "pending" | "minted";
  attempts: number;
  next_attempt_at: Millis | null;
  last_error: string | null;
  agent_id: string | null;
  tx_hash: string | null;
  created_at: Millis;
  updated_at: Millis;
}
export type HostedAgent = Selectable<HostedAgentsTable>;

/** A hosted agent's rentable, fixed-price listing; a deleted one keeps its row (`deleted_at`) for the rentals it sold. */
export interface ServicesTable {
  id: Generated<number>;
  agent_id: number;
  /** The hosted agent's wallet: rentals are pinned to it. */
  agent_address: string;
  name: string;
  description: string;
  /** Raw units of the settlement token. */
  price_raw: string;
  service_type: "api" | "a2a";
  /** 1 takes new rentals, 0 does not. */
  active: number;
  /** Rows of service_sales for the service, kept by the indexer's projection. */
  sold_count: Generated<number>;
  created_at: Millis;
  updated_at: Millis;
  deleted_at: Millis | null;
}

/** One settled paid rental (a payout ending of a task listed with the service's id), once per task. */
export interface ServiceSalesTable {
  chain: string;
  task_hash: string;
  service_id: number;
  /** The escrow amount the rental paid (fee included). */
  amount: string;
  /** Block of the TaskCompleted that settled it. */
  block_number: number;
}
export type Service = Selectable<ServicesTable>;

/** A skill of the registry (issue 25); a deleted one is kept, marked, so its slug stays taken. JSON columns as text. */
export interface SkillsTable {
  id: Generated<number>;
  slug: string;
  account_id: number;
  author_address: string;
  name: string;
  description: string;
  version: string;
  license: string | null;
  instructions: string;
  /** JSON: the tool definitions. */
  tools: string;
  /** JSON: names of the secrets it needs. */
  secret_refs: string;
  /** JSON: capability tags. */
  capabilities: string;
  /** 1 listed and installable by anyone, 0 its author's only. */
  is_public: number;
  created_at: Millis;
  updated_at: Millis;
  deleted_at: Millis | null;
}

/** A skill installed in a hosted agent: the frozen snapshot (JSON) taken at install. */
export interface HostedAgentSkillsTable {
  agent_id: number;
  slug: string;
  skill_id: number;
  snapshot: string;
  installed_at: Millis;
}

/** An agent's settled completions and failures credited to one installed public skill (issue 25 item 7). */
export interface SkillStatsTable {
  address: string;
  skill_id: number;
  completions: number;
  failures: number;
}

/** A badge granted by the service's team (admin routes): per capability tag (`kind` tag) or skill slug (`kind` skill). */
export interface VerifiedBadgesTable {
  address: string;
  kind: "tag" | "skill";
  name: string;
  granted_at: Millis;
}

/** Sandbox runs' wall-clock time per hosted agent and UTC day (issue 26: the daily cost cap). */
export interface SandboxUsageTable {
  agent_id: number;
  /** Days since the epoch, UTC. */
  day: number;
  wall_ms: number;
  runs: number;
}

// The event log (server/events, issue 27).

/** The last event number handed out per chain; updating the row orders a chain's writers. */
export interface EventHeadsTable {
  chain: string;
  seq: number;
}

/** One event of the log: `seq` is its cursor on its chain, `id` its stable name. */
export interface EventsTable {
  chain: string;
  seq: number;
  id: string;
  type: string;
  task_hash: string | null;
  /** 1 when every key may see it; otherwise only the wallets of event_audience. */
  public: number;
  /** JSON object: the event's fields. */
  data: string;
  block_number: number | null;
  block_hash: string | null;
  log_index: number | null;
  tx_hash: string | null;
  created_at: Millis;
}

/** A wallet that may see a non-public event (poster, worker, verifier, invited agent). */
export interface EventAudienceTable {
  wallet: string;
  chain: string;
  seq: number;
}

/** An account's webhook: where its events go, and how far into its chain's log deliveries are queued. */
export interface WebhookSubscriptionsTable {
  id: Generated<number>;
  account_id: number;
  /**
   * The API key that subscribed (null for a session): its wallet (and the account's hosted agents) decide what the
   * webhook sees, and revoking it disables the webhook.
   */
  key_id: number | null;
  wallet: string;
  chain: string;
  url: string;
  /** JSON array of event types, or null for all. */
  types: string | null;
  /** Only this task's events (an A2A push-notification config), or null for all. */
  task_hash: string | null;
  /** `standard`: Standard Webhooks body; `a2a`: an A2A StreamResponse, with the config's token in X-A2A-Notification-Token. */
  format: Generated<"standard" | "a2a">;
  /** The A2A config's token, sealed like the secret; null for a standard webhook. */
  token: string | null;
  /** The signing secret sealed under the master key (it must be used, so it is encrypted, not hashed). */
  secret: string;
  status: "active" | "disabled";
  disabled_reason: string | null;
  /** The last event cursor queued for delivery. */
  cursor: number;
  created_at: Millis;
  updated_at: Millis;
}

/** One event for one subscription: the delivery log. */
export interface WebhookDeliveriesTable {
  id: Generated<number>;
  subscription_id: number;
  chain: string;
  seq: number;
  event_id: string;
  status: "pending" | "delivered" | "failed";
  attempts: number;
  next_attempt_at: Millis;
  /** A sender's claim: no other sender attempts it before then. */
  claimed_until: Millis | null;
  last_status: number | null;
  last_error: string | null;
  first_attempt_at: Millis | null;
  delivered_at: Millis | null;
  created_at: Millis;
}
