/**
 * A hosted agent's tools before they are stored, at deploy, at an update and when a skill is installed: each checked
 * by its type's rules, an MCP server's tools listed once (its stored auth header sent), every name the model will see
 * made unique, and the sandbox required when a JS Eval or Sandbox tool is among them. Nothing is stored by this
 * module: a refusal here leaves the database as it was.
 */
import {
  BUILTIN_TOOLS,
  MAX_TOOL_NAME_CHARS,
  isSandboxTool,
  toolType,
  type AgentTool,
  type JsEvalTool,
  type SandboxTool,
  type StoredTool,
} from "@market/core/api";
import { MarketError } from "@market/core/errors";
import { substituteInput } from "@market/core/sandbox";
import type { Sandbox } from "../sandbox";
import { privateUrlReason } from "./runner/bounds";
import { toolOrigin } from "./runner/tools";
import { authHeaders } from "./runner/tool-types/auth";
import { listMcpTools, McpListFailure } from "./runner/tool-types/mcp";

const invalid = (field: string, message: string) => new MarketError("VALIDATION_FAILED", `${field} ${message}`, { details: [{ field, message }] });

export interface ToolCheckOptions {
  allowPrivateNetworks: boolean;
  /** The agent's tool secrets (an MCP server's listing sends its auth header). */
  secret(name: string): string | undefined;
  /** Field prefix of each tool in refusals, e.g. `body.tools`. */
  field: string;
  /** Required (`SANDBOX_UNAVAILABLE` when it does not work) as soon as a JS Eval or Sandbox tool is among the tools. */
  sandbox?: Pick<Sandbox, "requireAvailable">;
}

function checkUrl(field: string, url: string, allowPrivateNetworks: boolean) {
  if (allowPrivateNetworks) return;
  const reason = privateUrlReason(url);
  if (reason) throw invalid(field, reason);
}

/** A JS Eval or Sandbox tool (issue 26): its required inputs are properties, its command takes `{input}` safely. */
function checkSandboxTool(tool: JsEvalTool | SandboxTool, field: string): void {
  const properties = Object.keys(tool.parameters?.properties ?? {});
  for (const required of tool.parameters?.required ?? [])
    if (!properties.includes(required)) throw invalid(`${field}.parameters.required`, `names ${required}, which is not a property`);
  if (tool.type === "sandbox") {
    const substituted = substituteInput(tool.command);
    if ("error" in substituted) throw invalid(`${field}.command`, substituted.error);
  }
}

/** The checks made on a definition's text (no network): names, URLs, parameters and auth. */
export function checkToolDefinition(tool: AgentTool, field: string, allowPrivateNetworks: boolean): void {
  if (tool.name.length > MAX_TOOL_NAME_CHARS)
    throw new MarketError("TOOL_NAME_TOO_LONG", `${field}.name is ${tool.name.length} characters; at most ${MAX_TOOL_NAME_CHARS}.`, {
      details: [{ field: `${field}.name`, message: `at most ${MAX_TOOL_NAME_CHARS} characters` }],
    });
  if (isSandboxTool(tool)) return checkSandboxTool(tool, field);
  checkUrl(`${field}.url`, tool.url, allowPrivateNetworks);
  // Issue 23 item 3: the origin is fixed when the tool is accepted, so a secret goes only where its owner approved.
  // An HTTP URL takes {placeholders} in its path and query only; an MCP server's URL takes none.
  if (toolType(tool) === "http") {
    if (toolOrigin(tool.url) === undefined)
      throw invalid(`${field}.url`, "may have {placeholders} only in its path and query, never in its scheme, host or port");
  } else if (/[{}]/.test(tool.url)) throw invalid(`${field}.url`, "may have no {placeholders}: an MCP server's URL is fixed");
  const auth = tool.auth;
  if (auth && auth.type !== "none") {
    // The spec's rule (issue 25 item 8): the key name and the secret are required unless the type is `none`, `bearer`
    // and `query_param` included (a bearer secret still goes as `Authorization`; a `query_param` one is never sent).
    if (!auth.secretRef) throw invalid(`${field}.auth.secretRef`, "is required unless the auth type is none");
    if (!auth.keyName) throw invalid(`${field}.auth.keyName`, "is required unless the auth type is none");
  }
  if (tool.type === "mcp") return;
  const parameters = tool.parameters;
  const properties = Object.keys(parameters?.properties ?? {});
  for (const required of parameters?.required ?? [])
    if (!properties.includes(required)) throw invalid(`${field}.parameters.required`, `names ${required}, which is not a property`);
  if (tool.type === "mcp_manual") return;
  for (const placeholder of tool.url.match(/\{([^}]+)\}/g) ?? []) {
    const name = placeholder.slice(1, -1);
    if (!properties.includes(name)) throw invalid(`${field}.url`, `has the placeholder ${placeholder} with no matching property`);
  }
  for (const input of Object.keys(tool.paramMapping ?? {}))
    if (!properties.includes(input)) throw invalid(`${field}.paramMapping`, `maps ${input}, which is not a property`);
}

/** Lists an MCP tool's server (its auth header from the agent's secrets): the definition as stored. */
async function listed(tool: AgentTool & { type: "mcp" }, field: string, options: ToolCheckOptions): Promise<StoredTool> {
  const headers = authHeaders(tool.auth, options.secret);
  if (!headers) throw invalid(`${field}.auth.secretRef`, `names ${tool.auth?.secretRef ?? "nothing"}, which is not among the agent's tool secrets`);
  try {
    return { ...tool, listed: await listMcpTools(tool.url, headers, { allowPrivateNetworks: options.allowPrivateNetworks }) };
  } catch (error) {
    if (!(error instanceof McpListFailure)) throw error;
    // The error text never holds the secret: it came from our fetch or the SDK, which never echo request headers.
    const code = error.reason === "UNREACHABLE" ? "MCP_SERVER_UNREACHABLE" : "MCP_SERVER_EMPTY";
    throw new MarketError(code, `${field}: ${error.message}`.slice(0, 1000), { details: [{ field: `${field}.url`, message: error.reason }] });
  }
}

/** The names the model is told of for a stored tool (an MCP server: each tool it listed). */
export function functionNames(tool: StoredTool): string[] {
  return tool.type === "mcp" ? tool.listed.map((t) => t.name) : [tool.name];
}

/** Refuses a name used twice among the tools (an MCP server's listed tools included), or a built-in's name. */
export function checkNames(tools: StoredTool[], field: string): void {
  const builtins: readonly string[] = BUILTIN_TOOLS;
  const seen = new Set<string>(builtins);
  const entries = new Set<string>();
  tools.forEach((tool, i) => {
    if (entries.has(tool.name)) throw invalid(`${field}.${i}.name`, "is used by another tool");
    entries.add(tool.name);
    for (const name of functionNames(tool)) {
      if (seen.has(name))
        throw invalid(`${field}.${i}.name`, builtins.includes(name) ? `${name} is the name of a built-in tool` : `${name} is used by another tool`);
      seen.add(name);
    }
  });
}

/**
 * Checks every tool's text and, when a JS Eval or Sandbox tool is among them, that the sandbox works: never accepted
 * where they could not run as isolated as stated (there is no weaker fallback). No network but the sandbox's probe.
 */
export async function checkTools(tools: AgentTool[], options: Pick<ToolCheckOptions, "allowPrivateNetworks" | "field" | "sandbox">): Promise<void> {
  tools.forEach((tool, i) => checkToolDefinition(tool, `${options.field}.${i}`, options.allowPrivateNetworks));
  if (!tools.some(isSandboxTool)) return;
  if (!options.sandbox) throw new MarketError("SANDBOX_UNAVAILABLE", "JS Eval and Sandbox tools are not accepted here.");
  await options.sandbox.requireAvailable();
}

/** Checks every tool, lists each MCP server once, and refuses clashing names: the tools as they are stored. */
export async function prepareTools(tools: AgentTool[], options: ToolCheckOptions): Promise<StoredTool[]> {
  await checkTools(tools, options);
  const stored: StoredTool[] = [];
  for (const [i, tool] of tools.entries()) {
    if (toolType(tool) === "mcp") stored.push(await listed(tool as AgentTool & { type: "mcp" }, `${options.field}.${i}`, options));
    else stored.push({ ...tool, type: toolType(tool) } as StoredTool);
  }
  checkNames(stored, options.field);
  return stored;
}
