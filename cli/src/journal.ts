/**
 * The run journal (`<results>.journal.jsonl`): what was done for each row, appended one JSON line at a time and
 * fsync'd before the step it records goes on, so a rerun knows what a killed run paid for even after SIGKILL.
 *
 *   funding   written before a funding transaction is sent: the prepared rows (task hash, listing fields), the
 *             wallet, escrow and the nonce the transaction will use, the block number then (where to look for it)
 *   funded    written once it is mined: its hash
 *   posted    the row is listed (final)
 *   unlisted  paid but the listing was refused (a rerun lists it)
 *   failed    nothing paid for this attempt (a rerun posts the row again)
 *
 * Entries name rows by key (content hash and occurrence, see task-file.ts), so an edited row never reuses the entry
 * of the row it replaced. A run holds `<journal>.lock` (its pid) so two runs never post the same file at once.
 */
import { appendFileSync, closeSync, existsSync, fsyncSync, openSync, readFileSync, truncateSync, unlinkSync, writeSync } from "node:fs";
import path from "node:path";
import { clientError } from "../../sdk/src/errors";
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

export type JournalEntry =
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
  const rows = new Map<string, RowJournal>();
  if (!existsSync(journalPath)) return rows;
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
    apply(rows, entry);
  }
  return rows;
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

function apply(rows: Map<string, RowJournal>, entry: JournalEntry) {
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
  /** Appends one entry and fsyncs it; returns once it is on disk. */
  append(entry: DistributiveOmit<JournalEntry, "at">): void;
  close(): void;
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/**
 * Opens the journal for a run: takes the lock and reads what earlier runs recorded. The file is created at the first
 * entry, so a run that sends nothing leaves none behind.
 */
export function openJournal(journalPath: string): JournalWriter {
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
    const rows = readJournal(journalPath);
    return {
      path: journalPath,
      rows,
      append(partial) {
        const entry = { ...partial, at: new Date().toISOString() };
        const handle = file();
        writeSync(handle, `${JSON.stringify(entry)}\n`);
        fsyncSync(handle);
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
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(lockPath, "wx");
      writeSync(fd, String(process.pid));
      closeSync(fd);
      const release = () => {
        process.removeListener("exit", release);
        try {
          unlinkSync(lockPath);
        } catch {
          // already gone
        }
      };
      process.on("exit", release);
      return release;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const holder = Number(readFileSync(lockPath, "utf8").trim());
      if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && isAlive(holder)) {
        throw clientError("RUN_IN_PROGRESS", `Another market run (pid ${holder}) is using ${lockPath.replace(/\.lock$/, "")}; wait for it to end.`);
      }
      unlinkSync(lockPath);
    }
  }
  throw clientError("RUN_IN_PROGRESS", `Cannot lock ${lockPath}.`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
