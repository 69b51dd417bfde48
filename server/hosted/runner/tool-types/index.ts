/**
 * The one place a tool type meets the runner: for each stored tool, the functions the model is told of and the code
 * that runs a call. Each type's code is its own module (HTTP in ../tools.ts, `mcp.ts`, `manual-mcp.ts`, JS Eval and
 * Sandbox in ../sandbox-tools.ts). A sandbox run's answer is redacted (the agent's secrets) like every tool's.
 */
import type { ChatCompletionFunctionTool } from "openai/resources/chat/completions";
import type { StoredTool } from "@market/core/api";
import { callHttpTool, httpToolSpec, MAX_TOOL_WAIT_MS, type ToolRunContext } from "../tools";
import { callMcpTool, mcpToolSpecs } from "./mcp";
import { callManualMcpTool, manualMcpToolSpec } from "./manual-mcp";
import { callSandboxTool, sandboxToolSpec } from "../sandbox-tools";

export type ToolCall = (args: Record<string, unknown>, ctx: ToolRunContext, signal: AbortSignal) => Promise<string>;

export interface Toolset {
  specs: ChatCompletionFunctionTool[];
  /** The code behind each function name the model may call. */
  calls: Map<string, ToolCall>;
}

const callContext = (ctx: ToolRunContext) => ({
  secret: ctx.secret,
  redact: ctx.redact,
  allowPrivateNetworks: ctx.allowPrivateNetworks,
  timeLeft: () => Math.min(MAX_TOOL_WAIT_MS, ctx.deadline - ctx.now()),
});

/** The functions of one stored tool: an MCP server gives one per tool it listed. */
export function toolFunctions(tool: StoredTool): Array<{ spec: ChatCompletionFunctionTool; call: ToolCall }> {
  switch (tool.type) {
    case undefined:
    case "http":
      return [{ spec: httpToolSpec(tool), call: (args, ctx, signal) => callHttpTool(tool, args, ctx, signal) }];
    case "mcp":
      return mcpToolSpecs(tool).map((spec, i) => ({
        spec,
        call: (args, ctx, signal) => callMcpTool(tool, tool.listed[i]!, args, callContext(ctx), signal),
      }));
    case "mcp_manual":
      return [{ spec: manualMcpToolSpec(tool), call: (args, ctx, signal) => callManualMcpTool(tool, args, callContext(ctx), signal) }];
    case "js_eval":
    case "sandbox":
      return [
        {
          spec: sandboxToolSpec(tool),
          call: async (args, ctx, signal) =>
            ctx.sandbox
              ? ctx.redact(await callSandboxTool(ctx.sandbox, ctx.agentId, tool, args, signal))
              : "Error: SANDBOX_UNAVAILABLE: this runner has no sandbox",
        },
      ];
    default: {
      const unknown: never = tool;
      throw new Error(`unknown tool type ${(unknown as { type: string }).type}`);
    }
  }
}

/** The agent's tools as the model sees them, and the code behind each name. */
export function toolset(tools: StoredTool[]): Toolset {
  const specs: ChatCompletionFunctionTool[] = [];
  const calls = new Map<string, ToolCall>();
  for (const tool of tools) {
    for (const { spec, call } of toolFunctions(tool)) {
      specs.push(spec);
      calls.set(spec.function.name, call);
    }
  }
  return { specs, calls };
}
