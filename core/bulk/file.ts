/**
 * A whole bulk task file, CSV or JSON Lines, checked before anything is sent (spec: "Bulk run behaviour").
 *
 * A file that cannot be read row by row is refused whole (`readable: false`): CSV syntax, an unknown or repeated
 * column (`BAD_COLUMNS`), no rows, more rows than allowed. Otherwise every row is checked and the good ones are
 * returned with one issue per bad cell; CLI, SDK and MCP refuse the file (`INVALID_ROWS`) if `errors` is not
 * empty, the web app posts the good rows. Core does no I/O: `instructions_file` is read through `readFile`.
 */
import { MAX_BULK_ROWS } from "../limits";
import { parseCsv } from "./csv";
import { columnKey, knownColumns, type BulkColumn } from "./columns";
import { parseJsonLines } from "./jsonl";
import { BulkRowIssue, normalizeBulkRow, type BulkRow, type BulkRowOptions, type RowIssue, type RowValues } from "./rows";

export type BulkFormat = "csv" | "jsonl";

export interface BulkFileOptions extends BulkRowOptions {
  format: BulkFormat;
  /** Most rows accepted: MAX_BULK_ROWS (1,000) by default; MCP passes MAX_MCP_BULK_ROWS (200). */
  maxRows?: number;
  /**
   * The web app's rules (spec "Bulk run behaviour" 7): an unknown column is ignored (listed once in `ignoredColumns`)
   * instead of refusing the file with `BAD_COLUMNS`, and a row identical to an earlier one is refused
   * (`DUPLICATE_ROW`), private or public.
   */
  web?: boolean;
}

export const BulkFileIssue = {
  CSV_UNTERMINATED_QUOTE: "CSV_UNTERMINATED_QUOTE",
  CSV_BAD_QUOTE: "CSV_BAD_QUOTE",
  BAD_COLUMNS: "BAD_COLUMNS",
  EMPTY_FILE: "EMPTY_FILE",
  NO_ROWS: "NO_ROWS",
  TOO_MANY_ROWS: "TOO_MANY_ROWS",
  /** Row-level: a CSV row with more or fewer cells than the header. */
  FIELD_COUNT: "CSV_FIELD_COUNT",
  /** Row-level: a JSON Lines line that does not parse. */
  INVALID_JSON: "INVALID_JSON",
  /** Row-level: a JSON Lines line that is not an object. */
  NOT_AN_OBJECT: "NOT_AN_OBJECT",
} as const;

export type FileIssue = {
  line: number;
  column?: string;
  code: string;
  message: string;
};

export type BulkFileResult =
  | { readable: false; issue: FileIssue }
  | { readable: true; rows: BulkRow[]; errors: RowIssue[]; /** Web: the unknown columns ignored, once each. */ ignoredColumns: string[] };

interface RawRow {
  line: number;
  values?: RowValues;
  issue?: RowIssue;
}

export function parseBulkFile(text: string, options: BulkFileOptions): BulkFileResult {
  const read = options.format === "csv" ? readCsvRows(text, options) : readJsonRows(text, options);
  if ("issue" in read) return { readable: false, issue: read.issue };
  const maxRows = options.maxRows ?? MAX_BULK_ROWS;
  if (read.rows.length === 0) return refuse(1, BulkFileIssue.NO_ROWS, "the file has no task rows");
  if (read.rows.length > maxRows) {
    return refuse(read.rows[maxRows]!.line, BulkFileIssue.TOO_MANY_ROWS, `at most ${maxRows} rows per run; this file has ${read.rows.length}`);
  }

  const raws = options.web ? refuseIdentical(read.rows) : read.rows;
  return { readable: true, ...checkBulkRows(raws, options), ignoredColumns: read.ignored };
}

/** The web app's rule: a row with exactly the values of an earlier row is refused (`DUPLICATE_ROW`). */
function refuseIdentical(rows: readonly RawRow[]): RawRow[] {
  const firstLine = new Map<string, number>();
  return rows.map((raw) => {
    if (raw.issue || !raw.values) return raw;
    const key = JSON.stringify([...raw.values.entries()].filter(([, v]) => v !== undefined && v !== "").sort(([a], [b]) => (a < b ? -1 : 1)));
    const first = firstLine.get(key);
    if (first === undefined) {
      firstLine.set(key, raw.line);
      return raw;
    }
    return {
      line: raw.line,
      issue: { line: raw.line, code: BulkRowIssue.DUPLICATE_ROW, message: `identical to line ${first}; the web app posts a row once` },
    };
  });
}

/**
 * Checks rows already split into column values (from a file, or built by the SDK from objects): each row's cells,
 * then the same public brief twice (`DUPLICATE_BRIEF`; a private brief may repeat). Good rows come back typed, every
 * problem as an issue naming the row's line.
 */
export function checkBulkRows(
  raws: ReadonlyArray<{ line: number; values?: RowValues; issue?: RowIssue }>,
  options: BulkRowOptions = {},
): { rows: BulkRow[]; errors: RowIssue[] } {
  const rows: BulkRow[] = [];
  const errors: RowIssue[] = [];
  const publicBriefLines = new Map<string, number>();
  for (const raw of raws) {
    if (raw.issue) {
      errors.push(raw.issue);
      continue;
    }
    const result = normalizeBulkRow(raw.line, raw.values ?? new Map(), options);
    if (result.row?.privacy === "public") {
      const firstLine = publicBriefLines.get(result.row.instructions);
      if (firstLine !== undefined) {
        errors.push({
          line: raw.line,
          column: "instructions",
          code: BulkRowIssue.DUPLICATE_BRIEF,
          message: `same public brief as line ${firstLine}; a public brief can be listed once`,
        });
        continue;
      }
      publicBriefLines.set(result.row.instructions, raw.line);
    }
    if (result.row) rows.push(result.row);
    else errors.push(...result.issues);
  }
  return { rows, errors };
}

/** The format a task file's name implies: `.csv`, or `.jsonl` / `.ndjson`. */
export function bulkFormatOf(fileName: string): BulkFormat | undefined {
  const lower = fileName.toLowerCase();
  if (lower.endsWith(".csv")) return "csv";
  if (lower.endsWith(".jsonl") || lower.endsWith(".ndjson")) return "jsonl";
  return undefined;
}

type ReadRows = { rows: RawRow[]; ignored: string[] } | { issue: FileIssue };

function readCsvRows(text: string, options: BulkFileOptions): ReadRows {
  const parsed = parseCsv(text);
  if (!parsed.ok) return { issue: { line: parsed.line, code: parsed.code, message: parsed.message } };
  const [header, ...records] = parsed.records;
  if (!header) return { issue: { line: 1, code: BulkFileIssue.EMPTY_FILE, message: "the file is empty" } };
  const known = knownColumns(options.readFile !== undefined);
  // An ignored column (web) keeps its place as `undefined`: its cells are counted, not read.
  const columns: Array<BulkColumn | undefined> = [];
  const ignored: string[] = [];
  for (const name of header.fields) {
    const key = columnKey(name);
    if (options.web && key !== "" && !known.has(key)) {
      if (!ignored.includes(name)) ignored.push(name);
      columns.push(undefined);
      continue;
    }
    const problem = columnProblem(key, name, columns, known);
    if (problem) return { issue: { line: header.line, column: name, code: BulkFileIssue.BAD_COLUMNS, message: problem } };
    columns.push(key as BulkColumn);
  }
  const rows: RawRow[] = [];
  for (const record of records) {
    if (record.fields.every((field) => field.trim() === "")) continue;
    if (record.fields.length !== columns.length) {
      rows.push({
        line: record.line,
        issue: {
          line: record.line,
          code: BulkFileIssue.FIELD_COUNT,
          message: `row has ${record.fields.length} cells; the header has ${columns.length}`,
        },
      });
      continue;
    }
    const values = new Map<BulkColumn, unknown>();
    columns.forEach((column, index) => column && values.set(column, record.fields[index]));
    rows.push({ line: record.line, values });
  }
  return { rows, ignored };
}

function readJsonRows(text: string, options: BulkFileOptions): ReadRows {
  const known = knownColumns(options.readFile !== undefined);
  const rows: RawRow[] = [];
  const ignored: string[] = [];
  for (const entry of parseJsonLines(text)) {
    if (!entry.ok) {
      rows.push({ line: entry.line, issue: { line: entry.line, code: entry.code, message: entry.message } });
      continue;
    }
    const values = new Map<BulkColumn, unknown>();
    const seen: BulkColumn[] = [];
    for (const [name, value] of Object.entries(entry.value)) {
      const key = columnKey(name);
      if (options.web && key !== "" && !known.has(key)) {
        if (!ignored.includes(name)) ignored.push(name);
        continue;
      }
      const problem = columnProblem(key, name, seen, known);
      if (problem) return { issue: { line: entry.line, column: name, code: BulkFileIssue.BAD_COLUMNS, message: problem } };
      seen.push(key as BulkColumn);
      values.set(key as BulkColumn, value);
    }
    rows.push({ line: entry.line, values });
  }
  if (rows.length === 0) {
    return { issue: { line: 1, code: BulkFileIssue.EMPTY_FILE, message: "the file is empty" } };
  }
  return { rows, ignored };
}

function columnProblem(key: string, name: string, seen: ReadonlyArray<string | undefined>, known: ReadonlySet<string>): string | undefined {
  if (key === "") return "a column has no name";
  if (!known.has(key)) {
    const hint = key === "instructions_file" ? " (instructions_file is read by the CLI only)" : "";
    return `unknown column ${JSON.stringify(name)}${hint}`;
  }
  if (seen.includes(key)) return `column ${JSON.stringify(name)} appears twice`;
  return undefined;
}

function refuse(line: number, code: string, message: string): BulkFileResult {
  return { readable: false, issue: { line, code, message } };
}
