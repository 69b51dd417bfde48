/**
 * The run journal (`<results>.journal.jsonl`): what was done for each row, appended one JSON line at a time and
 * fsync'd before the step it records goes on, so a rerun knows what a killed run paid for even after SIGKILL.
 *
 *   funding   written before a funding transaction is sent: the prepared rows (task hash, listing fields), the
 *             wallet, escrow and the nonce the transaction will use, the block number then (where to look for it)
 *   funded    written once it is mined: its hash
 *   posted    the row is listed (final)
 *   unlisted  paid but the listing was refused (a rerun lists it)
 *   failed    nothing paid for this attempt (a rerun posts the row again, unless its refusal is final: FINAL_CODES)
 *   bind      what the entries after it were written against: the chain (name, id, genesis block), the escrow, the
 *             wallet and the API; written before a run's first entry whenever it differs from the last one
 *
 * Entries name rows by key (content hash and occurrence, see task-file.ts), so an edited row never reuses the entry
 * of the row it replaced. A run holds `<journal>.lock` (its pid) so two runs never post the same file at once.
 */
import { appendFileSync, closeSync, existsSync, fsyncSync, openSync, readFileSync, truncateSync, writeSync } from "node:fs";
import path from "node:path";
import { clientError } from "../../sdk/src/errors";
import { lockPidFile } from "../../core/pid-lock";
import type { IndexParams } from "../../sdk/src/posting";

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

export function journalPathFor(resultsPath: string): string {
  return `${resultsPath}.journal.jsonl`;
}

/** The journal's rows by key; a torn last line (the process killed mid-write) is ignored. */
export function readJournal(journalPath: string): Map<string, RowJournal> {
  return readJournalState(journalPath).rows;
}

/** The journal's rows by key and the binding its latest entries were written against (none in an older journal). */
export function readJournalState(journalPath: string): { rows: Map<string, RowJournal>; binding?: JournalBinding } {
  const rows = new Map<string, RowJournal>();
  let binding: JournalBinding | undefined;
  if (!existsSync(journalPath)) return { rows };
  const text = readFileSync(journalPath, "utf8");
  const lines = text.split("\n");
  for (const [i, line] of lines.entries()) {
    if (line.trim() === "") continue;
    let entry: JournalEntry;
    try {
      entry = JSON.parse(line) as JournalEntry;
    } catch {
      // The torn tail of a write the process was killed in: the step it was to record never started.
      if (i === lines.length - 1) continue;
      throw clientError("JOURNAL_MISMATCH", `${journalPath} line ${i + 1} is not a journal entry; restore the file or move it away.`);
    }
    if (entry.t === "bind") {
      const { t: _t, at: _at, ...bound } = entry;
      binding = bound;
    } else apply(rows, entry);
  }
  return { rows, ...(binding ? { binding } : {}) };
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

/** Cuts a torn last line (unreadable) or ends a whole one with its missing newline, so appends start on a line. */
function repairTail(journalPath: string) {
  const text = readFileSync(journalPath, "utf8");
  if (text === "" || text.endsWith("\n")) return;
  const lastLineStart = text.lastIndexOf("\n") + 1;
  let whole = true;
  try {
    JSON.parse(text.slice(lastLineStart));
  } catch {
    whole = false;
  }
  if (whole) appendFileSync(journalPath, "\n");
  else truncateSync(journalPath, Buffer.byteLength(text.slice(0, lastLineStart), "utf8"));
}

function apply(rows: Map<string, RowJournal>, entry: Exclude<JournalEntry, { t: "bind" }>) {
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

export interface JournalWriter {
  readonly path: string;
  readonly rows: Map<string, RowJournal>;
  /** The binding of the latest entries (none in a new or older journal). */
  readonly binding?: JournalBinding;
  /** Appends one entry and fsyncs it (after the run's binding, when it differs from the last one); returns once it is on disk. */
  append(entry: DistributiveOmit<Exclude<JournalEntry, { t: "bind" }>, "at">): void;
  close(): void;
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/**
 * Opens the journal for a run: takes the lock and reads what earlier runs recorded. The file is created at the first
 * entry, so a run that sends nothing leaves none behind. `bind` is written before the run's first entry unless the
 * journal's last binding is the same. `readOnly` (a dry run) takes no lock and writes nothing: entries only change
 * what this run sees.
 */
export function openJournal(journalPath: string, options: { bind?: JournalBinding; readOnly?: boolean } = {}): JournalWriter {
  if (options.readOnly) {
    const { rows, binding } = readJournalState(journalPath);
    return { path: journalPath, rows, ...(binding ? { binding } : {}), append: (partial) => apply(rows, { ...partial, at: "" }), close() {} };
  }
  const release = lock(`${journalPath}.lock`);
  let fd: number | undefined;
  const file = () => {
    if (fd === undefined) {
      const created = !existsSync(journalPath);
      fd = openSync(journalPath, "a");
      if (created) fsyncDirectory(path.dirname(path.resolve(journalPath)));
    }
    return fd;
  };
  try {
    if (existsSync(journalPath)) repairTail(journalPath);
    const { rows, binding } = readJournalState(journalPath);
    const bind = options.bind;
    let unbound = bind !== undefined && (!binding || bindingMismatch(binding, bind) !== undefined || binding.api !== bind.api);
    return {
      path: journalPath,
      rows,
      ...(binding ? { binding } : {}),
      append(partial) {
        const at = new Date().toISOString();
        const entry = { ...partial, at };
        const handle = file();
        const binding = unbound ? `${JSON.stringify({ t: "bind", at, ...bind })}\n` : "";
        writeSync(handle, `${binding}${JSON.stringify(entry)}\n`);
        fsyncSync(handle);
        unbound = false;
        apply(rows, entry);
      },
      close() {
        if (fd !== undefined) closeSync(fd);
        release();
      },
    };
  } catch (error) {
    release();
    throw error;
  }
}

function fsyncDirectory(directory: string) {
  try {
    const fd = openSync(directory, "r");
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    // Not every platform can fsync a directory; the entries themselves are still fsync'd.
  }
}

/** An exclusive lock file holding this process's pid; a lock left by a dead process is taken over. */
function lock(lockPath: string): () => void {
  return lockPidFile(lockPath, (holder) =>
    holder === undefined
      ? clientError("RUN_IN_PROGRESS", `Cannot lock ${lockPath}.`)
      : clientError("RUN_IN_PROGRESS", `Another market run (pid ${holder}) is using ${lockPath.replace(/\.lock$/, "")}; wait for it to end.`),
  );
}
