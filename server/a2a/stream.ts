import type { FastifyReply, FastifyRequest } from "fastify";
import { lastCursor, readEvents, walletsOf } from "../events";
import { A2A_FINAL_STATES, a2aStatusUpdate, type TaskView } from "@market/core/api";
import type { A2aMethods } from "./methods";
import { a2aTask, RpcFailure, type A2aDeps, type Caller } from "./rpc";

/** The A2A endpoint's streams (Server-Sent Events of JSON-RPC responses), and ending every open one at close. */
export function createA2aStreams(deps: A2aDeps, { taskView, methods }: Pick<A2aMethods, "taskView" | "methods">) {
  const { queries } = deps;
  const streams = new Set<() => void>();

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

  return {
    stream,
    stopAll: () => {
      for (const stop of streams) stop();
    },
  };
}
