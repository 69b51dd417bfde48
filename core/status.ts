import { EscrowStatus, isOpen } from "./escrow";

/**
 * Task statuses as the API shows them (`state.status`). The spec names `open`, `submitted`,
 * `awaiting_verification`, `failed`, `verified` and `completed`; the rest name the other escrow states.
 */
export const TASK_STATUSES = [
  "open",
  "expired",
  "assigned",
  "submitted",
  "awaiting_verification",
  "failed",
  "disputed",
  "escalated",
  "verified",
  "completed",
  "refunded",
  "cancelled",
] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

/**
 * The API status of a task from its escrow status. `expired`: still Funded on chain but past its deadline (only a
 * cancel or claim can end it). `awaiting_verification`: evidence delivered and finalized in `manual` or `agent` mode,
 * waiting for the poster's or the verifier's verdict.
 */
export function taskStatus(escrow: { status: number; deadline: number; nowSeconds: number; awaitingVerdict?: boolean }): TaskStatus {
  switch (escrow.status) {
    case EscrowStatus.Funded:
      return isOpen(escrow, escrow.nowSeconds) ? "open" : "expired";
    case EscrowStatus.Assigned:
      return "assigned";
    case EscrowStatus.Submitted:
      return escrow.awaitingVerdict ? "awaiting_verification" : "submitted";
    case EscrowStatus.Verified:
      return "verified";
    case EscrowStatus.Failed:
      return "failed";
    case EscrowStatus.Disputed:
      return "disputed";
    case EscrowStatus.Escalated:
      return "escalated";
    case EscrowStatus.Paid:
      return "completed";
    case EscrowStatus.Refunded:
      return "refunded";
    case EscrowStatus.Cancelled:
      return "cancelled";
    default:
      throw new Error(`unknown escrow status ${escrow.status}`);
  }
}
