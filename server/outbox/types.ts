/** The outbox's records and what its parts share (server/outbox/index.ts binds the requests and the sender). */
import type { Signer, TransactionReceipt } from "ethers";
import type { Chain } from "../chains";
import { json, type Db } from "../db";
import type { OutboxTable } from "../db/schema";
import type { Selectable } from "kysely";

export type Entry = Selectable<OutboxTable>;
/** An entry the sender has signed: it has a nonce and a transaction. */
export type SignedEntry = Entry & {
  nonce: number;
  raw: string;
  tx_hash: string;
  hashes: string;
  gas_limit: string;
  max_fee: string;
  priority_fee: string;
};

export function signedEntry(entry: Entry): SignedEntry {
  if (entry.nonce === null || entry.raw === null || entry.tx_hash === null) throw new Error(`outbox entry ${entry.id} is not signed`);
  return entry as SignedEntry;
}
export interface OutboxOptions {
  db: Db;
  chain: Chain;
  /** The marketplace verifier key, connected to the chain's provider. */
  signer: Signer;
  now: () => number;
  logger?: { warn(obj: object, msg: string): void; error(obj: object, msg: string): void };
  /** How often the sender signs what is queued and checks receipts, and a waiter looks for its entry's end (ms). */
  pollMs?: number;
  /** A transaction neither mined nor known after this long is broadcast again (ms). */
  resendAfterMs?: number;
  /**
   * A transaction still not mined after this long (or still refused by the node, never sent) is replaced with higher
   * fees, same nonce (ms); the wait grows with each replacement.
   */
  bumpAfterMs?: number;
  /**
   * Whether this process sends the key's transactions from the start (default true: the only process). With several
   * API processes on one database each starts as a follower, and the one holding the key's sender lease is made the
   * sender with `lead()` (server/index.ts, docs/scaling.md).
   */
  leading?: boolean;
}

/** The escrow refused the call; nothing was sent (or the transaction was mined and reverted). */
export class OutboxRevert extends Error {
  override readonly name = "OutboxRevert";
  constructor(
    readonly purpose: string,
    readonly revert: { name: string; args: unknown[] } | undefined,
    message: string,
    readonly txHash?: string,
  ) {
    super(message);
  }
}

export interface Sent {
  id: number;
  txHash: string;
  receipt: TransactionReceipt;
}

/** Custom error arguments as JSON (uint arguments are bigints: kept as decimal strings). */
export const revertJson = (revert: { name: string; args: unknown[] }) =>
  JSON.stringify(revert, (_key, value: unknown) => (typeof value === "bigint" ? value.toString() : value));

/** How an entry recorded as reverted ends its callers' wait. */
export function revertOf(entry: Entry): OutboxRevert {
  return new OutboxRevert(
    entry.purpose,
    json.read<{ name: string; args: unknown[] }>(entry.revert) ?? undefined,
    `${entry.purpose}: ${entry.error ?? "reverted"}`,
    entry.mined_block === null ? undefined : (entry.tx_hash ?? undefined),
  );
}

/** What the requests and the sender share: the key's chain and database, and how a caller's wait ends. */
export interface OutboxContext {
  db: Db;
  chain: Chain;
  signer: Signer;
  now: () => number;
  logger?: OutboxOptions["logger"];
  /** The key's address. */
  address(): Promise<string>;
  /** Ends the waits of this process's callers for an entry. */
  settle(id: number, outcome: { sent?: Sent; error?: Error }): void;
}
