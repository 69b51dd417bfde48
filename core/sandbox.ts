/**
 * How a Sandbox tool's `{input}` becomes one argument (issue 26). The input never enters the script's text: it is the
 * script's first positional parameter, and each `{input}` placeholder becomes a reference to it that the shell expands
 * as one word (`"$1"`; `$1` inside double quotes). An expansion's result is never parsed again as shell, so `;`, `|`,
 * `$(...)`, backquotes, quotes and newlines in the input stay plain characters. A placeholder inside single quotes
 * would stay literal text, so the command is refused instead.
 */
import { MarketError } from "./errors";

export const INPUT_PLACEHOLDER = "{input}";

/** The command with its placeholders replaced, or why it cannot take its input safely. */
export function substituteInput(command: string): { script: string } | { error: string } {
  let quote: "'" | '"' | null = null;
  let script = "";
  for (let i = 0; i < command.length;) {
    const c = command[i]!;
    if (command.startsWith(INPUT_PLACEHOLDER, i)) {
      if (quote === "'") return { error: "has {input} inside single quotes, where the shell would not expand it" };
      script += quote === '"' ? "$1" : '"$1"';
      i += INPUT_PLACEHOLDER.length;
      continue;
    }
    if (c === "\\" && quote !== "'") {
      // An escaped character (an escaped brace included) is copied as it is.
      script += command.slice(i, i + 2);
      i += 2;
      continue;
    }
    if (c === "'" && quote !== '"') quote = quote === "'" ? null : "'";
    else if (c === '"' && quote !== "'") quote = quote === '"' ? null : '"';
    script += c;
    i += 1;
  }
  if (quote !== null) return { error: `has an unclosed ${quote} quote` };
  return { script };
}

/**
 * JS Eval and Sandbox tools need the hosted sandbox and are never allowed inside a skill (spec "Other tool types"):
 * a skill's tools go through this check, which refuses with SANDBOX_TOOL_IN_SKILL naming the tool's `type` field.
 */
export function refuseSandboxToolsInSkill(tools: ReadonlyArray<{ type?: string }>, field: string): void {
  const i = tools.findIndex((tool) => tool.type === "js_eval" || tool.type === "sandbox");
  if (i < 0) return;
  const message = `is ${tools[i]!.type}: JS Eval and Sandbox tools are never allowed inside a skill`;
  throw new MarketError("SANDBOX_TOOL_IN_SKILL", `${field}.${i}.type ${message}`, { details: [{ field: `${field}.${i}.type`, message }] });
}
