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

export const PAYOUT_ENDINGS: readonly Ending[] = [Ending.VerificationPassed, Ending.DisputeWonByWorker, Ending.UnjudgedWorkReleased];

export function isPayout(ending: Ending): boolean {
  return PAYOUT_ENDINGS.includes(ending);
}

/** Statuses of an ended task: nothing more happens to it, and the escrow holds nothing for it. */
export const ENDED_STATUSES: readonly EscrowStatus[] = [EscrowStatus.Verified, EscrowStatus.Paid, EscrowStatus.Refunded, EscrowStatus.Cancelled];

export function hasEnded(status: EscrowStatus): boolean {
  return ENDED_STATUSES.includes(status);
}

const statusNames = new Map<number, string>(Object.entries(EscrowStatus).map(([k, v]) => [v, k]));
const endingNames = new Map<number, string>(Object.entries(Ending).map(([k, v]) => [v, k]));
const STATUSES: ReadonlySet<number> = new Set(Object.values(EscrowStatus));
const ENDINGS: ReadonlySet<number> = new Set(Object.values(Ending));

export function statusName(status: number | bigint): string {
  return statusNames.get(Number(status)) ?? `Unknown(${status})`;
}

export function endingName(ending: number | bigint): string {
  return endingNames.get(Number(ending)) ?? `Unknown(${ending})`;
}

const isStatus = (value: number): value is EscrowStatus => STATUSES.has(value);
const isEnding = (value: number): value is Ending => ENDINGS.has(value);

/** A status number read from the chain or a row; an unknown number is a bug or another contract, never guessed. */
export function toEscrowStatus(value: number | bigint | string): EscrowStatus {
  const status = Number(value);
  if (!isStatus(status)) throw new Error(`unknown escrow status ${value}`);
  return status;
}

/** An ending number read from the chain, an event or a row. */
export function toEnding(value: number | bigint | string): Ending {
  const ending = Number(value);
  if (!isEnding(ending)) throw new Error(`unknown escrow ending ${value}`);
  return ending;
}
