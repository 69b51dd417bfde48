/**
 * A bulk task file (CSV or JSON Lines) read and checked whole before anything is sent: the rules of core/bulk with
 * the CLI's extras (`instructions_file` read relative to the task file, capabilities also separated by `,`). Any
 * problem refuses the whole file.
 */
import { readFileSync, realpathSync } from "node:fs";
import path from "node:path";
import { bulkFormatOf, BulkRowIssue, parseBulkFile, type RowIssue } from "@market/core/bulk";
import { clientError, type RowError } from "../../sdk/src/errors";
import { keyedRows, type RunRow } from "../../sdk/src/posting/journal";

/** One checked row of the file (its key and SDK row made by the engine, sdk/src/posting/journal/rows.ts). */
export type FileRow = RunRow;

/** Reads, parses and checks the task file; refuses it (`BAD_COLUMNS`, `DUPLICATE_BRIEF`, `INVALID_ROWS`) on any problem. */
export function loadTaskFile(filePath: string): FileRow[] {
  const format = bulkFormatOf(filePath);
  if (!format) throw clientError("VALIDATION_FAILED", `--file must name a .csv, .jsonl or .ndjson file, got ${filePath}`);
  let text: string;
  try {
    text = readFileSync(filePath, "utf8");
  } catch (error) {
    throw clientError("VALIDATION_FAILED", `cannot read --file ${filePath}: ${(error as Error).message}`);
  }
  const directory = path.dirname(path.resolve(filePath));
  const parsed = parseBulkFile(text, {
    format,
    allowCommaInCapabilities: true,
    readFile: (relative) => readFileSync(confinedPath(directory, relative), "utf8"),
  });
  if (!parsed.readable) {
    const { issue } = parsed;
    const errors = [rowError(issue)];
    if (issue.code === "BAD_COLUMNS")
      throw clientError("BAD_COLUMNS", "The file's header has a column the CLI does not take; nothing was sent.", { errors });
    throw clientError("INVALID_ROWS", `The file cannot be read as task rows (${issue.code}); nothing was sent.`, { errors });
  }
  if (parsed.errors.length > 0) {
    const errors = [...parsed.errors].sort((a, b) => a.line - b.line).map(rowError);
    const lines = new Set(errors.map((e) => e.line)).size;
    const total = lines + parsed.rows.length;
    // DUPLICATE_BRIEF is the run-level code when repeating a public brief is the only problem.
    const code = errors.every((e) => e.code === BulkRowIssue.DUPLICATE_BRIEF) ? "DUPLICATE_BRIEF" : "INVALID_ROWS";
    throw clientError(code, `${lines} of ${total} rows are invalid; nothing was sent.`, { errors });
  }
  return keyedRows(
    parsed.rows.map((row) => {
      const instructionsFile = row.instructionsFile === undefined ? undefined : confinedPath(directory, row.instructionsFile);
      return { line: row.line, row, ...(instructionsFile ? { instructionsFile } : {}) };
    }),
  );
}

/**
 * The file an `instructions_file` names, refused unless it lies inside the task file's folder once every symlink is
 * resolved: a task file from someone else must not publish local files (keys, credentials) as briefs
 * (docs/security.md). Absolute paths and `../` are refused the same way.
 */
export function confinedPath(directory: string, relative: string): string {
  const outside = () =>
    Object.assign(new Error(`${relative} is outside the task file's folder; only files inside it are read`), {
      rowCode: BulkRowIssue.INSTRUCTIONS_FILE_OUTSIDE,
    });
  const inside = (root: string, target: string) => {
    const within = path.relative(root, target);
    return within !== "" && !within.startsWith("..") && !path.isAbsolute(within);
  };
  if (path.isAbsolute(relative) || !inside(directory, path.resolve(directory, relative))) throw outside();
  const root = realpathSync(directory);
  const target = realpathSync(path.resolve(directory, relative));
  if (!inside(root, target)) throw outside();
  return target;
}

function rowError(issue: RowIssue): RowError {
  return { index: issue.line - 1, line: issue.line, ...(issue.column ? { column: issue.column } : {}), code: issue.code, message: issue.message };
}
