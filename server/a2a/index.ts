import { randomUUID } from "node:crypto";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { TaskQueries } from "../tasks";
import type { Authenticate } from "../auth";
import type { AgentRegistry } from "../agents";
import type { Principal } from "../auth/principal";
import type { Db } from "../db";
import { lastCursor, readEvents, walletsOf, type EventFeed } from "../events";
import type { WebhookStore } from "../webhooks";
import { A2A_FINAL_STATES, a2aStatusUpdate, JsonRpcBody, type TaskView } from "../../core/api";
import { checkCapabilities } from "../../core/capabilities";
import { MarketError } from "../../core/errors";
import type { TaskStatus } from "../../core/status";

/** JSON-RPC 2.0 and A2A error codes. */
export const RPC = {
  PARSE_ERROR: -32700,
  INVALID_REQUEST: -32600,
  METHOD_NOT_FOUND: -32601,
  INVALID_PARAMS: -32602,
  INTERNAL_ERROR: -32603,
  TASK_NOT_FOUND: -32001,
  TASK_NOT_CANCELABLE: -32002,
  PUSH_NOTIFICATION_NOT_SUPPORTED: -32003,
  UNSUPPORTED_OPERATION: -32004,
} as const;

type Id = string | number | null;
interface RpcError {
  code: number;
  message: string;
  data?: unknown;
}
type RpcResponse = { jsonrpc: "2.0"; id: Id; result: unknown } | { jsonrpc: "2.0"; id: Id; error: RpcError };

class RpcFailure extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

/** A2A task state of a marketplace status, in the legacy (`tasks/get`) and the v1.0 (`GetTask`) spelling. */
const A2A_STATE: Record<TaskStatus, string> = {
  open: "submitted",
  expired: "failed",
  assigned: "working",
  submitted: "working",
  awaiting_verification: "working",
  failed: "working",
  disputed: "working",
  escalated: "working",
  verified: "completed",
  completed: "completed",
  refunded: "failed",
  cancelled: "canceled",
};

function a2aTask(view: TaskView, v1: boolean) {
  const state = A2A_STATE[view.state.status];
  return {
    id: view.state.taskId,
    contextId: view.state.taskId,
    status: { state: v1 ? `TASK_STATE_${state.toUpperCase()}` : state, timestamp: new Date(view.meta.listedAt).toISOString() },
    ...(v1 ? {} : { kind: "task" }),
    metadata: { market: view },
  };
}

const PARSE_FAILED = Symbol("parse failed");
/** Names the capabilities to list tasks for without a key (issue 29, item 4); an A2A client sends it as a service parameter. */
export const CAPABILITIES_HEADER = "x-market-capabilities";

/** Who asks, from the HTTP request: the capabilities it named on the endpoint, and its wallet when it sent a key. */
interface Caller {
  capabilities?: string;
  wallet?: string;
  /** The request's headers: push-config methods authenticate from them. */
  headers: FastifyRequest["headers"];
}
const LIST_LIMIT = 100;
/** Requests per JSON-RPC batch: the rate limit counts a batch once, so its size bounds the work one request buys. */
export const MAX_BATCH = 20;

/**
 * `POST /a2a/v1`: JSON-RPC 2.0, public. `tasks/list`, `tasks/get`, `message/send` (acknowledges only) and
 * `tasks/cancel` (refused: cancel on chain), plus the A2A v1.0 names `ListTasks`, `GetTask`, `SendMessage`, `CancelTask`.
 */
export interface A2aDeps {
  queries: Pick<TaskQueries, "browse" | "view">;
  /** Streams and push configs: an optional credential widens a stream to the key's private events. */
  auth: Pick<Authenticate, "optional">;
  db: Db;
  feed: EventFeed;
  /** Push-notification configs are webhooks of the caller's account; absent without a master key. */
  push?: Pick<WebhookStore, "createPushConfig" | "pushConfigs" | "remove">;
  agents: Pick<AgentRegistry, "get">;
  /** Comment line on an idle stream (ms). */
  heartbeatMs?: number;
}

export const a2aRoutes: FastifyPluginAsyncTypebox<A2aDeps> = async (app, deps) => {
  const { queries, auth, agents } = deps;
  const taskView = async (params: Record<string, unknown>) => {
    const raw = typeof params.id === "string" ? params.id : typeof params.name === "string" ? params.name.replace(/^tasks\//, "") : undefined;
    if (raw === undefined || !/^0x[0-9a-fA-F]{64}$/.test(raw))
      throw new RpcFailure(RPC.INVALID_PARAMS, "params.id must be a task hash (0x + 64 hex)");
    const view = await queries.view(raw, undefined);
    if (!view) throw new RpcFailure(RPC.TASK_NOT_FOUND, "Task not found", { id: raw });
    return view;
  };

  /** The caller of a push-config method: a credential is required (X-API-Key or a session), as for webhooks. */
  async function pushCaller(headers: FastifyRequest["headers"]): Promise<Principal> {
    if (!deps.push) throw new RpcFailure(RPC.PUSH_NOTIFICATION_NOT_SUPPORTED, "Push notifications need the server's master key; none is configured.");
    const principal = await deps.auth.optional({ headers }).catch(() => undefined);
    if (!principal) throw new RpcFailure(RPC.INVALID_REQUEST, "Push-notification configs need an X-API-Key header", { code: "AUTH_REQUIRED" });
    return principal;
  }
  const configView = (row: { id: number; task_hash: string | null; url: string }, token: string | undefined) => ({
    id: String(row.id),
    taskId: row.task_hash ?? "",
    url: row.url,
    ...(token ? { token } : {}),
  });
  const configId = (params: Record<string, unknown>) => {
    const id = typeof params.id === "string" && /^[0-9]{1,9}$/.test(params.id) ? Number(params.id) : undefined;
    if (id === undefined) throw new RpcFailure(RPC.INVALID_PARAMS, "params.id must name a push-notification config");
    return id;
  };
  const taskIdOf = (params: Record<string, unknown>) => taskView({ id: params.taskId });

  const methods: Record<string, (params: Record<string, unknown>, v1: boolean, caller: Caller) => Promise<unknown>> = {
    async list(params, v1, caller) {
      // The capabilities named (params, the X-Market-Capabilities header or ?capabilities= on the endpoint), else the
      // caller's registered ones: a task is listed when its required tags are all among them (the spec's rule).
      const wanted = params.capabilities ?? caller.capabilities;
      const entries = Array.isArray(wanted) ? wanted : typeof wanted === "string" ? wanted.split(",").filter((t) => t.trim() !== "") : [];
      if (!entries.every((e): e is string => typeof e === "string")) throw new RpcFailure(RPC.INVALID_PARAMS, "params.capabilities must be strings");
      const { tags, invalid } = checkCapabilities(entries.map((e) => e.trim()));
      if (invalid.length > 0) throw new RpcFailure(RPC.INVALID_PARAMS, `malformed capability tags: ${invalid.join(", ")}`);
      const named = wanted !== undefined;
      const registered = !named && caller.wallet ? ((await agents.get(caller.wallet))?.capabilities ?? []) : [];
      const { tasks, total } = await queries.browse({
        capabilities: named ? tags : registered,
        ...(caller.wallet ? { caller: caller.wallet } : {}),
        limit: LIST_LIMIT,
      });
      const listed = tasks.map((t) => a2aTask(t, v1));
      return v1 ? { tasks: listed, totalSize: total, pageSize: listed.length, nextPageToken: "" } : { tasks: listed, total };
    },
    async get(params, v1) {
      return a2aTask(await taskView(params), v1);
    },
    async send(params, v1) {
      if (typeof params.message !== "object" || params.message === null) throw new RpcFailure(RPC.INVALID_PARAMS, "params.message is required");
      const text =
        "Received. This endpoint only acknowledges messages and changes nothing: post and take tasks through the " + "HTTP API (see /openapi.json).";
      const message = v1
        ? { messageId: randomUUID(), role: "ROLE_AGENT", parts: [{ text }] }
        : { kind: "message", messageId: randomUUID(), role: "agent", parts: [{ kind: "text", text }] };
      return v1 ? { message } : message;
    },
    async createPush(params, _v1, caller) {
      const principal = await pushCaller(caller.headers);
      const view = await taskIdOf(params);
      if (typeof params.url !== "string") throw new RpcFailure(RPC.INVALID_PARAMS, "params.url is required");
      const token = typeof params.token === "string" ? params.token.slice(0, 512) : "";
      try {
        const row = await deps.push!.createPushConfig(principal, { taskHash: view.meta.taskHash, url: params.url, token });
        return configView(row, token);
      } catch (error) {
        if (error instanceof MarketError) throw new RpcFailure(RPC.INVALID_PARAMS, error.message, { code: error.code });
        throw error;
      }
    },
    async getPush(params, _v1, caller) {
      const principal = await pushCaller(caller.headers);
      const view = await taskIdOf(params);
      const [row] = await deps.push!.pushConfigs(principal, view.meta.taskHash, configId(params));
      if (!row) throw new RpcFailure(RPC.TASK_NOT_FOUND, "No such push-notification config", { id: params.id });
      return configView(row, undefined);
    },
    async listPush(params, _v1, caller) {
      const principal = await pushCaller(caller.headers);
      const view = await taskIdOf(params);
      const rows = await deps.push!.pushConfigs(principal, view.meta.taskHash);
      return { configs: rows.map((row) => configView(row, undefined)), nextPageToken: "" };
    },
    async deletePush(params, _v1, caller) {
      const principal = await pushCaller(caller.headers);
      const view = await taskIdOf(params);
      const [row] = await deps.push!.pushConfigs(principal, view.meta.taskHash, configId(params));
      if (!row) throw new RpcFailure(RPC.TASK_NOT_FOUND, "No such push-notification config", { id: params.id });
      await deps.push!.remove(principal, row.id);
      return {};
    },
    async cancel(params) {
      const view = await taskView(params);
      throw new RpcFailure(RPC.UNSUPPORTED_OPERATION, "Tasks are cancelled on chain: the poster sends cancelTask from the funding wallet.", {
        id: view.state.taskId,
        status: view.state.status,
      });
    },
  };
  const names: Record<string, [keyof typeof methods, boolean]> = {
    "tasks/list": ["list", false],
    "tasks/get": ["get", false],
    "message/send": ["send", false],
    "tasks/cancel": ["cancel", false],
    ListTasks: ["list", true],
    GetTask: ["get", true],
    SendMessage: ["send", true],
    CancelTask: ["cancel", true],
    CreateTaskPushNotificationConfig: ["createPush", true],
    GetTaskPushNotificationConfig: ["getPush", true],
    ListTaskPushNotificationConfigs: ["listPush", true],
    DeleteTaskPushNotificationConfig: ["deletePush", true],
  };
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

  /**
   * `SubscribeToTask` (params.id) and `SendStreamingMessage` (params.message.taskId): the task as it is, then a status
   * update per event of the task's log the caller may see (public ones without a credential), until the task ends. A
   * message naming no task is acknowledged in a one-event stream.
   */
  async function stream(body: Record<string, unknown>, request: FastifyRequest, reply: FastifyReply, caller: Caller) {
    const id = typeof body.id === "string" || typeof body.id === "number" ? body.id : null;
    const params = (typeof body.params === "object" && body.params !== null ? body.params : {}) as Record<string, unknown>;
    const fail = (error: RpcFailure) =>
      reply.send({
        jsonrpc: "2.0",
        id,
        error: { code: error.code, message: error.message, ...(error.data === undefined ? {} : { data: error.data }) },
      });
    let view: TaskView | undefined;
    let acknowledgement: unknown;
    try {
      if (body.method === "SubscribeToTask") view = await taskView(params);
      else {
        const message = params.message as { taskId?: unknown } | undefined;
        if (typeof message?.taskId === "string" && message.taskId !== "") view = await taskView({ id: message.taskId });
        else acknowledgement = await methods.send!(params, true, caller);
      }
    } catch (error) {
      if (error instanceof RpcFailure) return fail(error);
      throw error;
    }
    const principal = await deps.auth.optional(request).catch(() => undefined);
    const wallets = principal ? await walletsOf(deps.db, principal) : [];
    const chain = view?.meta.chain;
    // The head before the view: every event after it is streamed, none between the view and the stream is lost.
    let cursor = chain ? await lastCursor(deps.db, chain) : 0;
    if (view) view = (await queries.view(view.meta.taskHash, undefined)) ?? view;

    reply.hijack();
    const raw = reply.raw;
    raw.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache, no-transform", "x-accel-buffering": "no" });
    let open = true;
    const stop = () => {
      open = false;
      if (!raw.writableEnded) raw.end();
    };
    request.raw.on("close", stop);
    raw.on("close", stop);
    streams.add(stop);
    const send = (result: unknown) => raw.write(`data: ${JSON.stringify({ jsonrpc: "2.0", id, result })}\n\n`);
    try {
      if (!view || !chain) {
        send(acknowledgement);
        return;
      }
      const task = a2aTask(view, true);
      send({ task });
      if (A2A_FINAL_STATES.includes(task.status.state)) return;
      while (open) {
        const page = await readEvents(deps.db, { chain, after: cursor, wallets, taskHash: view.meta.taskHash }, 100);
        for (const event of page.events) {
          const update = a2aStatusUpdate(event);
          send(update);
          if (A2A_FINAL_STATES.includes(update.statusUpdate.status.state)) return;
        }
        cursor = page.next;
        if (page.more) continue;
        const head = await deps.feed.waitPast(chain, cursor, deps.heartbeatMs ?? 15_000);
        if (open && head <= cursor) raw.write(": keep-alive\n\n");
      }
    } catch (error) {
      request.log.warn({ err: error }, "A2A stream ended by an error");
    } finally {
      streams.delete(stop);
      stop();
    }
  }
  const streams = new Set<() => void>();
  app.addHook("preClose", async () => {
    for (const stop of streams) stop();
  });

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
