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
  reputation: ReputationTable;
  capability_stats: CapabilityStatsTable;
  reviews: ReviewsTable;
  task_messages: TaskMessagesTable;
  mcp_quotes: McpQuotesTable;
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
  /** Raw units, copied from the funding event. */
  amount: string;
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

/** Transactions of the service's verifier key, one row per nonce. */
export interface OutboxTable {
  id: Generated<number>;
  chain: string;
  sender: string;
  nonce: number;
  /** What the transaction does, e.g. `assign:<task>:<agent>`; the same purpose is never sent twice. */
  purpose: string;
  to_address: string;
  data: string;
  gas_limit: string;
  max_fee: string;
  priority_fee: string;
  raw: string;
  tx_hash: string;
  /** JSON array of every hash signed for this nonce (fee bumps replace the transaction). */
  hashes: string;
  status: "signed" | "sent" | "mined" | "reverted";
  attempts: number;
  mined_block: number | null;
  error: string | null;
  created_at: Millis;
  sent_at: Millis | null;
  updated_at: Millis;
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

export type Account = Selectable<AccountsTable>;
export type ApiKey = Selectable<ApiKeysTable>;
export type Agent = Selectable<AgentsTable>;
export type NewAgent = Insertable<AgentsTable>;
export type Listing = Selectable<ListingsTable>;
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
