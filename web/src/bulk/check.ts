/**
 * The bulk page's check of a dropped file, in the browser, before anything is sent: core/bulk with the web app's rules
 * (spec "Bulk run behaviour" 1 and 7, "Limits"): bad rows flagged with their code and reason and the rest postable,
 * unknown columns ignored and listed once, identical rows refused, only the known capability tags, briefs up to
 * 20,000 characters, 1,000 rows at most. No network: the totals need only the settlement's batch terms.
 */
import { bulkFormatOf, parseBulkFile, type BulkFormat, type FileIssue, type RowIssue } from "@market/core/bulk";
import { MAX_BULK_ROWS, MAX_WEB_BRIEF_CHARS } from "@market/core/limits";
import { keyedRows, type RunRow } from "../../../sdk/src/posting/journal/rows";

/** One line of the file as the page shows it: a postable row, or a flagged one with its issues. */
export type CheckedLine = { line: number; row: RunRow; issues?: undefined } | { line: number; row?: undefined; issues: RowIssue[]; text: string };

export type CheckedFile =
  | { readable: false; name: string; issue: FileIssue }
  | {
      readable: true;
      name: string;
      format: BulkFormat;
      /** The rows to post, in file order. */
      rows: RunRow[];
      /** Every line with a row, in order: postable or flagged. */
      lines: CheckedLine[];
      flagged: number;
      /** Unknown columns, ignored (listed once each). */
      ignoredColumns: string[];
    };

/** Checks a dropped file's text: `name` gives its format (`.csv`, `.jsonl`, `.ndjson`). */
export function checkBulkText(name: string, text: string): CheckedFile {
  const format = bulkFormatOf(name);
  if (!format) {
    return { readable: false, name, issue: { line: 1, code: "BAD_FORMAT", message: "a task file is .csv, .jsonl or .ndjson" } };
  }
  const parsed = parseBulkFile(text, {
    format,
    web: true,
    maxRows: MAX_BULK_ROWS,
    maxInstructionsChars: MAX_WEB_BRIEF_CHARS,
    knownCapabilitiesOnly: true,
  });
  if (!parsed.readable) return { readable: false, name, issue: parsed.issue };
  const rows = keyedRows(parsed.rows.map((row) => ({ line: row.line, row })));
  const byLine = new Map<number, RowIssue[]>();
  for (const issue of parsed.errors) byLine.set(issue.line, [...(byLine.get(issue.line) ?? []), issue]);
  const sourceLines = text.split(/\r?\n/);
  const lines: CheckedLine[] = [
    ...rows.map((row) => ({ line: row.line, row })),
    ...[...byLine].map(([line, issues]) => ({ line, issues, text: (sourceLines[line - 1] ?? "").slice(0, 200) })),
  ].sort((a, b) => a.line - b.line);
  return { readable: true, name, format, rows, lines, flagged: byLine.size, ignoredColumns: parsed.ignoredColumns };
}
