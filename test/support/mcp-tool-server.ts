/**
 * A real MCP server on loopback for hosted-agent tool tests, built with the official `@modelcontextprotocol/sdk`
 * (McpServer over Streamable HTTP, stateless): `json` answers each POST with plain JSON, `sse` with an SSE stream.
 * It records the headers of every request (the stored auth header must reach it) and every tool call.
 */
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { Socket } from "node:net";
import { z } from "zod";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";

export interface McpToolServerOptions {
  mode: "json" | "sse";
  /** List no tools at all. */
  empty?: boolean;
}

export async function startMcpToolServer(options: McpToolServerOptions) {
  const requests: Array<{ method: string; headers: IncomingHttpHeaders; body: string }> = [];
  const calls: Array<{ name: string; args: Record<string, unknown> }> = [];
  const sockets = new Set<Socket>();

  function mcpServer() {
    const server = new McpServer({ name: "weather-test", version: "1.0.0" });
    if (!options.empty) {
      server.registerTool(
        "get-forecast",
        { description: "The weather forecast for a city.", inputSchema: { city: z.string().describe("The city's name.") } },
        async ({ city }) => {
          calls.push({ name: "get-forecast", args: { city } });
          return { content: [{ type: "text", text: `Forecast for ${city}: sunny, 21 degrees, light wind from the west.` }] };
        },
      );
      server.registerTool("ping", { description: "Answers pong." }, async () => {
        calls.push({ name: "ping", args: {} });
        return { content: [{ type: "text", text: "pong" }] };
      });
    }
    return server;
  }

  const http = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      requests.push({ method: req.method ?? "", headers: req.headers, body: text });
      if (req.method !== "POST") {
        res.writeHead(405, { allow: "POST" }).end();
        return;
      }
      const server = mcpServer();
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: options.mode === "json" });
      res.on("close", () => {
        void transport.close();
        void server.close();
      });
      void server
        .connect(transport)
        .then(() => transport.handleRequest(req, res, JSON.parse(text) as unknown))
        .catch(() => res.writeHead(500).end());
    });
  });
  http.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const address = http.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    requests,
    calls,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

export type McpToolServer = Awaited<ReturnType<typeof startMcpToolServer>>;
