import type { IndexTaskBody } from "@market/core/api";
import type { VerificationCriteria } from "@market/core/verification/criteria";

/** One task to post (a row of `postTasks`, or `postTask`'s argument). */
export interface PostTaskInput {
  /** The brief. */
  instructions: string;
  /** Reward in raw units (USDC has 6 decimals): give this or `reward`. */
  amountRaw?: bigint | string;
  /** Reward as USDC decimal text, e.g. "2.5": give this or `amountRaw`. */
  reward?: string;
  /** Default `private`. */
  privacy?: "public" | "private";
  /** Default 86,400 (one day); 3,600 to 7,776,000. */
  durationSeconds?: number;
  /** Default `auto`. `agent` (with `verifierAddress`) only through `postTask`. */
  verificationMode?: "auto" | "manual" | "agent";
  /** Default for `auto`: `{ min_length: 10, pass_threshold: 60 }` (plus the real-content rules). */
  verificationCriteria?: VerificationCriteria;
  verifierAddress?: string;
  capabilities?: string[];
  routingSummary?: string;
  zone?: string;
  /** The only agent that may take the task (its worker). */
  targetExecutor?: string;
  /** A rental: the service rented, whose agent must be `targetExecutor` (`rentService` fills both). */
  serviceId?: number;
}

/** The fields of `IndexTaskBody` the SDK sets itself, typed as it sets them (plain strings for the branded addresses and hashes). */
type SdkSetFields =
  | "taskHash"
  | "txHash"
  | "privacy"
  | "verificationMode"
  | "verificationCriteria"
  | "verifierAddress"
  | "requiredCapabilities"
  | "locationZone"
  | "targetExecutor";

/**
 * Everything `indexTask` needs to list a funded task: keep it for a task left unlisted. The body of
 * `POST /api/v1/a2a/tasks/index` (core/api `IndexTaskBody`), with what the SDK always sets made required and narrowed.
 */
export type IndexParams = Omit<IndexTaskBody, SdkSetFields> & {
  taskHash: string;
  txHash: string;
  privacy: "public" | "private";
  verificationMode: "auto" | "manual" | "agent";
  verificationCriteria?: VerificationCriteria;
  verifierAddress?: string;
  requiredCapabilities: string[];
  locationZone: string;
  targetExecutor?: string;
};

export type PostStatus = "posted" | "unlisted" | "failed" | "skipped";

export interface PostResult {
  /** The row's index in the call. */
  index: number;
  status: PostStatus;
  taskHash?: string;
  txHash?: string;
  amountRaw: string;
  privacy: "public" | "private";
  /** Set on `unlisted` rows: pass to `indexTask` to finish them; never post the row again. */
  indexParams?: IndexParams;
  error?: { code: string; message: string };
}

export interface PostTasksResult {
  posted: number;
  unlisted: number;
  failed: number;
  skipped: number;
  /** True when a funding or listing failure ended the run early. */
  stopped: boolean;
  totalRaw: string;
  results: PostResult[];
  /**
   * Milliseconds spent per phase: checking rows (and finding the agents briefs are wrapped to), preparing briefs
   * (encrypting, uploading, wrapping keys), funding (building, approving, sending, mining) and listing. Preparing and
   * building the next chunk overlaps funding and listing the current one, so the phases may add up to more than the run.
   */
  timings: { checkMs: number; prepareMs: number; fundMs: number; listMs: number };
}

/** A chunk about to be funded: its rows are prepared (task hash, brief uploaded) and nothing is paid yet. */
export interface FundingEvent {
  rows: Array<{ index: number; taskHash: string; indexParams: Omit<IndexParams, "txHash"> }>;
  /** Nonce the funding transaction will use. */
  nonce: number;
}

export interface FundedEvent {
  txHash: string;
  rows: Array<{ index: number; taskHash: string; indexParams: IndexParams }>;
}

/**
 * Whom private briefs are wrapped to: registered agents with a public key and the row's capabilities on the posting
 * chain (SDK and CLI), or on any chain (the MCP rule), or exactly these agents (a rental: the service's agent, whose
 * chains the API checks when it builds the funding).
 */
export type WrapTo = "posting-chain" | "any-chain" | { agents: ReadonlyArray<{ address: string; publicKey: string }> };

export interface PostTasksOptions {
  /**
   * The chain to post on (`arc`, `0g`...), one of those GET /api/v1/health/settlement says are postable
   * (`POSTABLE_CHAINS`); default the first postable one. Anything else is refused `WRONG_CHAIN` before anything is sent.
   */
  chain?: string;
  /** Default `posting-chain`. */
  wrapTo?: WrapTo;
  /**
   * The service's custody public key (`custodyPublicKey` of GET /api/v1/health/settlement): each private brief key is
   * also wrapped to it as the task's `keyCustodyBlob`, which the service re-wraps at accept to any eligible agent (the
   * web app's posts, spec "Authentication" 10), agents registered after the post included.
   */
  custodyPublicKey?: string;
  /** Refuse before spending anything when the total escrow is above this (raw units). */
  maxTotalRaw?: bigint | string;
  /** Tasks per funding transaction when the escrow has batch creation (default 20, at most its limit). */
  chunkSize?: number;
  /** Before each funding transaction is sent (journal the prepared rows here to resume safely). */
  onFunding?: (event: FundingEvent) => void | Promise<void>;
  /** After each funding transaction is mined, before its rows are listed. */
  onFunded?: (event: FundedEvent) => void | Promise<void>;
  /** After each row reaches its final status in this run. */
  onProgress?: (event: { done: number; total: number; result: PostResult }) => void | Promise<void>;
  /** A private brief's AES key, once made: keep it to wrap the brief to more agents later (e.g. bidders). */
  onBriefKey?: (event: { index: number; taskHash: string; key: Uint8Array }) => void;
}
