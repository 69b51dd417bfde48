/**
 * MCP clients for the tests: the official SDK client over stdio to `market mcp` (the built CLI, its own process) and
 * over Streamable HTTP to the API's /mcp endpoint.
 */
import path from "node:path";
import { readdirSync, existsSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CLI_MAIN } from "../support/cli";

const PAUSED_CLI = path.join(__dirname, "../support/paused-cli.ts");
const ROOT = path.resolve(__dirname, "../..");

export interface ToolCall {
  isError: boolean;
  text: string;
  data: Record<string, unknown>;
  /** The API code of a refusal. */
  code?: string;
}

export type Mcp = Awaited<ReturnType<typeof connect>>;

async function connect<T extends StdioClientTransport | StreamableHTTPClientTransport>(client: Client, transport: T) {
  await client.connect(transport);
  return {
    client,
    transport,
    async call(name: string, args: Record<string, unknown>): Promise<ToolCall> {
      const result = (await client.callTool({ name, arguments: args }, undefined, { timeout: 120_000 })) as {
        isError?: boolean;
        content: Array<{ type: string; text?: string }>;
        structuredContent?: Record<string, unknown>;
      };
      const data = result.structuredContent ?? {};
      const error = data.error as { code?: string } | undefined;
      return {
        isError: result.isError === true,
        text: result.content.map((c) => c.text ?? "").join("\n"),
        data,
        ...(result.isError && error?.code ? { code: error.code } : {}),
      };
    },
    close: () => client.close(),
  };
}

/** `market mcp` over stdio, as an MCP client starts it; with `pauseAfter`, paused after a journaled posting step. */
export function stdioMcp(env: NodeJS.ProcessEnv, options: { pauseAfter?: { step: "funding" | "funded"; ms: number } } = {}) {
  const pause = options.pauseAfter;
  const args = pause
    ? ["-r", require.resolve("ts-node/register/transpile-only"), PAUSED_CLI, pause.step, String(pause.ms), "mcp"]
    : [CLI_MAIN, "mcp"];
  const transport = new StdioClientTransport({
    command: process.execPath,
    args,
    env: (pause ? { ...env, TS_NODE_PROJECT: path.join(ROOT, "tsconfig.json") } : env) as Record<string, string>,
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  return connect(new Client({ name: "market-test", version: "1.0.0" }), transport).then((mcp) => ({ ...mcp, stderr: () => stderr }));
}

/** The API's /mcp endpoint over Streamable HTTP, with an API key (or none) and any other headers (`X-Market-Agent`). */
export function httpMcp(apiUrl: string, apiKey?: string, headers: Record<string, string> = {}) {
  const transport = new StreamableHTTPClientTransport(new URL(`${apiUrl}/mcp`), {
    requestInit: { headers: { ...(apiKey ? { "x-api-key": apiKey } : {}), ...headers } },
  });
  return connect(new Client({ name: "market-test", version: "1.0.0" }), transport);
}

/** The journal files under a `market mcp` state directory (one per idempotencyKey). */
export function journalsUnder(stateDir: string): string[] {
  if (!existsSync(stateDir)) return [];
  return readdirSync(stateDir)
    .map((dir) => path.join(stateDir, dir, "tasks.jsonl.results.csv.journal.jsonl"))
    .filter((file) => existsSync(file));
}
