/**
 * `market mcp`: the marketplace's MCP tools over stdio, for an MCP client (Claude Desktop, an agent framework...)
 * started as `npx market mcp`. Configured like every command by the environment; the private key signs locally
 * behind the SDK's transaction guard and never leaves this process. The API key's wallet is checked against the
 * private key's before anything else (`OWNER_MISMATCH`). stdout carries the protocol only; notes go to stderr.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import path from "node:path";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { MarketClient } from "../../sdk/src/client";
import { serviceQuotes } from "../../sdk/src/mcp/quotes";
import { createMcpServer } from "../../sdk/src/mcp/tools";
import { callId, callPoster, type CallStore, type PostTasksHooks } from "../../sdk/src/posting/journal";
import { clientOptions, type CliConfig } from "./config";
import { fileJournal, journalPathFor } from "./journal";
import { openFundedIndex } from "./funded-index";
import { resultsPathFor } from "./run";
import type { Terminal } from "./terminal";

/** Default state directory of `market mcp` (MARKET_MCP_STATE_DIR overrides it). */
export const defaultStateDir = () => path.join(homedir(), ".market", "mcp");

/** The directory of one idempotencyKey's call of one wallet, under the state directory. */
export function runDirectory(stateDir: string, wallet: string, idempotencyKey: string): string {
  return path.join(stateDir, callId(wallet, idempotencyKey));
}

/**
 * `post_tasks`' call stores of `market mcp`: each idempotencyKey (per wallet) has a directory under the state directory
 * holding the fingerprint of the call's rows (`tasks.jsonl`) and its journal file beside it (journal.ts), where every
 * version of `market mcp` kept them.
 */
export function fileCallStores(stateDir: string): (wallet: string, idempotencyKey: string) => CallStore {
  return (wallet, idempotencyKey) => {
    const dir = runDirectory(stateDir, wallet, idempotencyKey);
    const rows = path.join(dir, "tasks.jsonl");
    return {
      name: rows,
      journal: fileJournal(journalPathFor(resultsPathFor(rows))),
      rows: () => Promise.resolve(existsSync(rows) ? readFileSync(rows, "utf8") : undefined),
      setRows(fingerprint) {
        mkdirSync(dir, { recursive: true, mode: 0o700 });
        writeFileSync(rows, fingerprint);
        return Promise.resolve();
      },
    };
  };
}

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
    poster: callPoster({
      client: () => new MarketClient(options),
      privateKey: options.executor!.privateKey,
      api: config.apiUrl,
      store: fileCallStores(stateDir),
      funded: (scope) => openFundedIndex(config.stateDir, scope),
      reporter: quiet,
      hooks,
    }),
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
