/**
 * Every numeric limit of the spec (docs: marketplace spec, "Limits" and the tables it summarises), named once.
 * The unit is in the name: `_SECONDS` for chain time and task durations, `_MS` for client timers, `_CHARS` for
 * JavaScript string lengths, `_BYTES` for encoded sizes.
 */

export const MINUTE_SECONDS = 60;
export const HOUR_SECONDS = 60 * MINUTE_SECONDS;
export const DAY_SECONDS = 24 * HOUR_SECONDS;

// Tasks and the escrow.
export const MIN_TASK_DURATION_SECONDS = HOUR_SECONDS; // 3,600
export const MAX_TASK_DURATION_SECONDS = 90 * DAY_SECONDS; // 7,776,000
export const DEFAULT_BULK_DURATION_SECONDS = DAY_SECONDS; // 86,400
/** Evidence rounds per task (the escrow's MAX_ROUNDS). */
export const MAX_SUBMISSIONS = 3;
/** The worker may appeal a failed verdict for this long; the poster's claim opens after it. */
export const APPEAL_WINDOW_SECONDS = 3 * DAY_SECONDS;
/** The admin's window to rule: an unruled dispute may be claimed, and escalated work released, this long after. */
export const RULING_WINDOW_SECONDS = 14 * DAY_SECONDS;
export const BPS_DENOMINATOR = 10_000;
export const MAX_FEE_BPS = 3_000;
export const MAX_UINT256 = (1n << 256n) - 1n;
export const USDC_DECIMALS = 6;

// Marketplace and bulk posting.
export const BROWSE_PAGE_SIZE = 100;
export const MAX_BULK_ROWS = 1_000;
export const MAX_MCP_BULK_ROWS = 200;
/** Tasks per funding transaction (the escrow's maxBatch()). */
export const BATCH_CHUNK_SIZE = 20;
/** 10 MB, read as MiB: the larger reading, so a file the service accepts is never refused here first. */
export const MAX_UPLOAD_BYTES = 10 * 1024 * 1024;
/** Blobs per batch upload (issue 30): a chunk's private briefs, at most MAX_UPLOAD_BYTES decoded in all. */
export const MAX_UPLOAD_BATCH = BATCH_CHUNK_SIZE;
export const MAX_WEB_BRIEF_CHARS = 20_000;
export const PUBLIC_BRIEF_PREVIEW_CHARS = 4_000;
export const DEFAULT_ZONE = "global";
export const MAX_ZONE_CHARS = 128;
export const MAX_ROUTING_SUMMARY_CHARS = 500;
/** The longest output a worker may deliver (JavaScript string length). */
export const MAX_OUTPUT_CHARS = 500_000;

// Reputation and badges.
export const REPUTATION_START = 50;
export const REPUTATION_MIN = 0;
export const REPUTATION_MAX = 100;
export const REPUTATION_GAIN_PER_SETTLED_TASK = 1;
export const REPUTATION_PENALTY_PER_FAILURE = 10;
export const DECAYED_SCORE_PER_SETTLED_TASK = 10;
export const DECAY_HALF_LIFE_SECONDS = 7 * DAY_SECONDS;
export const BADGE_MIN_COMPLETIONS = 5;
/** A badge needs a failure share strictly under this percentage. */
export const BADGE_FAILURE_PERCENT_BELOW = 20;

// Abuse limits (docs/security.md), each configurable on the server.
/** Undelivered assignments a new agent may hold at once (task hoarding). */
export const ASSIGNMENT_CAP_BASE = 3;
/** One more undelivered assignment per this many settled tasks credited. */
export const ASSIGNMENT_CAP_COMPLETIONS_PER_SLOT = 5;
export const ASSIGNMENT_CAP_MAX = 25;
/** Accepts per agent per minute. */
export const ACCEPTS_PER_MINUTE = 60;
/** Reputation lost when a marketplace assignment ends never delivered (the DeadlineExpired refund of an assigned task). */
export const REPUTATION_PENALTY_NEVER_DELIVERED = REPUTATION_PENALTY_PER_FAILURE;
/** Reputation lost when the worker hands a marketplace assignment back (releaseTask). */
export const REPUTATION_PENALTY_PER_RELEASE = 2;
/**
 * Least reward (raw units) of a settled task that credits reputation, score and badges: 1 USDC, so each credit costs
 * a farmer at least the fee on it (reputation farming).
 */
export const REPUTATION_MIN_CREDITED_REWARD_RAW = 1_000_000n;
/** Settled tasks one poster may credit one agent with per period. */
export const REPUTATION_CREDITS_PER_PAIR = 5;
/** The period of that count (a rolling week of block time). */
export const REPUTATION_PAIR_PERIOD_SECONDS = 7 * DAY_SECONDS;
/** Bytes of blobs no listed task references that one account may hold (100 MB, read as MiB). */
export const UPLOAD_QUOTA_BYTES = 100 * 1024 * 1024;
/** Bytes one account may upload per minute. */
export const UPLOAD_BYTES_PER_MINUTE = 50 * 1024 * 1024;
/** How long a blob nothing references is kept after its latest upload (ms): a day. */
export const BLOB_GC_GRACE_MS = DAY_SECONDS * 1_000;
/** How often unreferenced blobs are collected (ms): hourly. */
export const BLOB_GC_INTERVAL_MS = 60 * MINUTE_SECONDS * 1_000;

// Worker runtime timers.
export const RUNTIME_BROWSE_INTERVAL_MS = 15_000;
export const NEEDS_WRAP_RETRY_INTERVAL_MS = 5_000;
export const NEEDS_WRAP_FAST_RETRY_WINDOW_MS = 10 * MINUTE_SECONDS * 1_000;
export const NEEDS_WRAP_MAX_BACKOFF_MS = DAY_SECONDS * 1_000;
export const BELOW_MIN_REWARD_SKIP_MS = DAY_SECONDS * 1_000;

// MCP (market mcp and the remote /mcp endpoint).
/** A quote of a spending call is single-use and valid this long. */
export const MCP_QUOTE_TTL_MS = 10 * 60_000;
/** How long `rent_service` waits for the result before answering the task hash to poll. */
export const MCP_RENT_WAIT_SECONDS_DEFAULT = 45;
export const MCP_RENT_WAIT_SECONDS_MAX = 60;

// Services (a hosted agent's rentable listings) and rentals.
export const SERVICE_NAME_MIN_CHARS = 5;
export const SERVICE_NAME_MAX_CHARS = 60;
export const SERVICE_DESCRIPTION_MAX_CHARS = 2_000;
/** A rental is a task with a one-hour deadline. */
export const RENTAL_DURATION_SECONDS = HOUR_SECONDS;
