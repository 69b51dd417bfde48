/** The first phase of posting: every row checked by the service's own rules before anything is sent. */
import { clientError, type RowError } from "../errors";
import { checkBulkRows, type BulkColumn, type BulkRow, type RowValues } from "@market/core/bulk";
import { BULK_AUTO_CRITERIA, validateCriteria, type VerificationCriteria } from "@market/core/verification/criteria";
import { parseAgentAddress } from "@market/core/task-fields";
import { MAX_BULK_ROWS } from "@market/core/limits";
import type { PostTaskInput } from "./types";

/** A row checked and typed, before its brief is encrypted or anything is sent. */
export interface CheckedRow {
  index: number;
  row: BulkRow;
  verificationMode: "auto" | "manual" | "agent";
  verificationCriteria?: VerificationCriteria;
  verifierAddress?: string;
}

/**
 * A bulk row core/bulk has checked already (a task file's row, or a call's row from `checkRows`), as the posting phases
 * take it: its verification from the row, the bulk default criteria when `auto` has none. Nothing is checked twice.
 */
export function checkedRow(row: BulkRow, index: number): CheckedRow {
  const criteria = row.criteria ?? (row.verification === "auto" ? { ...BULK_AUTO_CRITERIA } : undefined);
  return { index, row, verificationMode: row.verification, ...(criteria ? { verificationCriteria: criteria } : {}) };
}

/** The column values of an input, so object rows pass the same checks as file rows. */
function columnsOf(input: PostTaskInput): RowValues {
  const values = new Map<BulkColumn, unknown>();
  values.set("instructions", input.instructions);
  if (input.amountRaw !== undefined) values.set("amount", typeof input.amountRaw === "bigint" ? input.amountRaw.toString() : input.amountRaw);
  if (input.reward !== undefined) values.set("reward", input.reward);
  if (input.durationSeconds !== undefined) values.set("duration", input.durationSeconds);
  if (input.privacy !== undefined) values.set("privacy", input.privacy);
  if (input.verificationMode !== undefined && input.verificationMode !== "agent") values.set("verification", input.verificationMode);
  if (input.zone !== undefined) values.set("zone", input.zone);
  if (input.routingSummary !== undefined) values.set("routing_summary", input.routingSummary);
  if (input.capabilities !== undefined) values.set("capabilities", input.capabilities);
  if (input.targetExecutor !== undefined) values.set("target", input.targetExecutor);
  if (input.serviceId !== undefined) values.set("service_id", input.serviceId);
  return values;
}

/**
 * Every row checked before anything is sent: the bulk-row rules of core/bulk, the verification fields, and the same
 * public brief twice. Any bad row refuses the whole call with `INVALID_ROWS` and one entry per problem in
 * `body.errors`.
 */
export function checkRows(inputs: readonly PostTaskInput[], options: { allowAgentMode: boolean; maxRows?: number }): CheckedRow[] {
  const maxRows = options.maxRows ?? MAX_BULK_ROWS;
  if (inputs.length === 0) throw clientError("INVALID_ROWS", "No rows to post.", { errors: [] });
  if (inputs.length > maxRows) {
    throw clientError("INVALID_ROWS", `At most ${maxRows} rows per call; got ${inputs.length}.`, {
      errors: [{ index: maxRows, code: "TOO_MANY_ROWS", message: `at most ${maxRows} rows per call` }],
    });
  }
  const { rows, errors } = checkBulkRows(inputs.map((input, index) => ({ line: index + 1, values: columnsOf(input) })));
  const rowErrors: RowError[] = errors.map((e) => ({
    index: e.line - 1,
    ...(e.column ? { column: e.column } : {}),
    code: e.code,
    message: e.message,
  }));
  const byLine = new Map(rows.map((row) => [row.line, row]));
  const checked: CheckedRow[] = [];
  inputs.forEach((input, index) => {
    const fail = (column: string, code: string, message: string) => rowErrors.push({ index, column, code, message });
    const mode = input.verificationMode ?? "auto";
    if (mode === "agent") {
      if (!options.allowAgentMode) fail("verificationMode", "INVALID_VERIFICATION", "bulk rows are verified auto or manual");
      else if (!input.verifierAddress) fail("verifierAddress", "VERIFIER_REQUIRED", "agent verification needs verifierAddress");
    } else if (input.verifierAddress !== undefined) {
      fail("verifierAddress", "VERIFIER_MODE_MISMATCH", "verifierAddress is only for agent verification");
    }
    let verifierAddress: string | undefined;
    if (input.verifierAddress !== undefined) {
      const parsed = parseAgentAddress(input.verifierAddress);
      if (parsed.ok) verifierAddress = parsed.value;
      else fail("verifierAddress", parsed.code, parsed.message);
    }
    const criteria = input.verificationCriteria ?? (mode === "auto" ? { ...BULK_AUTO_CRITERIA } : undefined);
    for (const issue of validateCriteria(criteria, mode)) fail(issue.field, issue.code, issue.message);
    const row = byLine.get(index + 1);
    if (row)
      checked.push({
        index,
        row,
        verificationMode: mode,
        ...(criteria ? { verificationCriteria: criteria } : {}),
        ...(verifierAddress ? { verifierAddress } : {}),
      });
  });
  if (rowErrors.length > 0) {
    rowErrors.sort((a, b) => a.index - b.index);
    throw clientError("INVALID_ROWS", `${new Set(rowErrors.map((e) => e.index)).size} of ${inputs.length} rows are invalid; nothing was sent.`, {
      errors: rowErrors,
    });
  }
  return checked;
}
