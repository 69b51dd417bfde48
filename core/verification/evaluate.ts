/**
 * Automatic verification of a delivered result, the same for the server's finalize, the SDK's preview and the
 * runtime's self-check.
 *
 * Each configured rule (min_length, max_length, contains_keywords, regex_pattern) passes or fails; the score is the
 * percentage of passing rules rounded down (also the on-chain score, 0..100; 100 when no rule is configured). The
 * result passes when score >= pass_threshold (default 100) and it meets the real-content rules (not empty, not a
 * refusal, not an echo of the brief, not a placeholder), which gate the verdict but do not change the score.
 * `reasons` names every failing rule, including failing rules a lower threshold forgave.
 */
import { charCount } from "../text";
import { checkRealContent } from "./content-rules";
import { DEFAULT_PASS_THRESHOLD, isAllowedFlags, type VerificationCriteria } from "./criteria";
import { DEFAULT_REGEX_TIMEOUT_MS, testRegexWithin } from "./regex-run";

export interface EvaluateOptions {
  /** The brief's text, to refuse an output that only repeats it. */
  brief?: string;
  /** Bound for the regex rule; a run that exceeds it counts as not matched. */
  timeoutMs?: number;
}

export interface Verdict {
  passed: boolean;
  score: number;
  reasons: string[];
}

type RuleOutcome = { passed: true } | { passed: false; reason: string };

export function evaluate(output: string, criteria: VerificationCriteria, options: EvaluateOptions = {}): Verdict {
  const outcomes = ruleOutcomes(output, criteria, options.timeoutMs ?? DEFAULT_REGEX_TIMEOUT_MS);
  const passing = outcomes.filter((outcome) => outcome.passed).length;
  const score = outcomes.length === 0 ? 100 : Math.floor((passing * 100) / outcomes.length);
  const reasons = outcomes.flatMap((outcome) => (outcome.passed ? [] : [outcome.reason]));
  const content = checkRealContent(output, options.brief);
  if (content) reasons.unshift(content.reason);
  const threshold = criteria.pass_threshold ?? DEFAULT_PASS_THRESHOLD;
  if (score < threshold) reasons.push(`score ${score} is below the pass threshold ${threshold}`);
  return { passed: content === undefined && score >= threshold, score, reasons };
}

function ruleOutcomes(output: string, criteria: VerificationCriteria, timeoutMs: number): RuleOutcome[] {
  const outcomes: RuleOutcome[] = [];
  const length = charCount(output.trim());
  const { min_length: min, max_length: max, contains_keywords: keywords, regex_pattern: pattern } = criteria;
  if (min !== undefined) {
    outcomes.push(length >= min ? { passed: true } : { passed: false, reason: `output is ${length} characters; at least ${min} required` });
  }
  if (max !== undefined) {
    outcomes.push(length <= max ? { passed: true } : { passed: false, reason: `output is ${length} characters; at most ${max} allowed` });
  }
  if (keywords !== undefined) outcomes.push(keywordOutcome(output, keywords));
  if (pattern !== undefined) outcomes.push(regexOutcome(output, pattern, criteria.regex_flags ?? "", timeoutMs));
  return outcomes;
}

function keywordOutcome(output: string, keywords: readonly string[]): RuleOutcome {
  // Compared in one Unicode form: "café" precomposed or as "cafe" + a combining accent is the same word.
  const haystack = output.normalize("NFKC").toLowerCase();
  const missing = keywords.filter((keyword) => !haystack.includes(keyword.trim().normalize("NFKC").toLowerCase()));
  return missing.length === 0
    ? { passed: true }
    : { passed: false, reason: `output is missing keyword${missing.length > 1 ? "s" : ""}: ${missing.join(", ")}` };
}

function regexOutcome(output: string, pattern: string, flags: string, timeoutMs: number): RuleOutcome {
  let regex: RegExp;
  try {
    if (!isAllowedFlags(flags)) throw new Error(`flags ${JSON.stringify(flags)} are not allowed`);
    regex = new RegExp(pattern, flags);
  } catch (error) {
    return { passed: false, reason: `regex_pattern cannot be used: ${(error as Error).message}` };
  }
  const run = testRegexWithin(regex, output, timeoutMs);
  switch (run.outcome) {
    case "matched":
      return { passed: true };
    case "not_matched":
      return { passed: false, reason: `output does not match the pattern /${pattern}/${flags}` };
    case "timed_out":
      return { passed: false, reason: `pattern /${pattern}/${flags} did not finish within ${timeoutMs} ms; counted as not matched` };
  }
}
