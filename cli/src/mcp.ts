/**
 * `market mcp`: the marketplace's MCP tools over stdio, for an MCP client (Claude Desktop, an agent framework...)
 * started as `npx market mcp`. Configured like every command by the environment; the private key signs locally
 * behind the SDK's transaction guard and never leaves this process. The API key's wallet is checked against the
 * private key's before anything else (`OWNER_MISMATCH`). stdout carries the protocol only; notes go to stderr.
 */
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { MarketClient } from "../../sdk/src/client";
import { serviceQuotes } from "../../sdk/src/mcp/quotes";
import { createMcpServer } from "../../sdk/src/mcp/tools";
import { clientOptions, type CliConfig } from "./config";
import { defaultStateDir, journaledPoster } from "./mcp-poster";
import type { PostTasksHooks } from "./post-tasks";
import type { Terminal } from "./terminal";

export interface McpFlags {
  stateDir?: string;
}

export async function mcpCommand(flags: McpFlags, config: CliConfig, terminal: Terminal, hooks: PostTasksHooks = {}): Promise<number> {
  const options = clientOptions(config, { signs: true });
  const client = new MarketClient(options);
  await client.requireOwnKey(options.executor!.privateKey);
  const stateDir = flags.stateDir ?? (process.env.MARKET_MCP_STATE_DIR?.trim() || defaultStateDir());
  // Anything the posting engine says goes to stderr: stdout is the protocol's.
  const quiet: Terminal = { ...terminal, say: (line = "") => terminal.note(line), data: () => {}, interactive: false };
  const server = createMcpServer({
    client,
    quotes: serviceQuotes(client.http),
    poster: journaledPoster(config, { stateDir, terminal: quiet, hooks }),
    signs: true,
  });
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    transport.onclose = resolve;
    process.stdin.once("end", resolve);
  });
  await server.connect(transport);
  terminal.note(`market mcp: serving ${options.baseUrl} as ${await client.whoami()} on stdio`);
  await closed;
  await server.close();
  return 0;
}
