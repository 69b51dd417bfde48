/**
 * What the journaled posting engine needs from where it runs, as small ports. The engine (run.ts, post.ts, call.ts)
 * holds every rule of a resumable run; an adapter only stores and says things:
 *
 * - `JournalPort`: where a run's journal lives. The CLI's is a JSON Lines file fsync'd per entry beside the results
 *   file, locked by a pid file (the CLI's journal.ts); the API server's is a row of `hosted_mcp_runs`, locked by the
 *   custodied wallet's hold (server/mcp/run-journal.ts). A browser's would be IndexedDB or localStorage, locked with
 *   the Web Locks API: nothing in the engine changes for it.
 * - `Reporter`: notes and progress for a person (the CLI's terminal) or a log (the server's request log).
 * - `FundedIndex`: rows this wallet funded from any run, by content, so a copy of a task file pays nothing twice
 *   unknowingly (the CLI keeps one per state directory; a host with none passes `noFundedIndex`).
 * - `OutcomeSink`: where the row-by-row outcomes are shown (the CLI's results CSV); optional.
 */
import type { JournalEntry } from "./entries";

export interface JournalPort {
  /** Names the journal in messages (a file path; "the saved run of ..."). */
  readonly name: string;
  /**
   * Takes the run's exclusive hold on this journal, so two runs never post the same rows at once; refuses with
   * `RUN_IN_PROGRESS` when another run holds it. Resolves to the release.
   */
  lock(): Promise<() => void | Promise<void>>;
  /** Every entry recorded so far, in order (a torn last entry dropped; a damaged one is `JOURNAL_MISMATCH`). */
  read(): Promise<JournalEntry[]>;
  /** Records entries, in order; resolves only once they would survive the process being killed. */
  append(entries: readonly JournalEntry[]): Promise<void>;
}

export interface Progress {
  update(done: number): void;
  end(): void;
}

export interface Reporter {
  /** A note or an error line. */
  note(line: string): void;
  /** Progress over `total` items: `update` with the count done, `end` once over. `step`: items per shown update. */
  progress(total: number, label: string, step?: number): Progress;
}

/** A reporter that says nothing (progress included). */
export const quietReporter: Reporter = { note() {}, progress: () => ({ update() {}, end() {} }) };

export interface FundedRow {
  key: string;
  taskHash: string;
  /** Where the row was funded from (a task file's absolute path; a call's name) and its line. */
  file: string;
  line: number;
  at: string;
}

export interface FundedIndex {
  /** Earlier fundings of rows with this content, oldest first. */
  lookup(key: string): FundedRow[];
  /** Records rows about to be funded; resolves once they are stored durably. */
  record(rows: ReadonlyArray<Omit<FundedRow, "at">>): void | Promise<void>;
}

/** No index: nothing was funded elsewhere that this host knows of. */
export const noFundedIndex: FundedIndex = { lookup: () => [], record() {} };

/** Where the outcomes of a run's rows are shown, whole, each time they change (the CLI's results file). */
export interface OutcomeSink {
  /** Names it in messages and JSON answers (the results file's path). */
  readonly name: string;
  /** The outcomes table as CSV text (outcomes.ts), to store whole (write then rename). */
  write(csv: string): void;
  /** Whether it holds an earlier run's outcomes (then it is brought in line with the journal at once). */
  exists(): boolean;
}
