/**
 * A run's row-by-row outcomes, in row order, with the columns and status words of the spec ("Bulk run behaviour").
 * Shown through an optional sink (the CLI's results file), rewritten whole right after the journal entries that change
 * rows (the changes of one moment, e.g. a chunk's rows listed together, in one write; before the run goes on to its
 * next step), so it always agrees with the journal; the journal, not this table, is what a rerun trusts.
 *
 * `task_hash` is the row's task hash as computed for it (the SHA-256 of a private brief's ciphertext, of a public
 * brief's text), set as soon as it is known, also for a row refused before payment; `task_id` is the id of the task
 * that exists on chain for the row (the same hash), set only once the row is paid for (`posted`, `paid, not listed`).
 */
import { writeCsv } from "@market/core/bulk";
import { formatUsdc } from "@market/core/money";
import type { OutcomeSink } from "./ports";
import type { RunRow } from "./rows";

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

export interface Outcomes {
  /** The sink's name (the results file's path), or "" without one. */
  readonly path: string;
  set(row: RunRow, outcome: RowOutcome): void;
  get(row: RunRow): RowOutcome;
  count(status: RowStatus): number;
  /** Shows the table now (the changes so far are otherwise shown at the end of the current moment). */
  write(): void;
  /** Shows the changes not shown yet, if any. */
  flush(): void;
}

/** Runs `work` at the end of the current moment (after this turn's I/O: Node's setImmediate); answers its cancel. */
function defer(work: () => void): () => void {
  if (typeof setImmediate === "function") {
    const handle = setImmediate(work);
    return () => clearImmediate(handle);
  }
  const handle = setTimeout(work, 0);
  return () => clearTimeout(handle);
}

/** The outcomes as CSV text. */
export function outcomesCsv(rows: readonly RunRow[], get: (row: RunRow) => RowOutcome): string {
  const cells = rows.map((row) => {
    const o = get(row);
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
  return writeCsv(RESULT_COLUMNS, cells);
}

/**
 * The outcomes of `rows`, starting from `initial` (what the journal says of each row; `not started` otherwise), shown
 * now when `writeNow` (an earlier run left a journal or a results file to bring in line), else first by the first
 * change; `set`s are shown together once the current moment's work is done (`write` shows at once). Without a sink
 * (or `readOnly`: a dry run), outcomes change in memory only.
 */
export function createOutcomes(
  rows: readonly RunRow[],
  options: { sink?: OutcomeSink; readOnly?: boolean; writeNow?: boolean; initial?: (row: RunRow) => RowOutcome | undefined } = {},
): Outcomes {
  const outcomes = new Map<string, RowOutcome>(rows.map((r) => [r.key, options.initial?.(r) ?? { status: RowStatus.notStarted }]));
  const sink = options.readOnly ? undefined : options.sink;
  let pending: (() => void) | undefined;
  const table: Outcomes = {
    path: options.sink?.name ?? "",
    set(row, outcome) {
      outcomes.set(row.key, outcome);
      if (sink) pending ??= defer(() => table.write());
    },
    get: (row) => outcomes.get(row.key)!,
    count: (status) => [...outcomes.values()].filter((o) => o.status === status).length,
    write() {
      pending?.();
      pending = undefined;
      sink?.write(outcomesCsv(rows, (row) => outcomes.get(row.key)!));
    },
    flush() {
      if (pending) table.write();
    },
  };
  if (options.writeNow && sink) table.write();
  return table;
}
