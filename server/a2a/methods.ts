import { randomUUID } from "node:crypto";
import type { FastifyRequest } from "fastify";
import type { Principal } from "../auth/principal";
import { checkCapabilities } from "@market/core/capabilities";
import { MarketError } from "@market/core/errors";
import { a2aTask, RPC, RpcFailure, type A2aDeps, type Caller } from "./rpc";

const LIST_LIMIT = 100;

/** The A2A endpoint's JSON-RPC methods, the names each is called by (legacy and v1.0), and the task a request names. */
export function createA2aMethods(deps: A2aDeps) {
  const { queries, agents } = deps;
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
  return { taskView, methods, names };
}

export type A2aMethods = ReturnType<typeof createA2aMethods>;
