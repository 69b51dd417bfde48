/**
 * A model provider on loopback for hosted-agent tests: a real HTTP server speaking the OpenAI chat-completions
 * protocol (POST /v1/chat/completions, non-streaming), answering from a script: text, tool calls, or misbehaviour
 * (hang, an error status, garbage bytes). It records every request (headers and body), and serves HTTP tools under
 * /tools/ the same way.
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import type { Socket } from "node:net";

export interface ChatMessage {
  role: string;
  content?: string | null;
  tool_calls?: Array<{ id: string; type: string; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
}

export interface ModelRequest {
  model: string;
  messages: ChatMessage[];
  tools?: Array<{ type: string; function: { name: string; description?: string; parameters?: unknown } }>;
  headers: IncomingHttpHeaders;
}

export type ModelReply =
  | { content: string }
  | { toolCalls: Array<{ name: string; arguments: Record<string, unknown> }> }
  /** Never answers (until the server closes). */
  | { hang: true }
  | { status: number; body?: string }
  /** A 200 whose body is not a chat completion. */
  | { garbage: string };

export interface ToolRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface ToolReply {
  status?: number;
  body: string;
}

export async function startModelServer() {
  const requests: ModelRequest[] = [];
  const toolRequests: ToolRequest[] = [];
  const hanging = new Set<ServerResponse>();
  /** How long each hanging request stayed open before its client gave up (ms), in the order they closed. */
  const hungFor: number[] = [];
  const sockets = new Set<Socket>();
  let script: (request: ModelRequest) => ModelReply | Promise<ModelReply> = () => ({ content: "No script." });
  let tool: (request: ToolRequest) => ToolReply = () => ({ status: 404, body: "no such tool" });
  let calls = 0;

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      void answer();
    });
    async function answer() {
      const text = Buffer.concat(chunks).toString("utf8");
      const path = (req.url ?? "/").split("?")[0]!;
      if (path.startsWith("/tools/")) {
        const request = { method: req.method ?? "GET", path: req.url ?? "/", headers: req.headers, body: text };
        toolRequests.push(request);
        const reply = tool(request);
        res.writeHead(reply.status ?? 200, { "content-type": "application/json" }).end(reply.body);
        return;
      }
      if (req.method !== "POST" || !path.endsWith("/chat/completions")) {
        res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: "not found" } }));
        return;
      }
      const body = JSON.parse(text) as Omit<ModelRequest, "headers">;
      const request: ModelRequest = { ...body, headers: req.headers };
      requests.push(request);
      // A script may hold its answer (a promise) until the test has done something, to order a race.
      const reply = await script(request);
      if ("hang" in reply) {
        hanging.add(res);
        const since = Date.now();
        res.on("close", () => {
          if (hanging.delete(res)) hungFor.push(Date.now() - since);
        });
        return;
      }
      if ("status" in reply) {
        res
          .writeHead(reply.status, { "content-type": "application/json" })
          .end(reply.body ?? JSON.stringify({ error: { message: "scripted failure", type: "server_error" } }));
        return;
      }
      if ("garbage" in reply) {
        res.writeHead(200, { "content-type": "application/json" }).end(reply.garbage);
        return;
      }
      calls += 1;
      const message =
        "content" in reply
          ? { role: "assistant", content: reply.content }
          : {
              role: "assistant",
              content: null,
              tool_calls: reply.toolCalls.map((c, i) => ({
                id: `call_${calls}_${i}`,
                type: "function",
                function: { name: c.name, arguments: JSON.stringify(c.arguments) },
              })),
            };
      res.writeHead(200, { "content-type": "application/json" }).end(
        JSON.stringify({
          id: `chatcmpl-${calls}`,
          object: "chat.completion",
          created: Math.floor(Date.now() / 1000),
          model: request.model,
          choices: [{ index: 0, message, finish_reason: "content" in reply ? "stop" : "tool_calls" }],
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
        }),
      );
    }
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  const origin = `http://127.0.0.1:${port}`;

  return {
    /** The base URL an OpenAI client is given. */
    baseUrl: `${origin}/v1`,
    origin,
    requests,
    toolRequests,
    /** Requests hanging right now. */
    hangingCount: () => hanging.size,
    /** Durations (ms) of the hanging requests their clients closed: how long a hanging call held its caller. */
    hangDurations: () => [...hungFor],
    setScript(next: (request: ModelRequest) => ModelReply | Promise<ModelReply>) {
      script = next;
    },
    setTool(next: (request: ToolRequest) => ToolReply) {
      tool = next;
    },
    async close() {
      const open = [...hanging];
      hanging.clear();
      for (const res of open) res.destroy();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export type ModelServer = Awaited<ReturnType<typeof startModelServer>>;

/** The task brief of a request: the first user message. */
export function briefOf(request: ModelRequest): string {
  return request.messages.find((m) => m.role === "user")?.content ?? "";
}

/** Whether the conversation already holds a tool result (the model's second step). */
export function hasToolResult(request: ModelRequest): boolean {
  return request.messages.some((m) => m.role === "tool");
}
