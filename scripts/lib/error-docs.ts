import {
  ALIAS_REASONS,
  clearName,
  ERROR_CODE_ALIASES,
  ERROR_CODES,
  type ErrorCode,
  type ErrorCodeAlias,
  type ErrorCodeInfo,
} from "@market/core/errors";
import { BulkRowIssue } from "@market/core/bulk";
import { CAPABILITY_TAGS } from "@market/core/capabilities";
import { AmountIssue } from "@market/core/money";
import { TaskFieldIssue } from "@market/core/task-fields";
import { CriteriaIssue } from "@market/core/verification/criteria";

type CodesOf<T extends Record<string, string>> = T[keyof T];

/** What each bulk-row issue means; `INVALID_ROWS` lists them per row in `details` (API) or `body.errors` (SDK, CLI). */
const ROW_ISSUES: Record<keyof typeof BulkRowIssue, string> = {
  INVALID_VALUE: "A cell holds a value of the wrong kind or out of its limits (the message names the rule).",
  INSTRUCTIONS_REQUIRED: "Neither `instructions` nor `instructions_file` is given.",
  INSTRUCTIONS_CONFLICT: "Both `instructions` and `instructions_file` are given.",
  INSTRUCTIONS_FILE_UNREADABLE: "`instructions_file` cannot be read (relative to the task file).",
  INSTRUCTIONS_FILE_OUTSIDE: "`instructions_file` leaves the task file's folder (an absolute path, `../`, or a symlink out of it); it is not read.",
  INSTRUCTIONS_TOO_LONG: "The brief is longer than the limit.",
  LONE_SURROGATE: "The brief holds a UTF-16 surrogate without its pair (not Unicode text: it would be hashed as U+FFFD).",
  REWARD_REQUIRED: "Neither `reward` nor `amount` is given.",
  REWARD_AND_AMOUNT: "Both `reward` and `amount` are given: exactly one.",
  INVALID_VERIFICATION:
    "The verification mode or criteria are refused (e.g. `auto` without a real rule, a regex that can backtrack catastrophically).",
  INVALID_CAPABILITY:
    "A capability tag is malformed: tags are a letter, then letters, digits, `_` or `-`, at most 64 characters (compared without case).",
  DUPLICATE_BRIEF: "The same public brief appears twice in the file.",
  DUPLICATE_ROW: "Web app: the row is identical to an earlier row of the file (the web app posts it once; the CLI posts a private row twice).",
};

/** Field rules shared by the API, the SDK, the CLI and MCP (core/task-fields.ts), as row codes. */
const FIELD_ISSUES: Record<CodesOf<typeof TaskFieldIssue>, string> = {
  DURATION_NOT_INTEGER: "`duration` is not a whole number of seconds.",
  DURATION_OUT_OF_RANGE: "`duration` is outside 3600 to 7776000 seconds (1 hour to 90 days).",
  ZONE_TOO_LONG: "`zone` is longer than 128 characters.",
  ROUTING_SUMMARY_TOO_LONG: "`routing_summary` is longer than 500 characters.",
  INVALID_PRIVACY: "`privacy` is neither `public` nor `private` (any case).",
  INVALID_ADDRESS: "`target` (or a verifier) is not a 0x address of 40 hex characters with a valid checksum, or is the zero address.",
};

/** Amount rules (core/money.ts): `reward` is USDC decimal text, `amount` raw units. */
const AMOUNT_ISSUES: Record<CodesOf<typeof AmountIssue>, string> = {
  AMOUNT_NOT_WHOLE_NUMBER: "`amount` is not a plain whole number of raw units (no sign, decimals, spaces or exponent).",
  AMOUNT_NOT_DECIMAL: "`reward` is not plain decimal text such as `2.5` (no sign, spaces, exponent or thousands separators).",
  AMOUNT_TOO_MANY_DECIMALS: "`reward` has more decimals than the token (6 for USDC); it is refused, never rounded.",
  AMOUNT_NOT_POSITIVE: "The reward or amount is 0.",
  AMOUNT_TOO_LARGE: "The amount is above 2^256-1.",
};

/** Verification criteria rules (core/verification/criteria.ts), for the API's `verificationCriteria` and the bulk columns. */
const CRITERIA_ISSUES: Record<CodesOf<typeof CriteriaIssue>, string> = {
  UNSUPPORTED_VERIFICATION_MODE: "The verification mode is not `auto`, `manual` or `agent` (a bulk row takes `auto` or `manual`).",
  CRITERIA_REQUIRED: "`auto` verification without criteria.",
  CRITERIA_NOT_OBJECT: "The criteria are not an object.",
  CRITERIA_NO_RULE: "No real rule (`min_length`, `max_length`, `contains_keywords`, `regex_pattern`) is given.",
  CRITERIA_UNKNOWN_KEY: "A criteria key the rule engine does not know.",
  CRITERIA_NOT_INTEGER: "A length or `pass_threshold` is not a whole number.",
  CRITERIA_OUT_OF_RANGE: "A length or `pass_threshold` is outside its range (`pass_threshold` 0 to 100).",
  CRITERIA_LENGTH_RANGE_EMPTY: "`max_length` is below `min_length`.",
  CRITERIA_KEYWORDS_NOT_LIST: "`contains_keywords` is not a list (`verification_keywords`: separated by `;`, or a JSON list).",
  CRITERIA_KEYWORDS_EMPTY: "`contains_keywords` is an empty list.",
  CRITERIA_KEYWORD_INVALID: "A keyword is empty or not text.",
  CRITERIA_TOO_MANY_KEYWORDS: "More keywords than the rule engine takes.",
  CRITERIA_REGEX_NOT_STRING: "`regex_pattern` is not text.",
  CRITERIA_REGEX_TOO_LONG: "`regex_pattern` is longer than the rule engine takes.",
  CRITERIA_REGEX_INVALID: "`regex_pattern` does not compile.",
  CRITERIA_REGEX_UNSAFE: "`regex_pattern` could backtrack catastrophically (nested or overlapping repetition).",
  CRITERIA_REGEX_FLAGS_INVALID: "`regex_flags` holds a flag other than the ones allowed, or one twice.",
  CRITERIA_UNSATISFIABLE: "No output can meet the criteria (e.g. `min_length` above the output cap, a keyword longer than `max_length`).",
};

/** docs/errors.md, generated from the one table of codes in core/errors.ts. */
export function errorDocs(): string {
  const rows = Object.entries(ERROR_CODES as Record<string, ErrorCodeInfo>).map(([code, info]) => {
    const status = info.client ? (info.status ? `${info.status} (client)` : "client") : String(info.status);
    const note = info.retryable ? " Retry later." : "";
    const alias = clearName(code as ErrorCode);
    const named = alias ? ` Clear name in code: \`${alias}\`.` : "";
    return `| \`${code}\` | ${status} | ${info.description.replace(/\|/g, "\\|")}${note}${named} |`;
  });
  return [
    "# Error codes",
    "",
    "<!-- Generated by `npm run docs` from core/errors.ts; do not edit by hand. -->",
    "",
    'Every API error answers `{ "success": false, "error": { "code", "message", "reason"?, "details"? } }` with the',
    "status below. Branch on `code`; `message` is for people and may change. `details` names each refused field, row or",
    "batch item. The SDK raises `ApiError` with `status`, `code`, `message` and `body`; codes marked *client* are raised",
    "by the SDK or the CLI before anything is sent.",
    "",
    "| Code | Status | Meaning |",
    "| - | - | - |",
    ...rows,
    "",
    "## Clear names",
    "",
    "Some codes name their case misleadingly. Each has a clear name that the server and clients write in code",
    '(`new MarketError("NOT_WORKER")`, `answeredCode()` in core/errors.ts); the API keeps answering the code it always',
    "answered, which clients branch on and the spec names, so the clear name never appears in an answer.",
    "",
    "| Clear name | Answered code | Why |",
    "| - | - | - |",
    ...(Object.keys(ERROR_CODE_ALIASES) as ErrorCodeAlias[]).map(
      (alias) => `| \`${alias}\` | \`${ERROR_CODE_ALIASES[alias]}\` | ${ALIAS_REASONS[alias].replace(/\|/g, "\\|")} |`,
    ),
    "",
    "## Bulk row issues",
    "",
    "The per-row `code` inside `INVALID_ROWS` (with `line` or `index` and `column`), besides the codes above: a bulk",
    "file's own rules, then the field, amount and verification-criteria rules every surface shares (the API answers the",
    "same codes in `details` when it refuses a field).",
    "",
    "| Code | Meaning |",
    "| - | - |",
    ...[ROW_ISSUES, FIELD_ISSUES, AMOUNT_ISSUES, CRITERIA_ISSUES].flatMap((table) =>
      Object.entries(table).map(([code, meaning]) => `| \`${code}\` | ${meaning.replace(/\|/g, "\\|")} |`),
    ),
    "",
    "## Capability tags",
    "",
    "`requiredCapabilities`, an agent's `capabilities`, and the `capabilities` column take any well-formed tag: a letter,",
    "then letters, digits, `_` or `-`, at most 64 characters, compared without case (`INVALID_CAPABILITY` otherwise).",
    "The 20 known tags, the only ones the web app offers and the ones badges are earned for:",
    CAPABILITY_TAGS.map((tag) => `\`${tag}\``).join(", ") + ".",
    "",
  ].join("\n");
}
