/**
 * MCP on the service: the quote store both MCP surfaces share (POST /api/v1/mcp/quotes, .../redeem; its routes in
 * quote-routes.ts), and the remote MCP endpoint `POST /mcp` (Streamable HTTP, stateless, JSON answers) serving the same
 * tools as `market mcp` (sdk/src/mcp/tools.ts). The endpoint needs an `sk_` API key (`INVALID_TOKEN` otherwise). Its
 * tools call this API in-process as that key (`app.inject`, keeping the caller's address for rate limits), so every
 * owner check and limit of the routes applies unchanged. The service never holds a self-run wallet's key: what needs
 * its signature (paying, cancelling, claiming) answers `USE_LOCAL_MCP`; quotes, polling and bidding work fully. With
 * `X-Market-Agent: <id>` the owner's key acts as that hosted agent's custodied wallet, which the service signs for
 * (custody.ts).
 */
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { InjectOptions, LightMyRequestResponse } from "fastify";
import { Type } from "@sinclair/typebox";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { Authenticate, Principal } from "../auth";
import type { ChainRegistry } from "../chains";
import { chainCall } from "../chains";
import { presentedCredential } from "../http/credentials";
import { errorResponses } from "../http/schemas";
import { AGENT_HEADER, agentIdOf, custodySurface, type CustodyDeps } from "./custody";
import { MarketError } from "@market/core/errors";
import { loggableError } from "../http/errors";
import { IERC20__factory } from "../../typechain-types/factories/@openzeppelin/contracts/token/ERC20/IERC20__factory";
import { MarketClient, type TaskWatch } from "../../sdk/src";
import { createMcpServer, serviceQuotes, TOOLS, unsignedPoster, type McpSurface } from "../../sdk/src/mcp";

export { createQuoteStore, type QuoteStore } from "./quotes";
export { quoteRoutes, QUOTES_PREFIX } from "./quote-routes";
export type { CustodyDeps } from "./custody";

/** The app's own `inject`, to call the API in-process. */
export type Inject = (options: InjectOptions) => Promise<LightMyRequestResponse>;

const API_KEY_PREFIX = "sk_";
const erc20 = IERC20__factory.createInterface();

/** The base URL the tools' in-process clients call (never resolved: `injectFetch` keeps its path only). */
const INTERNAL_API = "http://mcp.internal";

/** One JSON-RPC message (request, notification or response) or a batch: the MCP SDK reads the rest. */
const JsonRpcMessage = Type.Object({ jsonrpc: Type.Literal("2.0") }, { additionalProperties: true });
const McpBody = Type.Union([JsonRpcMessage, Type.Array(JsonRpcMessage, { minItems: 1, maxItems: 50 })], {
  description: "A JSON-RPC 2.0 message of the MCP protocol (Streamable HTTP), or a batch of them.",
});

/** The event stream never ends: `inject` would wait for it forever. Tools wait on `watchTask` instead. */
const STREAM_PATH = "/api/v1/events/stream";

/** `fetch` over `inject`: the SDK client of a tool calls this API in-process, from the caller's address. */
function injectFetch(inject: Inject, remoteAddress: string): typeof fetch {
  return (async (input: string | URL, init: RequestInit = {}) => {
    const url = new URL(String(input));
    if (url.pathname === STREAM_PATH) {
      const refusal = { success: false, error: { code: "NOT_FOUND", message: "No event stream in-process." } };
      return new Response(JSON.stringify(refusal), { status: 404, headers: { "content-type": "application/json" } });
    }
    const answer = await inject({
      method: init.method ?? "GET",
      url: `${url.pathname}${url.search}`,
      headers: init.headers as Record<string, string>,
      ...(typeof init.body === "string" ? { payload: init.body } : {}),
      remoteAddress,
    });
    const empty = answer.statusCode === 204 || answer.statusCode === 304;
    return new Response(empty ? null : answer.body, {
      status: answer.statusCode,
      headers: { "content-type": String(answer.headers["content-type"] ?? "application/json") },
    });
  }) as typeof fetch;
}

export const mcpRoutes: FastifyPluginAsyncTypebox<{
  auth: Authenticate;
  chains: ChainRegistry;
  inject: Inject;
  /** Hosted agents' custodied wallets, for their owners (`X-Market-Agent`). */
  custody: CustodyDeps;
  /** A task's events as the caller sees them, for the tools that wait (server/events/watch.ts). */
  watchTask?: (principal: Principal, taskHash: string, chain: string) => Promise<TaskWatch>;
}> = async (app, { auth, chains, inject, custody, watchTask }) => {
  /** The API key's wallet's settlement-token balance and allowance to the escrow, for the remote quote. */
  async function readWallet(chainName: string, wallet: string) {
    const chain = chains.require(chainName);
    const read = (data: string) => chainCall(() => chain.provider.call({ to: chain.config.token, data })).then(BigInt);
    const [balance, allowance] = await Promise.all([
      read(erc20.encodeFunctionData("balanceOf", [wallet])),
      read(erc20.encodeFunctionData("allowance", [wallet, chain.config.escrow])),
    ]);
    return { balance, allowance };
  }

  // Streamable HTTP: a client opens a GET stream for server-initiated messages, or ends its session with DELETE. This
  // endpoint is stateless and answers each POST in full, so both get 405 (the transport's spec), never 404.
  for (const method of ["GET", "DELETE"] as const) {
    app.route({
      method,
      url: "/mcp",
      schema: {
        tags: ["mcp"],
        summary: `Remote MCP endpoint: ${method} is not served (405; the endpoint is stateless, POST only)`,
        response: { ...errorResponses(405) },
      },
      handler: async (_request, reply) => {
        void reply.header("allow", "POST");
        throw new MarketError("METHOD_NOT_ALLOWED");
      },
    });
  }

  app.post(
    "/mcp",
    {
      schema: {
        tags: ["mcp"],
        summary: "Remote MCP endpoint (Streamable HTTP): the marketplace's MCP tools for an API key",
        description:
          "Stateless Streamable HTTP: each POST carries JSON-RPC messages and is answered with JSON. Needs `X-API-Key: sk_...` " +
          "(`INVALID_TOKEN` otherwise). Tools that must be signed by a self-run wallet answer `USE_LOCAL_MCP`: run `market mcp`. " +
          "With `X-Market-Agent: <id>`, the key's account acts as that hosted agent's wallet (its owner only: `NOT_AGENT_OWNER`), which the " +
          "service signs for while the agent is stopped (`AGENT_RUNNING` otherwise).",
        security: [{ apiKey: [] }],
        body: McpBody,
        response: {
          200: Type.Unknown({ description: "JSON-RPC answer(s)." }),
          202: Type.Null({ description: "Notifications accepted." }),
          ...errorResponses(400, 401, 403, 404, 503),
        },
      },
    },
    async (request, reply) => {
      const principal = await auth.optional(request);
      const presented = presentedCredential(request.headers);
      if (!principal || principal.kind !== "apiKey" || !presented || presented.via === "malformed" || !presented.token.startsWith(API_KEY_PREFIX)) {
        throw new MarketError("INVALID_TOKEN", "The remote MCP endpoint needs an API key: send `X-API-Key: sk_...`.");
      }
      const agentId = agentIdOf(request.headers[AGENT_HEADER]);
      const fetch = injectFetch(inject, request.ip);
      // The detail of an unexpected failure is logged here, its URLs cut to their host; the tool answers a fixed message.
      const onUnexpectedError = (error: unknown) => request.log.error({ err: loggableError(error) }, "MCP tool failed");
      let surface: McpSurface;
      let end = () => {};
      if (agentId === undefined) {
        const client = new MarketClient({ apiKey: presented.token, baseUrl: INTERNAL_API, fetch, escrows: {} });
        surface = { client, quotes: serviceQuotes(client.http), poster: unsignedPoster(client, readWallet), signs: false };
      } else {
        ({ surface, end } = await custodySurface(custody, principal, agentId, { fetch, baseUrl: INTERNAL_API, log: request.log }));
      }
      if (watchTask) surface.watchTask = (taskHash, chain) => watchTask(principal, taskHash, chain);
      const server = createMcpServer(surface, TOOLS, { onUnexpectedError });
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      // Answers are always JSON (enableJsonResponse), so any client that reads JSON may call.
      request.raw.headers.accept = "application/json, text/event-stream";
      reply.hijack();
      reply.raw.on("close", () => {
        end();
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(request.raw, reply.raw, request.body);
    },
  );
};
