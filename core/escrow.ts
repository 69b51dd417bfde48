/**
 * Numbers of the escrow's `Status` and `Ending` enums (contracts/interfaces/ITaskEscrow.sol), for code that reads
 * the chain. Keep in the contract's order.
 */
export const EscrowStatus = {
  Funded: 0,
  Assigned: 1,
  Submitted: 2,
  Verified: 3,
  Failed: 4,
  Disputed: 5,
  Escalated: 6,
  Paid: 7,
  Refunded: 8,
  Cancelled: 9,
} as const;
export type EscrowStatus = (typeof EscrowStatus)[keyof typeof EscrowStatus];

/** The eight ways a task ends: three payouts and five refunds. */
export const Ending = {
  None: 0,
  VerificationPassed: 1,
  DisputeWonByWorker: 2,
  UnjudgedWorkReleased: 3,
  CancelledWhileOpen: 4,
  NeverDelivered: 5,
  FailedUnfixed: 6,
  DisputeWonByPoster: 7,
  DisputeUnruled: 8,
} as const;
export type Ending = (typeof Ending)[keyof typeof Ending];

export const PAYOUT_ENDINGS: readonly Ending[] = [
  Ending.VerificationPassed,
  Ending.DisputeWonByWorker,
  Ending.UnjudgedWorkReleased,
];

export function isPayout(ending: Ending): boolean {
  return PAYOUT_ENDINGS.includes(ending);
}

const statusNames = Object.fromEntries(Object.entries(EscrowStatus).map(([k, v]) => [v, k])) as Record<number, string>;
const endingNames = Object.fromEntries(Object.entries(Ending).map(([k, v]) => [v, k])) as Record<number, string>;

export function statusName(status: number | bigint): string {
  return statusNames[Number(status)] ?? `Unknown(${status})`;
}

export function endingName(ending: number | bigint): string {
  return endingNames[Number(ending)] ?? `Unknown(${ending})`;
}
