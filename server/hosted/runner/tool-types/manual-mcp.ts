/**
 * The manual MCP type (`mcp_manual`): not the MCP protocol, a POST of `{ "tool": <toolName or name>, "input": ... }`
 * to the URL, with the tool's auth header. `input` is the model's arguments (an object) when the tool declares
 * parameters, else its free-form `input` text. Same fetch as HTTP tools: private networks refused, answers bounded.
 */
import type { ChatCompletionFunctionTool } from "openai/resources/chat/completions";
import type { ManualMcpTool } from "@market/core/api";
import { boundedFetch, truncate } from "../bounds";
import { authHeaders } from "./auth";
import type { McpCallContext } from "./mcp";

const MAX_ANSWER_BYTES = 256 * 1024;

export function manualMcpToolSpec(tool: ManualMcpTool): ChatCompletionFunctionTool {
  const declared = tool.parameters;
  const properties: Record<string, unknown> = {};
  for (const [name, p] of Object.entries(declared?.properties ?? {}))
    properties[name] = { type: p.type, description: p.description, ...(p.enum ? { enum: p.enum } : {}) };
  const freeForm = Object.keys(properties).length === 0;
  if (freeForm) properties.input = { type: "string", description: "The tool's input (JSON or text)." };
  return {
    type: "function",
    function: {
      name: tool.name,
      description: tool.description,
      parameters: { type: "object", properties, required: freeForm ? [] : (declared?.required ?? []), additionalProperties: false },
    },
  };
}

export async function callManualMcpTool(
  tool: ManualMcpTool,
  args: Record<string, unknown>,
  ctx: McpCallContext,
  signal: AbortSignal,
): Promise<string> {
  const headers = authHeaders(tool.auth, ctx.secret);
  if (!headers) return "Error: authentication failed";
  const left = ctx.timeLeft();
  if (left <= 0) return "Error: the task's time budget ran out";
  const declared = Object.keys(tool.parameters?.properties ?? {});
  // Only declared inputs are sent (as with HTTP tools, nothing the model invents goes out).
  const input = declared.length === 0 ? args.input : Object.fromEntries(declared.filter((k) => args[k] !== undefined).map((k) => [k, args[k]]));
  const doFetch = boundedFetch({ maxBytes: MAX_ANSWER_BYTES, allowPrivateNetworks: ctx.allowPrivateNetworks });
  try {
    const response = await doFetch(tool.url, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json", accept: "application/json, text/plain;q=0.9, */*;q=0.1" },
      body: JSON.stringify({ tool: tool.toolName ?? tool.name, input: input ?? null }),
      signal: AbortSignal.any([signal, AbortSignal.timeout(left)]),
    });
    const answer = ctx.redact(await response.text());
    return `HTTP ${response.status}\n${truncate(answer, 6_000)}`;
  } catch (error) {
    return ctx.redact(`Error: the request failed: ${(error as Error).message}`);
  }
}
