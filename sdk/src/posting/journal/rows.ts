/**
 * The rows of a journaled run: a checked bulk row (core/bulk) with the key its journal entries name it by, and the
 * SDK row it is posted as. The CLI makes them from a task file's rows, `post_tasks` from the call's checked rows; both
 * hand them to the engine as they are, with no file written and read back.
 */
import { sha256, toUtf8Bytes } from "ethers";
import type { BulkRow } from "@market/core/bulk";
import { BULK_AUTO_CRITERIA } from "@market/core/verification/criteria";
import type { CheckedRow } from "../check";
import type { PostTaskInput } from "../types";

export interface RunRow {
  /** The row's line in its task file (a call's rows: its index + 1). */
  line: number;
  /**
   * Ties journal entries to the row's content, not its position: the hash of its normalized fields, and which
   * occurrence of identical rows it is (a private brief may repeat). An edited row gets a new key.
   */
  key: string;
  row: BulkRow;
  input: PostTaskInput;
  /** The file the brief was read from (`instructions_file`), resolved: the CLI's confirmation names it. */
  instructionsFile?: string;
}

/** The SDK row of a checked bulk row (the one conversion from the task draft of core/bulk to `postTasks`' input). */
export function inputOf(row: BulkRow): PostTaskInput {
  return {
    instructions: row.instructions,
    amountRaw: row.amount,
    durationSeconds: row.durationSeconds,
    privacy: row.privacy,
    verificationMode: row.verification,
    zone: row.zone,
    capabilities: row.capabilities,
    ...(row.routingSummary !== undefined ? { routingSummary: row.routingSummary } : {}),
    ...(row.target !== undefined ? { targetExecutor: row.target } : {}),
    ...(row.criteria !== undefined ? { verificationCriteria: row.criteria } : {}),
    ...(row.serviceId !== undefined ? { serviceId: row.serviceId } : {}),
  };
}

/** The content hash of a row's normalized fields (32 hex characters). */
export function contentHash(row: BulkRow): string {
  const fields = [
    row.instructions,
    row.amount.toString(),
    row.durationSeconds,
    row.privacy,
    row.verification,
    row.zone,
    row.routingSummary ?? null,
    row.capabilities,
    row.target ?? null,
    // Appended (rows without criteria keep the fingerprint a journal recorded before the columns existed).
    ...(row.criteria !== undefined ? [row.criteria] : []),
    ...(row.serviceId !== undefined ? [{ serviceId: row.serviceId }] : []),
  ];
  return sha256(toUtf8Bytes(JSON.stringify(fields))).slice(2, 34);
}

/** Rows keyed by content and occurrence, in order. */
export function keyedRows(rows: ReadonlyArray<Omit<RunRow, "key" | "input">>): RunRow[] {
  const occurrences = new Map<string, number>();
  return rows.map((r) => {
    const content = contentHash(r.row);
    const occurrence = occurrences.get(content) ?? 0;
    occurrences.set(content, occurrence + 1);
    return { ...r, key: `${content}:${occurrence}`, input: inputOf(r.row) };
  });
}

/**
 * The run rows of a call's checked rows (`post_tasks`, `rent_service`): criteria other than the bulk default are the
 * row's own (as a task file's verification columns would carry them), so a row keys and posts as its file line would.
 */
export function callRows(rows: readonly CheckedRow[]): RunRow[] {
  return keyedRows(
    rows.map((c) => {
      const criteria = c.verificationCriteria;
      const own = criteria !== undefined && JSON.stringify(sorted(criteria)) !== JSON.stringify(sorted(BULK_AUTO_CRITERIA));
      return { line: c.index + 1, row: own ? { ...c.row, criteria } : c.row };
    }),
  );
}

const sorted = (value: object) => Object.fromEntries(Object.entries(value).sort(([a], [b]) => a.localeCompare(b)));
