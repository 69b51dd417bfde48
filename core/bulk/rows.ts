/**
 * One bulk row, from the raw values of its columns to a typed task, applying the defaults and rules of the spec's
 * "Bulk row columns" table. CSV cells arrive as strings, JSON Lines values as JSON; an empty string or null is an
 * empty cell (the default applies).
 */
import { CAPABILITY_TAG_RULE, CAPABILITY_TAGS, checkCapabilities, isCapabilityTag, parseCapabilityList } from "../capabilities";
import { CHAIN_NAMES, isChainName, type ChainName } from "../chains";
import type { Checked } from "../issues";
import { DEFAULT_BULK_DURATION_SECONDS, DEFAULT_ZONE, MAX_UPLOAD_BYTES } from "../limits";
import { parseRawAmount, parseUsdcDecimal } from "../money";
import { checkRoutingSummary, checkZone, parseAgentAddress, parseDuration, parsePrivacy, type Privacy } from "../task-fields";
import { charCount, hasLoneSurrogate } from "../text";
import type { BulkColumn } from "./columns";
import { validateCriteria, type VerificationCriteria } from "../verification/criteria";

export type BulkVerification = "auto" | "manual";

export interface BulkRow {
  /** Line of the file where the row starts. */
  line: number;
  instructions: string;
  amount: bigint;
  durationSeconds: number;
  privacy: Privacy;
  verification: BulkVerification;
  zone: string;
  routingSummary?: string;
  capabilities: string[];
  /** Checksummed address of the only agent that may take the task. */
  target?: string;
  /** A rental: the service rented (its agent is `target`). */
  serviceId?: number;
  /** `auto` rules from the verification_* and pass_threshold columns; absent: the bulk default. */
  criteria?: VerificationCriteria;
  /** CLI: the `instructions_file` the brief was read from, as the row names it. */
  instructionsFile?: string;
  /** The chain to post it on; absent: the run's (whether it is postable is the service's to say, at the run). */
  chain?: ChainName;
}

export type RowIssue = {
  line: number;
  /** The column at fault; absent when the whole row is (a CSV row of the wrong width, a JSON line that is not an object). */
  column?: string;
  code: string;
  message: string;
};

export interface BulkRowOptions {
  /** CLI: capabilities may also be separated by `,`. */
  allowCommaInCapabilities?: boolean;
  /** CLI: reads an `instructions_file` path relative to the task file. Without it the column is unknown. */
  readFile?: (relativePath: string) => string;
  /** Web app: briefs are limited to MAX_WEB_BRIEF_CHARS. Everywhere the encrypted brief must fit one upload. */
  maxInstructionsChars?: number;
  /** Web app: only the known capability tags (CAPABILITY_TAGS, spec "Limits"); elsewhere any well-formed tag. */
  knownCapabilitiesOnly?: boolean;
}

export const BulkRowIssue = {
  INVALID_VALUE: "INVALID_VALUE",
  INSTRUCTIONS_REQUIRED: "INSTRUCTIONS_REQUIRED",
  INSTRUCTIONS_CONFLICT: "INSTRUCTIONS_CONFLICT",
  INSTRUCTIONS_FILE_UNREADABLE: "INSTRUCTIONS_FILE_UNREADABLE",
  /** CLI: the path leaves the task file's folder (absolute, `../`, or a symlink out of it). */
  INSTRUCTIONS_FILE_OUTSIDE: "INSTRUCTIONS_FILE_OUTSIDE",
  INSTRUCTIONS_TOO_LONG: "INSTRUCTIONS_TOO_LONG",
  /** A UTF-16 surrogate without its pair: it would be encrypted or hashed as U+FFFD, alike another brief. */
  LONE_SURROGATE: "LONE_SURROGATE",
  REWARD_REQUIRED: "REWARD_REQUIRED",
  REWARD_AND_AMOUNT: "REWARD_AND_AMOUNT",
  INVALID_VERIFICATION: "INVALID_VERIFICATION",
  INVALID_CAPABILITY: "INVALID_CAPABILITY",
  DUPLICATE_BRIEF: "DUPLICATE_BRIEF",
  /** Web app: a row identical to an earlier one (spec "Bulk run behaviour" 7). */
  DUPLICATE_ROW: "DUPLICATE_ROW",
} as const;

/** Largest id a service can have (ids are 32-bit serials). */
const MAX_SERVICE_ID = 2 ** 31 - 1;

/** AES-GCM adds a 12-byte IV and a 16-byte tag to the brief before upload. */
const ENCRYPTION_OVERHEAD_BYTES = 28;

export type RowValues = ReadonlyMap<BulkColumn, unknown>;

export function normalizeBulkRow(
  line: number,
  values: RowValues,
  options: BulkRowOptions = {},
): { row: BulkRow; issues: [] } | { row?: undefined; issues: RowIssue[] } {
  const issues: RowIssue[] = [];
  const fail = (column: BulkColumn, code: string, message: string) => issues.push({ line, column, code, message });
  const take = <T>(column: BulkColumn, checked: Checked<T>): T | undefined => {
    if (checked.ok) return checked.value;
    fail(column, checked.code, checked.message);
    return undefined;
  };
  const cell = (column: BulkColumn, numbers: "none" | "integer" | "decimal" = "none"): string | undefined => {
    const value = values.get(column);
    if (value === undefined || value === null) return undefined;
    if (typeof value === "string") return value.trim() === "" ? undefined : value;
    if (typeof value === "number" && numbers === "decimal" && Number.isFinite(value)) return String(value);
    if (typeof value === "number" && numbers === "integer" && Number.isSafeInteger(value)) return String(value);
    fail(column, BulkRowIssue.INVALID_VALUE, `${column} must be ${numbers === "none" ? "text" : "text or a number"}`);
    return undefined;
  };

  const inline = cell("instructions");
  const file = cell("instructions_file");
  // A cell of the wrong JSON type has its issue already; "required" on top would only repeat it.
  const instructions = issues.length > 0 ? undefined : readInstructions(inline, file, options, fail);

  const reward = cell("reward", "decimal")?.trim();
  const rawAmount = cell("amount", "integer")?.trim();
  let amount: bigint | undefined;
  if (reward !== undefined && rawAmount !== undefined) {
    fail("amount", BulkRowIssue.REWARD_AND_AMOUNT, "give either reward (USDC) or amount (raw units), not both");
  } else if (reward !== undefined) {
    amount = take("reward", parseUsdcDecimal(reward));
  } else if (rawAmount !== undefined) {
    amount = take("amount", parseRawAmount(rawAmount));
  } else if (!issues.some((issue) => issue.column === "reward" || issue.column === "amount")) {
    fail("reward", BulkRowIssue.REWARD_REQUIRED, "each row needs a reward (USDC, e.g. 2.5) or an amount (raw units)");
  }

  const durationText = cell("duration", "integer")?.trim();
  const durationSeconds = durationText === undefined ? DEFAULT_BULK_DURATION_SECONDS : take("duration", parseDuration(durationText));

  const privacyText = cell("privacy");
  const privacy = privacyText === undefined ? "private" : take("privacy", parsePrivacy(privacyText));

  const verificationText = cell("verification")?.trim().toLowerCase();
  let verification: BulkVerification | undefined = "auto";
  if (verificationText !== undefined) {
    if (verificationText === "auto" || verificationText === "manual") verification = verificationText;
    else {
      verification = undefined;
      fail("verification", BulkRowIssue.INVALID_VERIFICATION, `verification must be auto or manual, got ${JSON.stringify(verificationText)}`);
    }
  }

  const zoneText = cell("zone")?.trim();
  const zone = zoneText === undefined ? DEFAULT_ZONE : take("zone", checkZone(zoneText));

  const summaryText = cell("routing_summary")?.trim();
  const routingSummary = summaryText === undefined ? undefined : take("routing_summary", checkRoutingSummary(summaryText));

  const capabilities = readCapabilities(values.get("capabilities"), options, fail);

  const targetText = cell("target");
  const target = targetText === undefined ? undefined : take("target", parseAgentAddress(targetText));

  const serviceText = cell("service_id", "integer")?.trim();
  let serviceId: number | undefined;
  if (serviceText !== undefined) {
    if (!/^[0-9]{1,10}$/.test(serviceText) || Number(serviceText) < 1 || Number(serviceText) > MAX_SERVICE_ID) {
      fail("service_id", BulkRowIssue.INVALID_VALUE, `service_id must be a service's id (a whole number from 1), got ${JSON.stringify(serviceText)}`);
    } else if (targetText === undefined) {
      fail("service_id", BulkRowIssue.INVALID_VALUE, "service_id needs target: the address of the service's agent");
    } else serviceId = Number(serviceText);
  }

  const criteria = readCriteria(values, verification, cell, fail);

  const chainText = cell("chain")?.trim().toLowerCase();
  let chain: ChainName | undefined;
  if (chainText !== undefined) {
    if (isChainName(chainText)) chain = chainText;
    else fail("chain", BulkRowIssue.INVALID_VALUE, `chain must be one of ${CHAIN_NAMES.join(", ")}, got ${JSON.stringify(chainText)}`);
  }

  if (
    issues.length > 0 ||
    instructions === undefined ||
    amount === undefined ||
    durationSeconds === undefined ||
    privacy === undefined ||
    verification === undefined ||
    zone === undefined ||
    capabilities === undefined
  ) {
    return { issues };
  }
  const row: BulkRow = { line, instructions, amount, durationSeconds, privacy, verification, zone, capabilities };
  if (routingSummary !== undefined) row.routingSummary = routingSummary;
  if (target !== undefined) row.target = target;
  if (serviceId !== undefined) row.serviceId = serviceId;
  if (criteria !== undefined) row.criteria = criteria;
  if (file !== undefined) row.instructionsFile = file.trim();
  if (chain !== undefined) row.chain = chain;
  return { row, issues: [] };
}

/** The column of each criteria key, to name the cell at fault. */
const CRITERIA_COLUMNS: Record<string, BulkColumn> = {
  min_length: "verification_min_length",
  contains_keywords: "verification_keywords",
  regex_pattern: "verification_regex",
  pass_threshold: "pass_threshold",
};

/**
 * The `auto` criteria of the verification columns (keywords separated by `;`, or a JSON list), checked by the same
 * rules as the API's `verificationCriteria`; undefined when none is given. Refused with `manual` verification.
 */
function readCriteria(
  values: RowValues,
  verification: BulkVerification | undefined,
  cell: (column: BulkColumn, numbers?: "none" | "integer" | "decimal") => string | undefined,
  fail: (column: BulkColumn, code: string, message: string) => void,
): VerificationCriteria | undefined {
  const criteria: Record<string, unknown> = {};
  const integer = (column: BulkColumn, key: string) => {
    const text = cell(column, "integer")?.trim();
    if (text === undefined) return;
    if (!/^\d+$/.test(text)) fail(column, BulkRowIssue.INVALID_VERIFICATION, `${column} must be a whole number, got ${JSON.stringify(text)}`);
    else criteria[key] = Number(text);
  };
  integer("verification_min_length", "min_length");
  integer("pass_threshold", "pass_threshold");
  const keywords = values.get("verification_keywords");
  if (Array.isArray(keywords)) criteria.contains_keywords = keywords;
  else {
    const text = cell("verification_keywords");
    if (text !== undefined)
      criteria.contains_keywords = text
        .split(";")
        .map((k) => k.trim())
        .filter((k) => k !== "");
  }
  const regex = cell("verification_regex");
  if (regex !== undefined) criteria.regex_pattern = regex;
  if (Object.keys(criteria).length === 0) return undefined;
  if (verification === "manual") {
    fail("verification", BulkRowIssue.INVALID_VERIFICATION, "verification_* and pass_threshold columns are for auto verification only");
    return undefined;
  }
  const issues = validateCriteria(criteria, "auto");
  for (const issue of issues) {
    const key = issue.field.replace(/^verificationCriteria\./, "").replace(/\[\d+\]$/, "");
    fail(CRITERIA_COLUMNS[key] ?? "verification", issue.code, issue.message);
  }
  return issues.length > 0 ? undefined : criteria;
}

function readInstructions(
  inline: string | undefined,
  file: string | undefined,
  options: BulkRowOptions,
  fail: (column: BulkColumn, code: string, message: string) => void,
): string | undefined {
  let instructions = inline;
  let column: BulkColumn = "instructions";
  if (file !== undefined) {
    column = "instructions_file";
    if (inline !== undefined) {
      fail(column, BulkRowIssue.INSTRUCTIONS_CONFLICT, "give either instructions or instructions_file, not both");
      return undefined;
    }
    if (!options.readFile) {
      fail(column, BulkRowIssue.INSTRUCTIONS_FILE_UNREADABLE, "instructions_file is only read by the CLI");
      return undefined;
    }
    try {
      instructions = options.readFile(file.trim());
    } catch (error) {
      const code = (error as { rowCode?: string }).rowCode ?? BulkRowIssue.INSTRUCTIONS_FILE_UNREADABLE;
      fail(column, code, `cannot read ${file.trim()}: ${(error as Error).message}`);
      return undefined;
    }
  }
  if (instructions === undefined || instructions.trim() === "") {
    fail(column, BulkRowIssue.INSTRUCTIONS_REQUIRED, "each row needs instructions (the brief)");
    return undefined;
  }
  if (hasLoneSurrogate(instructions)) {
    fail(column, BulkRowIssue.LONE_SURROGATE, "instructions hold a UTF-16 surrogate without its pair (not Unicode text)");
    return undefined;
  }
  if (options.maxInstructionsChars !== undefined && charCount(instructions) > options.maxInstructionsChars) {
    fail(column, BulkRowIssue.INSTRUCTIONS_TOO_LONG, `instructions may be at most ${options.maxInstructionsChars} characters`);
    return undefined;
  }
  if (Buffer.byteLength(instructions, "utf8") + ENCRYPTION_OVERHEAD_BYTES > MAX_UPLOAD_BYTES) {
    fail(column, BulkRowIssue.INSTRUCTIONS_TOO_LONG, "instructions do not fit one 10 MB upload");
    return undefined;
  }
  return instructions;
}

function readCapabilities(
  value: unknown,
  options: BulkRowOptions,
  fail: (column: BulkColumn, code: string, message: string) => void,
): string[] | undefined {
  if (value === undefined || value === null || (typeof value === "string" && value.trim() === "")) return [];
  let list;
  if (typeof value === "string") list = parseCapabilityList(value, { allowComma: options.allowCommaInCapabilities ?? false });
  else if (Array.isArray(value) && value.every((entry) => typeof entry === "string")) list = checkCapabilities(value);
  else {
    fail("capabilities", BulkRowIssue.INVALID_VALUE, "capabilities must be text (tags separated by ;) or a list of tags");
    return undefined;
  }
  if (list.invalid.length > 0) {
    fail(
      "capabilities",
      BulkRowIssue.INVALID_CAPABILITY,
      `malformed capability tag${list.invalid.length > 1 ? "s" : ""}: ${list.invalid.join(", ")} (${CAPABILITY_TAG_RULE})`,
    );
    return undefined;
  }
  const unknown = options.knownCapabilitiesOnly ? list.tags.filter((tag) => !isCapabilityTag(tag)) : [];
  if (unknown.length > 0) {
    fail(
      "capabilities",
      BulkRowIssue.INVALID_CAPABILITY,
      `unknown capability tag${unknown.length > 1 ? "s" : ""}: ${unknown.join(", ")} (one of the ${CAPABILITY_TAGS.length} known tags)`,
    );
    return undefined;
  }
  return list.tags;
}
