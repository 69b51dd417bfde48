/**
 * A hosted agent's tools before they are stored, at deploy, at an update and when a skill is installed: each checked
 * by its type's rules, an MCP server's tools listed once (its stored auth header sent), and every name the model will
 * see made unique. Nothing is stored by this module: a refusal here leaves the database as it was.
 */
import { BUILTIN_TOOLS, MAX_TOOL_NAME_CHARS, toolType, type AgentTool, type StoredTool } from "../../core/api";
import { MarketError } from "../../core/errors";
import { privateUrlReason } from "./runner/bounds";
import { authHeaders } from "./runner/tool-types/auth";
import { listMcpTools, McpListFailure } from "./runner/tool-types/mcp";

const invalid = (field: string, message: string) => new MarketError("VALIDATION_FAILED", `${field} ${message}`, { details: [{ field, message }] });

export interface ToolCheckOptions {
  allowPrivateNetworks: boolean;
  /** The agent's tool secrets (an MCP server's listing sends its auth header). */
  secret(name: string): string | undefined;
  /** Field prefix of each tool in refusals, e.g. `body.tools`. */
  field: string;
}

function checkUrl(field: string, url: string, allowPrivateNetworks: boolean) {
  if (allowPrivateNetworks) return;
  const reason = privateUrlReason(url);
  if (reason) throw invalid(field, reason);
}

/** The checks made on a definition's text (no network): names, URLs, parameters and auth. */
export function checkToolDefinition(tool: AgentTool, field: string, allowPrivateNetworks: boolean): void {
  if (tool.name.length > MAX_TOOL_NAME_CHARS)
    throw new MarketError("TOOL_NAME_TOO_LONG", `${field}.name is ${tool.name.length} characters; at most ${MAX_TOOL_NAME_CHARS}.`, {
      details: [{ field: `${field}.name`, message: `at most ${MAX_TOOL_NAME_CHARS} characters` }],
    });
  checkUrl(`${field}.url`, tool.url, allowPrivateNetworks);
  const auth = tool.auth;
  if (auth && auth.type !== "none") {
    if (!auth.secretRef) throw invalid(`${field}.auth.secretRef`, "is required unless the auth type is none");
    if (auth.type === "header" && !auth.keyName) throw invalid(`${field}.auth.keyName`, "is required for auth type header");
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

/** Checks every tool, lists each MCP server once, and refuses clashing names: the tools as they are stored. */
export async function prepareTools(tools: AgentTool[], options: ToolCheckOptions): Promise<StoredTool[]> {
  tools.forEach((tool, i) => checkToolDefinition(tool, `${options.field}.${i}`, options.allowPrivateNetworks));
  const stored: StoredTool[] = [];
  for (const [i, tool] of tools.entries()) {
    if (toolType(tool) === "mcp") stored.push(await listed(tool as AgentTool & { type: "mcp" }, `${options.field}.${i}`, options));
    else stored.push({ ...tool, type: toolType(tool) } as StoredTool);
  }
  checkNames(stored, options.field);
  return stored;
}
