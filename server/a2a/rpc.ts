/** The A2A endpoint's JSON-RPC vocabulary: codes, failures, the task as A2A shows it, who asks, and the plugin's deps. */
import type { FastifyRequest } from "fastify";
import type { TaskQueries } from "../tasks";
import type { Authenticate } from "../auth";
import type { AgentRegistry } from "../agents";
import type { Db } from "../db";
import type { EventFeed } from "../events";
import type { WebhookStore } from "../webhooks";
import type { TaskView } from "@market/core/api";
import type { TaskStatus } from "@market/core/status";

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

export type Id = string | number | null;
export interface RpcError {
  code: number;
  message: string;
  data?: unknown;
}
export type RpcResponse = { jsonrpc: "2.0"; id: Id; result: unknown } | { jsonrpc: "2.0"; id: Id; error: RpcError };

export class RpcFailure extends Error {
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

export function a2aTask(view: TaskView, v1: boolean) {
  const state = A2A_STATE[view.state.status];
  return {
    id: view.state.taskId,
    contextId: view.state.taskId,
    status: { state: v1 ? `TASK_STATE_${state.toUpperCase()}` : state, timestamp: new Date(view.meta.listedAt).toISOString() },
    ...(v1 ? {} : { kind: "task" }),
    metadata: { market: view },
  };
}

/** Who asks, from the HTTP request: the capabilities it named on the endpoint, and its wallet when it sent a key. */
export interface Caller {
  capabilities?: string;
  wallet?: string;
  /** The request's headers: push-config methods authenticate from them. */
  headers: FastifyRequest["headers"];
}

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
