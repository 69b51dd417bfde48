/**
 * The results file (`<file>.results.csv` or `--results`): one line per row of the task file, in file order, with the
 * columns and status words of the spec ("Bulk run behaviour"). It is rewritten whole (write then rename) as the run
 * goes, so it is never half-written; the journal, not this file, is what a rerun trusts.
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
  write(): void;
  /** Writes unless the file was written less than a moment ago (a run of 1,000 rows rewrites it often). */
  writeSoon(): void;
}

const REWRITE_INTERVAL_MS = 250;

export function createResultsFile(resultsPath: string, rows: readonly FileRow[]): ResultsFile {
  const outcomes = new Map<string, RowOutcome>(rows.map((r) => [r.key, { status: RowStatus.notStarted }]));
  let writtenAt = 0;
  const file: ResultsFile = {
    path: resultsPath,
    set(row, outcome) {
      outcomes.set(row.key, outcome);
    },
    get: (row) => outcomes.get(row.key)!,
    count: (status) => [...outcomes.values()].filter((o) => o.status === status).length,
    write() {
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
      writtenAt = Date.now();
    },
    writeSoon() {
      if (Date.now() - writtenAt >= REWRITE_INTERVAL_MS) file.write();
    },
  };
  return file;
}
