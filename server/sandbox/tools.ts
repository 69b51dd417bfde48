/**
 * JS Eval and Sandbox tools (issue 26): what runs in the sandbox for each, and the answer the model sees (the return
 * value or stdout, the exit status, cut at a stated size; never the sandbox's environment or stderr beyond a JS
 * error's message).
 */
import { substituteInput } from "@market/core/sandbox";
import { sandboxNodePath, type SandboxResult } from "./engine";

/** Characters of an answer the model sees; the engine stops reading stdout at `maxOutputBytes` before that. */
export const MAX_ANSWER_CHARS = 6_000;

/**
 * The Node program of a JS Eval run (given to `node -e`): reads `{ code, input }` from stdin, runs `code` as the body
 * of an async function of `input`, and writes `{ ok, value }` or `{ ok: false, error }` as stdout's last line. The
 * function's own console output goes to stderr, which the model does not see.
 */
export const JS_EVAL_PROGRAM = `
const chunks = [];
process.stdin.on("data", (c) => chunks.push(c));
process.stdin.on("end", async () => {
  const { code, input } = JSON.parse(Buffer.concat(chunks).toString("utf8"));
  for (const k of ["log", "info", "warn", "debug", "error"]) console[k] = (...a) => process.stderr.write(a.map(String).join(" ") + "\\n");
  let line;
  try {
    const AsyncFunction = (async () => {}).constructor;
    const value = await new AsyncFunction("input", code)(input);
    line = JSON.stringify({ ok: true, value: value === undefined ? null : value });
  } catch (error) {
    line = JSON.stringify({ ok: false, error: String((error && error.message) || error) });
  }
  process.stdout.write("\\n" + line + "\\n", () => process.exit(0));
});
`;

/** The argv of a JS Eval run; `memoryBytes` bounds V8's heap below the process's data limit. */
export function jsEvalArgv(memoryBytes: number): string[] {
  const heapMb = Math.max(16, Math.floor(memoryBytes / (1024 * 1024) / 2));
  return [sandboxNodePath(), `--max-old-space-size=${heapMb}`, "--v8-pool-size=1", "-e", JS_EVAL_PROGRAM];
}

/**
 * The argv of a Sandbox run: the setup script (if any) runs first, and its failure ends the run; then the command's
 * script runs with the input as its `$1`. Each script is one argument of the runner, never pasted into another.
 */
export function sandboxArgv(setupCommand: string | undefined, command: string, input: string): string[] | { error: string } {
  const substituted = substituteInput(command);
  if ("error" in substituted) return substituted;
  const runner = 'if [ -n "$1" ]; then /bin/sh -c "$1" setup || exit $?; fi; exec /bin/sh -c "$2" sh "$3"';
  return ["/bin/sh", "-c", runner, "run", setupCommand ?? "", substituted.script, input];
}

const cut = (text: string, max = MAX_ANSWER_CHARS) => (text.length > max ? `${text.slice(0, max)}\n[cut at ${max} characters]` : text);

function stopped(result: SandboxResult, timeoutMs: number, maxOutputBytes: number): string | undefined {
  if (result.killed === "timeout") return `the run was stopped after its ${Math.round(timeoutMs / 1000)} s timeout`;
  if (result.killed === "output") return `the run was stopped: its output passed ${maxOutputBytes} bytes`;
  if (result.killed === "aborted") return "the run was stopped: the task ended";
  return undefined;
}

/** The answer of a JS Eval run. */
export function jsEvalAnswer(result: SandboxResult, timeoutMs: number, maxOutputBytes: number): string {
  const why = stopped(result, timeoutMs, maxOutputBytes);
  if (why) return `Error: ${why}`;
  const last = result.stdout.trimEnd().split("\n").pop() ?? "";
  let parsed: { ok: boolean; value?: unknown; error?: string } | undefined;
  try {
    parsed = JSON.parse(last) as typeof parsed;
  } catch {
    parsed = undefined;
  }
  if (parsed?.ok === true) return cut(JSON.stringify(parsed.value));
  if (parsed?.ok === false) return cut(`Error: ${parsed.error ?? "the function threw"}`);
  // No result line: the process died (a memory or CPU limit, or process.exit).
  const status = result.signal ? `signal ${result.signal}` : `exit ${result.exitCode}`;
  const firstError = result.stderr.split("\n").find((l) => /error|heap|memory/i.test(l));
  return cut(`Error: the function ended without a result (${status})${firstError ? `: ${firstError.trim().slice(0, 200)}` : ""}`);
}

/** The answer of a Sandbox run: exit status, then stdout. */
export function sandboxAnswer(result: SandboxResult, timeoutMs: number, maxOutputBytes: number): string {
  const why = stopped(result, timeoutMs, maxOutputBytes);
  const status = why ? `stopped (${why})` : result.signal ? `signal ${result.signal}` : `exit ${result.exitCode}`;
  return cut(`${status}\n${result.stdout}${result.outputCut ? `\n[output cut at ${maxOutputBytes} bytes]` : ""}`);
}
