import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { JsonRpcBody } from "@market/core/api";
import { MarketError } from "@market/core/errors";
import { createA2aMethods } from "./methods";
import { RPC, type A2aDeps, type Caller, type Id, type RpcError, type RpcResponse, RpcFailure } from "./rpc";
import { createA2aStreams } from "./stream";

export { RPC, type A2aDeps } from "./rpc";

const PARSE_FAILED = Symbol("parse failed");
/** Names the capabilities to list tasks for without a key (issue 29, item 4); an A2A client sends it as a service parameter. */
export const CAPABILITIES_HEADER = "x-market-capabilities";

/** Requests per JSON-RPC batch: the rate limit counts a batch once, so its size bounds the work one request buys. */
export const MAX_BATCH = 20;

/**
 * `POST /a2a/v1`: JSON-RPC 2.0, public. `tasks/list`, `tasks/get`, `message/send` (acknowledges only) and
 * `tasks/cancel` (refused: cancel on chain), plus the A2A v1.0 names `ListTasks`, `GetTask`, `SendMessage`, `CancelTask`;
 * the methods in methods.ts, the streams in stream.ts.
 */
export const a2aRoutes: FastifyPluginAsyncTypebox<A2aDeps> = async (app, deps) => {
  const { auth } = deps;
  const { taskView, methods, names } = createA2aMethods(deps);
  const { stream, stopAll } = createA2aStreams(deps, { taskView, methods });
  /** Methods answered as a Server-Sent Events stream of JSON-RPC responses (one request, not in a batch). */
  const STREAMING = new Set(["SendStreamingMessage", "SubscribeToTask"]);

  async function answer(request: unknown, caller: Caller): Promise<RpcResponse | undefined> {
    const r = request as { jsonrpc?: unknown; id?: unknown; method?: unknown; params?: unknown } | null;
    const idValid = (v: unknown): v is Id => v === null || typeof v === "string" || (typeof v === "number" && Number.isFinite(v));
    const id: Id = r && typeof r === "object" && idValid(r.id) ? r.id : null;
    const fail = (error: RpcError): RpcResponse => ({ jsonrpc: "2.0", id, error });
    if (!r || typeof r !== "object" || Array.isArray(r) || r.jsonrpc !== "2.0" || typeof r.method !== "string" || ("id" in r && !idValid(r.id))) {
      return fail({ code: RPC.INVALID_REQUEST, message: "Invalid Request" });
    }
    const isNotification = !("id" in r);
    const route = Object.hasOwn(names, r.method) ? names[r.method] : undefined;
    if (!route) return isNotification ? undefined : fail({ code: RPC.METHOD_NOT_FOUND, message: `Method not found: ${r.method}` });
    if (r.params !== undefined && (typeof r.params !== "object" || r.params === null || Array.isArray(r.params))) {
      return isNotification ? undefined : fail({ code: RPC.INVALID_PARAMS, message: "params must be an object" });
    }
    try {
      const result = await methods[route[0]]!((r.params ?? {}) as Record<string, unknown>, route[1], caller);
      return isNotification ? undefined : { jsonrpc: "2.0", id, result };
    } catch (error) {
      if (error instanceof RpcFailure) {
        return isNotification
          ? undefined
          : fail({ code: error.code, message: error.message, ...(error.data === undefined ? {} : { data: error.data }) });
      }
      throw error;
    }
  }

  app.addHook("preClose", async () => stopAll());

  // Own JSON parser in its own scope: a body that is not JSON is a JSON-RPC parse error, not an HTTP 400.
  await app.register(async (scope) => {
    scope.removeContentTypeParser("application/json");
    scope.addContentTypeParser("application/json", { parseAs: "string" }, (_request, body, done) => {
      try {
        done(null, JSON.parse(body as string));
      } catch {
        done(null, PARSE_FAILED);
      }
    });
    scope.post(
      "/a2a/v1",
      {
        schema: {
          tags: ["a2a"],
          summary: "A2A JSON-RPC 2.0 endpoint (public)",
          description:
            "Methods: `tasks/list` (open tasks, same public metadata as GET /api/v1/a2a/tasks), `tasks/get`, `message/send` " +
            "(acknowledges only), `tasks/cancel` (refused: -32004, cancel on chain), and the A2A v1.0 names `ListTasks`, " +
            "`GetTask`, `SendMessage`, `CancelTask`. A task is listed when its required capability tags are all named: in " +
            "`params.capabilities`, in the `X-Market-Capabilities` header (comma-separated; an A2A client's service parameter) " +
            "or as `?capabilities=` on this URL; with `X-API-Key` and none named, the caller's registered capabilities (and " +
            "tasks pinned to it). `SubscribeToTask` and `SendStreamingMessage` (with `message.taskId`) answer a Server-Sent " +
            "Events stream of the task's updates from the event log (docs/events.md), and the push-notification config methods " +
            "(`Create`/`Get`/`ListTaskPushNotificationConfigs`/`Delete`, with an X-API-Key) deliver them as signed webhooks. " +
            "Errors: -32700 parse, -32600 invalid request, -32601 method, -32602 " +
            `params, -32001 task not found. Batches (arrays of up to ${MAX_BATCH} requests) are answered as arrays.`,
          body: JsonRpcBody,
        },
      },
      async (request, reply) => {
        const body = request.body;
        const header = request.headers[CAPABILITIES_HEADER];
        const query = (request.query as { capabilities?: unknown } | undefined)?.capabilities;
        const named = typeof header === "string" ? header : typeof query === "string" ? query : undefined;
        // The endpoint is public: a key only narrows what is listed, and a wrong one is ignored, never refused.
        const principal = await auth.optional(request).catch((error: unknown) => {
          if (error instanceof MarketError && error.code === "INVALID_TOKEN") return undefined;
          throw error;
        });
        const caller: Caller = {
          headers: request.headers,
          ...(named === undefined ? {} : { capabilities: named }),
          ...(principal ? { wallet: principal.wallet } : {}),
        };
        if (body === PARSE_FAILED) return reply.send({ jsonrpc: "2.0", id: null, error: { code: RPC.PARSE_ERROR, message: "Parse error" } });
        if (Array.isArray(body)) {
          if (body.length === 0) return reply.send({ jsonrpc: "2.0", id: null, error: { code: RPC.INVALID_REQUEST, message: "Invalid Request" } });
          if (body.length > MAX_BATCH) {
            return reply.send({
              jsonrpc: "2.0",
              id: null,
              error: { code: RPC.INVALID_REQUEST, message: `Invalid Request: at most ${MAX_BATCH} requests per batch` },
            });
          }
          const answers = (await Promise.all(body.map((one) => answer(one, caller)))).filter((a): a is RpcResponse => a !== undefined);
          return answers.length === 0 ? reply.status(204).send() : reply.send(answers);
        }
        const method = (body as { method?: unknown } | null)?.method;
        if (typeof method === "string" && STREAMING.has(method)) return stream(body as Record<string, unknown>, request, reply, caller);
        const single = await answer(body, caller);
        return single === undefined ? reply.status(204).send() : reply.send(single);
      },
    );
  });
};
