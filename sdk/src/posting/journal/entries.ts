/**
 * The run journal's entries: what was done for each row, one entry at a time, recorded durably before the step it
 * records goes on, so a rerun knows what a stopped or killed run paid for. Where the entries are kept is the journal
 * port's business (ports.ts); this file is what they mean.
 *
 *   funding   recorded before a funding transaction is sent: the prepared rows (task hash, listing fields), the
 *             wallet, escrow and the nonce the transaction will use, the block number then (where to look for it)
 *   funded    recorded once it is mined: its hash
 *   posted    the row is listed (final)
 *   unlisted  paid but the listing was refused (a rerun lists it)
 *   failed    nothing paid for this attempt (a rerun posts the row again, unless its refusal is final: FINAL_CODES)
 *   bind      what the entries after it were written against: the chain (name, id, genesis block), the escrow, the
 *             wallet and the API; recorded before a run's first entry whenever it differs from the last one
 *
 * Entries name rows by key (content hash and occurrence, rows.ts), so an edited row never reuses the entry of the row
 * it replaced.
 */
import { clientError } from "../../errors";
import type { IndexParams } from "../types";

export interface JournalError {
  code: string;
  message: string;
}

export interface PreparedEntryRow {
  key: string;
  line: number;
  taskHash: string;
  amount: string;
  indexParams: Omit<IndexParams, "txHash">;
}

/** What a journal's entries were written against (a `bind` entry): a rerun elsewhere is refused or checked. */
export interface JournalBinding {
  chain: string;
  chainId: number;
  /** Hash of the chain's block 0: a chain started again (a new local chain) has another. */
  genesis: string;
  escrow: string;
  wallet: string;
  /** The API base URL the rows were listed through. */
  api: string;
}

/**
 * Refusals after which a row can never be posted: paid and no longer open on chain (NOT_OPEN), or a task hash that can
 * never be listed (a public brief listed by anyone, TASK_HASH_IN_USE; a hash another wallet funded, TASK_HASH_CLAIMED).
 * A rerun does not try them again, and a run that leaves only such rows exits 1, not 3.
 */
export const FINAL_CODES: ReadonlySet<string> = new Set(["NOT_OPEN", "TASK_HASH_IN_USE", "TASK_HASH_CLAIMED"]);

export type JournalEntry =
  | ({ t: "bind"; at: string } & JournalBinding)
  | { t: "funding"; at: string; chain: string; wallet: string; escrow: string; nonce: number; block: number; rows: PreparedEntryRow[] }
  | { t: "funded"; at: string; txHash: string; rows: Array<{ key: string; taskHash: string }> }
  | { t: "posted"; at: string; key: string; taskHash: string; txHash: string }
  | { t: "unlisted"; at: string; key: string; taskHash: string; txHash: string; error: JournalError }
  | { t: "failed"; at: string; key: string; taskHash?: string; error: JournalError };

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** An entry as the engine appends it: the journal stamps `at` and writes the binding before it when needed. */
export type NewEntry = DistributiveOmit<Exclude<JournalEntry, { t: "bind" }>, "at">;

/** One funding attempt of a row: the transaction may have been sent, mined, or never left the process. */
export interface Attempt {
  taskHash: string;
  chain: string;
  wallet: string;
  escrow: string;
  nonce: number;
  block: number;
  amount: string;
  indexParams: Omit<IndexParams, "txHash">;
  txHash?: string;
}

export interface RowJournal {
  attempts: Attempt[];
  posted?: { taskHash: string; txHash: string };
  /** The last refusal recorded for the row, and whether it came after payment. */
  lastError?: JournalError & { paid: boolean };
}

/** The journal's state: its rows by key, and the binding its latest entries were written against (none in an older journal). */
export interface JournalState {
  rows: Map<string, RowJournal>;
  binding?: JournalBinding;
}

/** Folds entries, in order, into each row's attempts and status and the latest binding. */
export function foldEntries(entries: Iterable<JournalEntry>): JournalState {
  const rows = new Map<string, RowJournal>();
  let binding: JournalBinding | undefined;
  for (const entry of entries) {
    if (entry.t === "bind") {
      const { t: _t, at: _at, ...bound } = entry;
      binding = bound;
    } else applyEntry(rows, entry);
  }
  return { rows, ...(binding ? { binding } : {}) };
}

/**
 * The entries of a journal kept as JSON Lines (the CLI's file, the server's saved runs). The torn tail of a write the
 * process was killed in is dropped (the step it was to record never started); any other line that is no entry is
 * `JOURNAL_MISMATCH`, naming `where`.
 */
export function parseJournalLines(text: string, where: string): JournalEntry[] {
  const entries: JournalEntry[] = [];
  const lines = text.split("\n");
  for (const [i, line] of lines.entries()) {
    if (line.trim() === "") continue;
    try {
      entries.push(JSON.parse(line) as JournalEntry);
    } catch {
      if (i === lines.length - 1) continue;
      throw clientError("JOURNAL_MISMATCH", `${where} line ${i + 1} is not a journal entry; restore the file or move it away.`);
    }
  }
  return entries;
}

/** Entries as JSON Lines (each ends with its newline). */
export function journalLines(entries: readonly JournalEntry[]): string {
  return entries.map((entry) => `${JSON.stringify(entry)}\n`).join("");
}

/** Which part of the binding differs (chain, chain id, genesis, escrow, wallet), if any; the API URL may change. */
export function bindingMismatch(recorded: JournalBinding, current: JournalBinding): string | undefined {
  const parts: Array<[string, string | number, string | number]> = [
    ["chain", recorded.chain, current.chain],
    ["chain id", recorded.chainId, current.chainId],
    ["chain (its genesis block: the chain was started again)", recorded.genesis.toLowerCase(), current.genesis.toLowerCase()],
    ["escrow", recorded.escrow.toLowerCase(), current.escrow.toLowerCase()],
    ["wallet", recorded.wallet.toLowerCase(), current.wallet.toLowerCase()],
  ];
  const differs = parts.find(([, was, now]) => was !== now);
  return differs ? `${differs[0]}: ${String(differs[1])} then, ${String(differs[2])} now` : undefined;
}

export function applyEntry(rows: Map<string, RowJournal>, entry: Exclude<JournalEntry, { t: "bind" }>) {
  const row = (key: string) => {
    let found = rows.get(key);
    if (!found) rows.set(key, (found = { attempts: [] }));
    return found;
  };
  switch (entry.t) {
    case "funding":
      for (const r of entry.rows) {
        row(r.key).attempts.push({
          taskHash: r.taskHash,
          chain: entry.chain,
          wallet: entry.wallet,
          escrow: entry.escrow,
          nonce: entry.nonce,
          block: entry.block,
          amount: r.amount,
          indexParams: r.indexParams,
        });
      }
      break;
    case "funded":
      for (const r of entry.rows) {
        const attempt = rows.get(r.key)?.attempts.find((a) => a.taskHash === r.taskHash);
        if (attempt) attempt.txHash = entry.txHash;
      }
      break;
    case "posted":
      row(entry.key).posted = { taskHash: entry.taskHash, txHash: entry.txHash };
      break;
    case "unlisted":
      row(entry.key).lastError = { ...entry.error, paid: true };
      break;
    case "failed":
      row(entry.key).lastError = { ...entry.error, paid: false };
      break;
  }
}
