export {
  ALLOWED_REGEX_FLAGS,
  BULK_AUTO_CRITERIA,
  CRITERIA_RULES,
  CriteriaIssue,
  DEFAULT_PASS_THRESHOLD,
  isVerificationMode,
  MAX_KEYWORD_CHARS,
  MAX_KEYWORDS,
  RENTAL_CRITERIA,
  isRentalCriteria,
  validateCriteria,
  VERIFICATION_MODES,
  type CriteriaRule,
  type VerificationCriteria,
  type VerificationMode,
} from "./criteria";
export { evaluate, type EvaluateOptions, type Verdict } from "./evaluate";
export { checkRealContent, isEcho, isPlaceholder, isRefusal, type ContentFailure, type ContentRule } from "./content-rules";
export { findRegexHazard, MAX_REGEX_PATTERN_CHARS, MAX_REGEX_REPEAT_COUNT, type RegexHazard, type RegexHazardKind } from "./regex-safety";
export { DEFAULT_REGEX_TIMEOUT_MS, testRegexWithin, type RegexRun } from "./regex-run";
