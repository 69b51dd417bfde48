/**
 * The MCP tools of `market mcp` and the API's remote `/mcp` endpoint (the entry the server imports them through; the
 * SDK's index does not export them: they load TypeBox and the MCP SDK at run time).
 */
export { createMcpServer, TOOLS, type McpSurface } from "./tools";
export { serviceQuotes, canonicalJson, fingerprintOf, type QuoteStore } from "./quotes";
export {
  unsignedPoster,
  checkMcpRows,
  factsOf,
  type Poster,
  type PostSession,
  type PostFacts,
  type PostRunResult,
  type McpRowStatus,
} from "./post-tasks";
