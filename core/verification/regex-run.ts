/**
 * Runs a verification regex against an output with a wall-clock bound.
 *
 * The test runs inside `node:vm` with `timeout`: Node's watchdog thread calls V8's TerminateExecution when the
 * bound passes, and V8's regex engine (irregexp) checks for that interrupt while it backtracks, so a runaway
 * match is stopped and surfaces as ERR_SCRIPT_EXECUTION_TIMEOUT (verified on Node 20.20; the verification tests
 * run `^(a+)+$` against 40 a's and a `!`, which would otherwise run for hours). The regex is compiled outside the
 * context and handed in with the input; the context holds nothing else. It is synchronous: the caller's thread is
 * busy for at most `timeoutMs`.
 */
import vm from "node:vm";

export const DEFAULT_REGEX_TIMEOUT_MS = 100;

export type RegexRun = { outcome: "matched" } | { outcome: "not_matched" } | { outcome: "timed_out" };

const testScript = new vm.Script("regex.test(input)", { filename: "verification-regex" });

export function testRegexWithin(regex: RegExp, input: string, timeoutMs = DEFAULT_REGEX_TIMEOUT_MS): RegexRun {
  // A global or sticky regex carries lastIndex between calls; always start from the beginning.
  regex.lastIndex = 0;
  const context = vm.createContext({ regex, input });
  try {
    const matched = testScript.runInContext(context, { timeout: timeoutMs }) as boolean;
    return { outcome: matched ? "matched" : "not_matched" };
  } catch (error) {
    if ((error as { code?: unknown }).code === "ERR_SCRIPT_EXECUTION_TIMEOUT") return { outcome: "timed_out" };
    throw error;
  }
}
