/**
 * Verification criteria of an `auto` task: their shape, the check run when a task is posted, and the presets
 * used by rentals and bulk rows.
 */
import type { Issue } from "../issues";
import { MAX_OUTPUT_CHARS } from "../limits";
import { charCount } from "../text";
import { findRegexHazard, MAX_REGEX_PATTERN_CHARS } from "./regex-safety";
import { leastMatch } from "./regex-length";

export interface VerificationCriteria {
  /** Least number of characters (Unicode code points) of the trimmed output. */
  min_length?: number;
  /** Most number of characters (Unicode code points) of the trimmed output. */
  max_length?: number;
  /** Every keyword must appear in the output, ignoring case. One rule, however many keywords. */
  contains_keywords?: string[];
  /** A JavaScript regular expression the output must match somewhere (anchor it with ^...$ for the whole). */
  regex_pattern?: string;
  /** Flags for `regex_pattern`, any of `i`, `m`, `s`, `u`. */
  regex_flags?: string;
  /** Least score (percentage of the rules above that pass) for the result to pass. Default 100: every rule. */
  pass_threshold?: number;
}

export const VERIFICATION_MODES = ["auto", "manual", "agent"] as const;
export type VerificationMode = (typeof VERIFICATION_MODES)[number];

/** The rules a score is taken over; `regex_flags` and `pass_threshold` only tune them. */
export const CRITERIA_RULES = ["min_length", "max_length", "contains_keywords", "regex_pattern"] as const;
export type CriteriaRule = (typeof CRITERIA_RULES)[number];

export const DEFAULT_PASS_THRESHOLD = 100;
export const MAX_KEYWORDS = 50;
export const MAX_KEYWORD_CHARS = 200;
export const ALLOWED_REGEX_FLAGS = "imsu";

/** Rentals: at least 20 characters; the real-content rules add "not a refusal". */
export const RENTAL_CRITERIA: Readonly<VerificationCriteria> = Object.freeze({ min_length: 20 });

/** Whether criteria are exactly a rental's (spec "Limits": a rental's result is at least 20 characters and not a refusal). */
export function isRentalCriteria(criteria: unknown): boolean {
  if (criteria === null || typeof criteria !== "object" || Array.isArray(criteria)) return false;
  const record = criteria as Record<string, unknown>;
  const expected = Object.entries(RENTAL_CRITERIA);
  return Object.keys(record).length === expected.length && expected.every(([key, value]) => record[key] === value);
}

/** Bulk rows posted with `verification` = `auto`. */
export const BULK_AUTO_CRITERIA: Readonly<VerificationCriteria> = Object.freeze({ min_length: 10, pass_threshold: 60 });

export const CriteriaIssue = {
  UNSUPPORTED_MODE: "UNSUPPORTED_VERIFICATION_MODE",
  REQUIRED: "CRITERIA_REQUIRED",
  NOT_OBJECT: "CRITERIA_NOT_OBJECT",
  NO_RULE: "CRITERIA_NO_RULE",
  UNKNOWN_KEY: "CRITERIA_UNKNOWN_KEY",
  NOT_INTEGER: "CRITERIA_NOT_INTEGER",
  OUT_OF_RANGE: "CRITERIA_OUT_OF_RANGE",
  LENGTH_RANGE_EMPTY: "CRITERIA_LENGTH_RANGE_EMPTY",
  KEYWORDS_NOT_LIST: "CRITERIA_KEYWORDS_NOT_LIST",
  KEYWORDS_EMPTY: "CRITERIA_KEYWORDS_EMPTY",
  KEYWORD_INVALID: "CRITERIA_KEYWORD_INVALID",
  TOO_MANY_KEYWORDS: "CRITERIA_TOO_MANY_KEYWORDS",
  REGEX_NOT_STRING: "CRITERIA_REGEX_NOT_STRING",
  REGEX_TOO_LONG: "CRITERIA_REGEX_TOO_LONG",
  REGEX_INVALID: "CRITERIA_REGEX_INVALID",
  REGEX_UNSAFE: "CRITERIA_REGEX_UNSAFE",
  REGEX_FLAGS_INVALID: "CRITERIA_REGEX_FLAGS_INVALID",
  UNSATISFIABLE: "CRITERIA_UNSATISFIABLE",
} as const;

const KNOWN_KEYS: ReadonlySet<string> = new Set([...CRITERIA_RULES, "regex_flags", "pass_threshold"]);

export function isVerificationMode(value: unknown): value is VerificationMode {
  return typeof value === "string" && (VERIFICATION_MODES as readonly string[]).includes(value);
}

/**
 * Checks criteria sent with a task (untrusted JSON). For `auto` they are required and need at least one rule;
 * for `manual` and `agent` they are optional, but checked the same way when present. Empty list: accepted.
 * Issue fields are `verificationCriteria.<key>` (or `verificationCriteria` / `verificationMode`).
 */
export function validateCriteria(criteria: unknown, mode: string): Issue[] {
  if (!isVerificationMode(mode)) {
    return [
      issue("verificationMode", CriteriaIssue.UNSUPPORTED_MODE, `verification mode must be auto, manual or agent, got ${JSON.stringify(mode)}`),
    ];
  }
  if (criteria === undefined || criteria === null) {
    return mode === "auto" ? [issue("verificationCriteria", CriteriaIssue.REQUIRED, "auto verification needs criteria with at least one rule")] : [];
  }
  if (typeof criteria !== "object" || Array.isArray(criteria)) {
    return [issue("verificationCriteria", CriteriaIssue.NOT_OBJECT, "verification criteria must be an object")];
  }
  const record = criteria as Record<string, unknown>;
  const issues: Issue[] = [];
  for (const key of Object.keys(record)) {
    if (!KNOWN_KEYS.has(key)) {
      issues.push(issue(key, CriteriaIssue.UNKNOWN_KEY, `unknown criteria key ${JSON.stringify(key)}`));
    }
  }
  checkLength(record, "min_length", 1, issues);
  checkLength(record, "max_length", 1, issues);
  const { min_length: min, max_length: max } = record;
  if (typeof min === "number" && typeof max === "number" && Number.isSafeInteger(min) && Number.isSafeInteger(max) && min > max) {
    issues.push(issue("max_length", CriteriaIssue.LENGTH_RANGE_EMPTY, `max_length ${max} is below min_length ${min}`));
  }
  checkKeywords(record.contains_keywords, issues);
  checkRegex(record.regex_pattern, record.regex_flags, issues);
  checkThreshold(record.pass_threshold, issues);
  if (issues.length === 0) issues.push(...unsatisfiable(record));
  if (mode === "auto" && !CRITERIA_RULES.some((rule) => record[rule] !== undefined)) {
    issues.push(
      issue(
        "verificationCriteria",
        CriteriaIssue.NO_RULE,
        "auto verification needs at least one rule: min_length, max_length, contains_keywords or regex_pattern",
      ),
    );
  }
  return issues;
}

/**
 * Rules no deliverable output can pass, when they alone keep the best possible score below the pass threshold (a
 * poster's way to fail an agent's rounds on purpose: docs/security.md). Decided from the rules alone:
 * - a rule that always fails: `min_length` above the output cap (500,000), a `regex_pattern` that can match nothing
 *   (an empty class) or whose shortest match is longer than the output cap;
 * - rules that fail with `max_length`: a keyword longer than it, a `regex_pattern` whose shortest match holds more
 *   characters that trimming cannot remove than it allows (one of them or `max_length` fails, so they cost one rule).
 * `min_length` above `max_length` is refused on its own. Not decided: a regex that an anchored length or another
 * rule rules out. The worker runtime skips such tasks too.
 */
export function unsatisfiable(criteria: VerificationCriteria): Issue[] {
  const failing: Issue[] = [];
  const withMax: Issue[] = [];
  const { min_length: min, max_length: max, contains_keywords: keywords, regex_pattern: pattern } = criteria;
  if (min !== undefined && min > MAX_OUTPUT_CHARS) {
    failing.push(issue("min_length", CriteriaIssue.UNSATISFIABLE, `min_length ${min} is above the ${MAX_OUTPUT_CHARS}-character output cap`));
  }
  if (max !== undefined && keywords !== undefined) {
    const tooLong = keywords.findIndex((keyword) => charCount(keyword.trim()) > max);
    if (tooLong >= 0) {
      withMax.push(issue(`contains_keywords[${tooLong}]`, CriteriaIssue.UNSATISFIABLE, `keyword ${tooLong + 1} is longer than max_length ${max}`));
    }
  }
  const least = pattern === undefined ? undefined : leastMatch(pattern, criteria.regex_flags ?? "");
  if (least && least.chars === Infinity) {
    failing.push(issue("regex_pattern", CriteriaIssue.UNSATISFIABLE, "regex_pattern can match nothing (it needs an empty character class)"));
  } else if (least && least.chars > MAX_OUTPUT_CHARS) {
    failing.push(
      issue(
        "regex_pattern",
        CriteriaIssue.UNSATISFIABLE,
        `regex_pattern needs at least ${least.chars} characters; the output cap is ${MAX_OUTPUT_CHARS}`,
      ),
    );
  } else if (least && max !== undefined && least.solid > max) {
    withMax.push(issue("regex_pattern", CriteriaIssue.UNSATISFIABLE, `regex_pattern needs at least ${least.solid} characters; max_length is ${max}`));
  }
  if (failing.length === 0 && withMax.length === 0) return [];
  const rules = CRITERIA_RULES.filter((rule) => criteria[rule] !== undefined).length;
  // Rules at odds with max_length: failing max_length alone satisfies all of them.
  const best = Math.floor(((rules - failing.length - Math.min(1, withMax.length)) * 100) / rules);
  return best < (criteria.pass_threshold ?? DEFAULT_PASS_THRESHOLD) ? [...failing, ...withMax] : [];
}

function checkLength(record: Record<string, unknown>, key: "min_length" | "max_length", least: number, issues: Issue[]): void {
  const value = record[key];
  if (value === undefined) return;
  if (typeof value !== "number" || !Number.isSafeInteger(value)) {
    issues.push(issue(key, CriteriaIssue.NOT_INTEGER, `${key} must be a whole number`));
  } else if (value < least) {
    issues.push(issue(key, CriteriaIssue.OUT_OF_RANGE, `${key} must be at least ${least}`));
  }
}

function checkKeywords(value: unknown, issues: Issue[]): void {
  if (value === undefined) return;
  const field = "contains_keywords";
  if (!Array.isArray(value)) {
    issues.push(issue(field, CriteriaIssue.KEYWORDS_NOT_LIST, "contains_keywords must be a list of strings"));
    return;
  }
  if (value.length === 0) {
    issues.push(issue(field, CriteriaIssue.KEYWORDS_EMPTY, "contains_keywords must list at least one keyword"));
    return;
  }
  if (value.length > MAX_KEYWORDS) {
    issues.push(issue(field, CriteriaIssue.TOO_MANY_KEYWORDS, `contains_keywords may list at most ${MAX_KEYWORDS} keywords`));
  }
  value.forEach((keyword: unknown, index) => {
    if (typeof keyword !== "string" || keyword.trim() === "" || keyword.length > MAX_KEYWORD_CHARS) {
      issues.push(
        issue(`${field}[${index}]`, CriteriaIssue.KEYWORD_INVALID, `each keyword must be non-blank text of at most ${MAX_KEYWORD_CHARS} characters`),
      );
    }
  });
}

function checkRegex(pattern: unknown, flags: unknown, issues: Issue[]): void {
  let flagText = "";
  if (flags !== undefined) {
    if (typeof flags !== "string" || !isAllowedFlags(flags)) {
      issues.push(issue("regex_flags", CriteriaIssue.REGEX_FLAGS_INVALID, `regex_flags may contain each of "${ALLOWED_REGEX_FLAGS}" once`));
      return;
    }
    if (pattern === undefined) {
      issues.push(issue("regex_flags", CriteriaIssue.REGEX_FLAGS_INVALID, "regex_flags needs a regex_pattern"));
      return;
    }
    flagText = flags;
  }
  if (pattern === undefined) return;
  const field = "regex_pattern";
  if (typeof pattern !== "string" || pattern === "") {
    issues.push(issue(field, CriteriaIssue.REGEX_NOT_STRING, "regex_pattern must be a non-empty string"));
    return;
  }
  if (pattern.length > MAX_REGEX_PATTERN_CHARS) {
    issues.push(issue(field, CriteriaIssue.REGEX_TOO_LONG, `regex_pattern may be at most ${MAX_REGEX_PATTERN_CHARS} characters`));
    return;
  }
  try {
    new RegExp(pattern, flagText);
  } catch (error) {
    issues.push(issue(field, CriteriaIssue.REGEX_INVALID, `regex_pattern does not compile: ${(error as Error).message}`));
    return;
  }
  const hazard = findRegexHazard(pattern, flagText);
  if (hazard) {
    issues.push(issue(field, CriteriaIssue.REGEX_UNSAFE, `regex_pattern could run for a very long time: ${hazard.message}`));
  }
}

function checkThreshold(value: unknown, issues: Issue[]): void {
  if (value === undefined) return;
  if (typeof value !== "number" || !Number.isSafeInteger(value)) {
    issues.push(issue("pass_threshold", CriteriaIssue.NOT_INTEGER, "pass_threshold must be a whole number"));
  } else if (value < 0 || value > 100) {
    issues.push(issue("pass_threshold", CriteriaIssue.OUT_OF_RANGE, "pass_threshold must be between 0 and 100"));
  }
}

export function isAllowedFlags(flags: string): boolean {
  return [...flags].every((flag, index) => ALLOWED_REGEX_FLAGS.includes(flag) && flags.indexOf(flag) === index);
}

function issue(key: string, code: string, message: string): Issue {
  const field = key === "verificationMode" || key === "verificationCriteria" ? key : `verificationCriteria.${key}`;
  return { field, code, message };
}
