/**
 * MCP tools (type `mcp`) through the official `@modelcontextprotocol/sdk` client over Streamable HTTP: a server that
 * answers a plain JSON POST and one that answers with an SSE stream both work. The service lists a server's tools once
 * (deploy, install) and stores them; the running agent calls `tools/call` with the stored auth headers. Every request
 * goes through the same fetch as HTTP tools (private networks refused at connect time, answers bounded).
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { ChatCompletionFunctionTool } from "openai/resources/chat/completions";
import type { McpListedTool, StoredMcpTool } from "@market/core/api";
import { boundedFetch, truncate } from "../bounds";
import { authHeaders } from "./auth";

/** Tools one MCP server may list (more are refused at deploy: the model's tool list stays bounded). */
export const MAX_MCP_LISTED_TOOLS = 50;
/** Largest answer read from an MCP server (bytes), a listing or a call. */
export const MAX_MCP_ANSWER_BYTES = 256 * 1024;
/** Longest a listing waits at deploy or install. */
export const MCP_LIST_TIMEOUT_MS = 15_000;

export interface McpConnectOptions {
  allowPrivateNetworks: boolean;
  signal: AbortSignal;
  timeoutMs: number;
  headers: Record<string, string>;
}

/** Opens a client session to `url`, runs `work`, and closes it (the session is never kept between calls). */
async function withClient<T>(url: string, options: McpConnectOptions, work: (client: Client) => Promise<T>): Promise<T> {
  const fetch = boundedFetch({ maxBytes: MAX_MCP_ANSWER_BYTES, allowPrivateNetworks: options.allowPrivateNetworks });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    fetch,
    requestInit: { headers: options.headers },
    // One attempt: a dropped stream is an error the model (or the owner at deploy) sees, not a retry loop.
    reconnectionOptions: { maxReconnectionDelay: 1_000, initialReconnectionDelay: 1_000, reconnectionDelayGrowFactor: 1, maxRetries: 0 },
  });
  const client = new Client({ name: "market-hosted-agent", version: "1.0.0" });
  const request = { signal: options.signal, timeout: options.timeoutMs };
  try {
    await client.connect(transport, request);
    return await work(client);
  } finally {
    await client.close().catch(() => undefined);
  }
}

/** The name the model calls: the server's name with every character outside [A-Za-z0-9_] as `_`, at most 64. */
export function modelToolName(remote: string): string {
  return remote.replace(/[^A-Za-z0-9_]/g, "_").slice(0, 64);
}

/** Why a listing failed, for the owner (never the secret: only the error's message, redacted by the caller). */
export class McpListFailure extends Error {
  constructor(
    message: string,
    readonly reason: "UNREACHABLE" | "EMPTY" | "TOO_MANY",
  ) {
    super(message);
  }
}

/** Lists the server's tools once (deploy, install): `McpListFailure` when it cannot be reached or lists nothing. */
export async function listMcpTools(
  url: string,
  headers: Record<string, string>,
  options: { allowPrivateNetworks: boolean },
): Promise<McpListedTool[]> {
  let tools: Array<{ name: string; description?: string; inputSchema: Record<string, unknown> }>;
  try {
    tools = await withClient(
      url,
      { ...options, headers, signal: AbortSignal.timeout(MCP_LIST_TIMEOUT_MS), timeoutMs: MCP_LIST_TIMEOUT_MS },
      async (client) => {
        const listed: typeof tools = [];
        // A server without the tools capability has nothing to list (tools/list would be "method not found").
        if (!client.getServerCapabilities()?.tools) return listed;
        let cursor: string | undefined;
        do {
          const page = await client.listTools(cursor ? { cursor } : {}, { timeout: MCP_LIST_TIMEOUT_MS });
          listed.push(...page.tools);
          cursor = page.nextCursor;
        } while (cursor && listed.length <= MAX_MCP_LISTED_TOOLS);
        return listed;
      },
    );
  } catch (error) {
    throw new McpListFailure(`the MCP server at ${url} could not be reached or refused the listing: ${(error as Error).message}`, "UNREACHABLE");
  }
  if (tools.length === 0) throw new McpListFailure(`the MCP server at ${url} lists no tools`, "EMPTY");
  if (tools.length > MAX_MCP_LISTED_TOOLS)
    throw new McpListFailure(`the MCP server at ${url} lists more than ${MAX_MCP_LISTED_TOOLS} tools`, "TOO_MANY");
  return tools.map((t) => ({
    name: modelToolName(t.name),
    remoteName: t.name,
    description: (t.description ?? t.name).slice(0, 2000),
    inputSchema: t.inputSchema,
  }));
}

/** The model's view of each tool the server listed. */
export function mcpToolSpecs(tool: StoredMcpTool): ChatCompletionFunctionTool[] {
  return tool.listed.map((t) => ({
    type: "function",
    function: { name: t.name, description: t.description, parameters: t.inputSchema },
  }));
}

export interface McpCallContext {
  secret(name: string): string | undefined;
  redact(text: string): string;
  allowPrivateNetworks: boolean;
  /** Milliseconds the call may take (the task's budget left, at most the tool wait). */
  timeLeft(): number;
}

/** Calls one listed tool with `tools/call`; the answer's text parts (or its JSON) go back to the model, redacted. */
export async function callMcpTool(
  tool: StoredMcpTool,
  listed: McpListedTool,
  args: Record<string, unknown>,
  ctx: McpCallContext,
  signal: AbortSignal,
): Promise<string> {
  const headers = authHeaders(tool.auth, ctx.secret);
  if (!headers) return "Error: authentication failed";
  const left = ctx.timeLeft();
  if (left <= 0) return "Error: the task's time budget ran out";
  try {
    const result = await withClient(
      tool.url,
      { allowPrivateNetworks: ctx.allowPrivateNetworks, headers, signal: AbortSignal.any([signal, AbortSignal.timeout(left)]), timeoutMs: left },
      (client) => client.callTool({ name: listed.remoteName, arguments: args }, undefined, { timeout: left, signal }),
    );
    const content = Array.isArray(result.content) ? (result.content as Array<{ type: string; text?: string }>) : [];
    const text = content.every((c) => c.type === "text")
      ? content.map((c) => c.text ?? "").join("\n")
      : JSON.stringify(result.structuredContent ?? content);
    // Redacted whole before it is cut (a cut through a secret would leave its first characters).
    const answer = truncate(ctx.redact(text), 6_000);
    return result.isError ? `Error: ${answer}` : answer;
  } catch (error) {
    return ctx.redact(`Error: the MCP call failed: ${(error as Error).message}`);
  }
}
