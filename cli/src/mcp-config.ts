/**
 * `market mcp --print-config`: the MCP client configuration (Claude Desktop's `mcpServers` block and the like) that
 * starts this very `market mcp` from any folder: this Node and this CLI by absolute path, never `npx market`, which
 * works only under the repository (and would look for a public package named `market` elsewhere).
 */
import { existsSync } from "node:fs";
import path from "node:path";

/** What `market mcp` reads from its environment, in the order the config lists it. */
export const MCP_ENV_NAMES = [
  "MARKET_API_URL",
  "MARKET_API_KEY",
  "MARKET_PRIVATE_KEY",
  "MARKET_RPC_ARC",
  "MARKET_ESCROW_ARC",
  "MARKET_RPC_0G",
  "MARKET_ESCROW_0G",
  "MARKET_RPC_BASE",
  "MARKET_ESCROW_BASE",
  "MARKET_MCP_STATE_DIR",
] as const;

const SECRET_PLACEHOLDERS: Partial<Record<(typeof MCP_ENV_NAMES)[number], string>> = {
  MARKET_API_KEY: "sk_... (your API key)",
  MARKET_PRIVATE_KEY: "0x... (the private key of the API key's wallet)",
};

export interface McpClientConfig {
  mcpServers: { market: { command: string; args: string[]; env: Record<string, string> } };
}

/** The built CLI's entry point: this file's sibling once built, or the CLI package's build (cli/dist) when run from the sources. */
export function cliMainPath(): string {
  const sibling = path.join(__dirname, "main.js");
  return existsSync(sibling) ? sibling : path.resolve(__dirname, "../dist/cli/src/main.js");
}

/**
 * The config for the variables set in `env`; the API key and the private key are placeholders unless `includeKeys`
 * (they are secrets: printed only when asked for).
 */
export function mcpClientConfig(env: NodeJS.ProcessEnv, options: { includeKeys?: boolean } = {}): McpClientConfig {
  const vars: Record<string, string> = {};
  for (const name of MCP_ENV_NAMES) {
    const value = env[name]?.trim();
    const placeholder = SECRET_PLACEHOLDERS[name];
    if (placeholder !== undefined && !options.includeKeys) vars[name] = placeholder;
    else if (value) vars[name] = value;
  }
  return { mcpServers: { market: { command: process.execPath, args: [cliMainPath(), "mcp"], env: vars } } };
}
