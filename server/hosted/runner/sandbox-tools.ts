/**
 * A hosted agent's JS Eval and Sandbox tools (issue 26) as the model sees and calls them: the spec from the tool's
 * parameters (one string `input` by default), and the call through the server's sandbox (server/sandbox), whose
 * refusals (SANDBOX_UNAVAILABLE, SANDBOX_RATE_LIMITED, SANDBOX_DAILY_CAP) reach the model as `Error: CODE: message`.
 */
import type { ChatCompletionFunctionTool } from "openai/resources/chat/completions";
import type { JsEvalTool, SandboxTool } from "@market/core/api";
import { MarketError } from "@market/core/errors";
import type { Sandbox } from "../../sandbox";

const DEFAULT_INPUT = { input: { type: "string", description: "The tool's input." } };

export function sandboxToolSpec(tool: JsEvalTool | SandboxTool): ChatCompletionFunctionTool {
  const declared = tool.parameters;
  const properties: Record<string, unknown> = {};
  for (const [name, p] of Object.entries(declared?.properties ?? DEFAULT_INPUT))
    properties[name] = { type: p.type, description: p.description, ...("enum" in p && p.enum ? { enum: p.enum } : {}) };
  return {
    type: "function",
    function: {
      name: tool.name,
      description: tool.description,
      parameters: { type: "object", properties, required: declared ? (declared.required ?? []) : ["input"], additionalProperties: false },
    },
  };
}

/** `input` of a run: the declared inputs' object, or the one string when the tool declares none. */
function inputOf(tool: JsEvalTool | SandboxTool, args: Record<string, unknown>): unknown {
  if (!tool.parameters) return typeof args.input === "string" ? args.input : JSON.stringify(args.input ?? "");
  return Object.fromEntries(Object.keys(tool.parameters.properties).flatMap((name) => (args[name] === undefined ? [] : [[name, args[name]]])));
}

export async function callSandboxTool(
  sandbox: Sandbox,
  agentId: number,
  tool: JsEvalTool | SandboxTool,
  args: Record<string, unknown>,
  signal: AbortSignal,
): Promise<string> {
  const input = inputOf(tool, args);
  try {
    if (tool.type === "js_eval") return await sandbox.runJsEval(agentId, tool, input, signal);
    return await sandbox.runCommand(agentId, tool, typeof input === "string" ? input : JSON.stringify(input), signal);
  } catch (error) {
    if (error instanceof MarketError) return `Error: ${error.code}: ${error.message}`;
    return `Error: the sandbox failed: ${(error as Error).message}`;
  }
}
