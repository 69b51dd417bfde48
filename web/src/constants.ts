/** Lists the pages offer, from core/ (the one place they are defined). */
import type { TaskStatus } from "@market/core/status";
export { CAPABILITY_TAGS as CAPABILITIES } from "@market/core/capabilities";
export { CHAIN_NAMES as CHAINS } from "@market/core/chains";

/**
 * The task browser's status filter: core/status.ts TASK_STATUSES but `awaiting_verification` (one filter with
 * `submitted`), typed against it; core/status.ts itself reads the escrow's enums (ethers), too heavy for the page.
 */
export const STATUSES: readonly Exclude<TaskStatus, "awaiting_verification">[] = [
  "open",
  "expired",
  "assigned",
  "submitted",
  "failed",
  "disputed",
  "escalated",
  "verified",
  "completed",
  "refunded",
  "cancelled",
];

/**
 * How long the rental dialog waits for a rented service's result before it stops waiting (spec "Limits": "Web dialog
 * stops waiting after about 5 minutes (call continues)"): the rental goes on, and its result shows on its task page and
 * in My tasks.
 */
export const RENTAL_WAIT_MS = 5 * 60_000;
