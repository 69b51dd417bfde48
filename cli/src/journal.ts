/**
 * The CLI's journal adapter (the engine's `JournalPort`, sdk/src/posting/journal): a run's journal is the JSON Lines
 * file `<results>.journal.jsonl`, one entry per line, written and fsync'd before the step it records goes on, so a
 * rerun knows what a killed run paid for even after SIGKILL. A run holds `<journal>.lock` (its pid) so two runs never
 * post the same file at once; a torn last line (the process killed mid-write) is cut when the next run takes the lock.
 */
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, appendFileSync, truncateSync, writeSync } from "node:fs";
import path from "node:path";
import { clientError } from "../../sdk/src/errors";
import { lockPidFile } from "../../sdk/src/node";
import {
  foldEntries,
  journalLines,
  openJournal as openPortJournal,
  parseJournalLines,
  type JournalBinding,
  type JournalPort,
  type JournalWriter,
  type RowJournal,
} from "../../sdk/src/posting/journal";

export function journalPathFor(resultsPath: string): string {
  return `${resultsPath}.journal.jsonl`;
}

/** The journal file at `journalPath` as the engine's journal port. */
export function fileJournal(journalPath: string): JournalPort {
  let fd: number | undefined;
  const handle = () => {
    if (fd === undefined) {
      const created = !existsSync(journalPath);
      fd = openSync(journalPath, "a");
      if (created) fsyncDirectory(path.dirname(path.resolve(journalPath)));
    }
    return fd;
  };
  return {
    name: journalPath,
    lock() {
      mkdirSync(path.dirname(path.resolve(journalPath)), { recursive: true });
      const release = lock(`${journalPath}.lock`);
      try {
        if (existsSync(journalPath)) repairTail(journalPath);
      } catch (error) {
        release();
        throw error;
      }
      return Promise.resolve(() => {
        if (fd !== undefined) closeSync(fd);
        fd = undefined;
        release();
      });
    },
    read: () => Promise.resolve(readEntries(journalPath)),
    append(entries) {
      const file = handle();
      writeSync(file, journalLines(entries));
      fsyncSync(file);
      return Promise.resolve();
    },
  };
}

/** Opens the journal file for a run (the engine's `openJournal` over `fileJournal`). */
export function openJournal(journalPath: string, options: { bind?: JournalBinding; readOnly?: boolean } = {}): Promise<JournalWriter> {
  return openPortJournal(fileJournal(journalPath), options);
}

/** The journal's rows by key; a torn last line (the process killed mid-write) is ignored. */
export function readJournal(journalPath: string): Map<string, RowJournal> {
  return foldEntries(readEntries(journalPath)).rows;
}

function readEntries(journalPath: string) {
  return existsSync(journalPath) ? parseJournalLines(readFileSync(journalPath, "utf8"), journalPath) : [];
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
