/**
 * The results file (`<file>.results.csv` or `--results`): one line per row of the task file, in file order, with the
 * columns and status words of the spec ("Bulk run behaviour"). It is rewritten whole (write then rename) right after
 * the journal entries that change rows (the changes of one moment, e.g. a chunk's rows listed together, in one write;
 * before the run goes on to its next step), so it is never half-written and a run killed between steps leaves it
 * agreeing with the journal; the journal, not this file, is what a rerun trusts.
 *
 * `task_hash` is the row's task hash as computed for it (the SHA-256 of a private brief's ciphertext, of a public
 * brief's text), set as soon as it is known, also for a row refused before payment; `task_id` is the id of the task
 * that exists on chain for the row (the same hash), set only once the row is paid for (`posted`, `paid, not listed`).
 */
import { renameSync, writeFileSync } from "node:fs";
import { writeCsv } from "../../core/bulk";
import { formatUsdc } from "../../core/money";
import type { FileRow } from "./task-file";

export const RESULT_COLUMNS = ["line", "status", "escrow", "task_id", "task_hash", "tx_hash", "error"] as const;

export const RowStatus = {
  posted: "posted",
  unlisted: "paid, not listed",
  failed: "failed, nothing paid",
  notStarted: "not started",
} as const;
export type RowStatus = (typeof RowStatus)[keyof typeof RowStatus];

export interface RowOutcome {
  status: RowStatus;
  taskHash?: string;
  txHash?: string;
  error?: { code: string; message: string };
}

export interface ResultsFile {
  readonly path: string;
  set(row: FileRow, outcome: RowOutcome): void;
  get(row: FileRow): RowOutcome;
  count(status: RowStatus): number;
  /** Writes the file now (the changes so far are otherwise written at the end of the current moment). */
  write(): void;
  /** Writes the changes not written yet, if any. */
  flush(): void;
}

/**
 * The results file of `rows`, starting from `initial` (what the journal says of each row; `not started` otherwise),
 * written now when `writeNow` (an earlier run left a journal or a results file to bring in line), else first by the
 * first change; `set`s are written together once the current moment's work is done (`write` writes at once).
 * `readOnly` (a dry run): outcomes change in memory only.
 */
export function createResultsFile(
  resultsPath: string,
  rows: readonly FileRow[],
  options: { readOnly?: boolean; writeNow?: boolean; initial?: (row: FileRow) => RowOutcome | undefined } = {},
): ResultsFile {
  const outcomes = new Map<string, RowOutcome>(rows.map((r) => [r.key, options.initial?.(r) ?? { status: RowStatus.notStarted }]));
  let pending: NodeJS.Immediate | undefined;
  const file: ResultsFile = {
    path: resultsPath,
    set(row, outcome) {
      outcomes.set(row.key, outcome);
      pending ??= setImmediate(() => file.write());
    },
    get: (row) => outcomes.get(row.key)!,
    count: (status) => [...outcomes.values()].filter((o) => o.status === status).length,
    write() {
      if (pending) clearImmediate(pending);
      pending = undefined;
      if (options.readOnly) return;
      const cells = rows.map((row) => {
        const o = outcomes.get(row.key)!;
        return [
          row.line,
          o.status,
          formatUsdc(row.row.amount),
          o.status === RowStatus.notStarted || o.status === RowStatus.failed ? "" : o.taskHash,
          o.taskHash,
          o.txHash,
          o.error ? `${o.error.code}: ${o.error.message}` : "",
        ];
      });
      const temporary = `${resultsPath}.tmp-${process.pid}`;
      writeFileSync(temporary, writeCsv(RESULT_COLUMNS, cells));
      renameSync(temporary, resultsPath);
    },
    flush() {
      if (pending) file.write();
    },
  };
  if (options.writeNow) file.write();
  return file;
}
