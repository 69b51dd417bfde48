import type { EventPage, EventType, MarketEvent } from "@market/core/api";
import { ApiError, apiErrorCode } from "./errors";

export type { EventPage, EventType, MarketEvent } from "@market/core/api";

/** One message of a Server-Sent Events stream. */
export interface SseMessage {
  id?: string;
  event: string;
  data: string;
}

/**
 * The messages of a text/event-stream body (the WHATWG parsing rules: `field: value` lines, a blank line ends a
 * message, `:` starts a comment, `data` lines join with newlines).
 */
export async function* readSse(body: ReadableStream<Uint8Array>): AsyncGenerator<SseMessage> {
  const decoder = new TextDecoder();
  const reader = body.getReader();
  let buffer = "";
  let message: { id?: string; event?: string; data: string[] } = { data: [] };
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      for (let end = buffer.search(/\r\n|\r|\n/); end >= 0; end = buffer.search(/\r\n|\r|\n/)) {
        const line = buffer.slice(0, end);
        buffer = buffer.slice(buffer.startsWith("\r\n", end) ? end + 2 : end + 1);
        if (line === "") {
          if (message.data.length > 0) {
            yield { ...(message.id !== undefined ? { id: message.id } : {}), event: message.event ?? "message", data: message.data.join("\n") };
          }
          message = { data: [] };
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "data") message.data.push(value);
        else if (field === "event") message.event = value;
        else if (field === "id" && !value.includes("\0")) message.id = value;
      }
    }
  } finally {
    reader.releaseLock();
    await body.cancel().catch(() => undefined);
  }
}

export interface EventStreamOptions {
  baseUrl: string;
  /** An API key (`X-API-Key`) or a session token (`Authorization: Bearer`); never put in the URL. */
  apiKey?: string;
  sessionToken?: string;
  /** The chain's log to follow (default: the server's posting chain). */
  chain?: string;
  /** Resume after this cursor (default: from the start of the log); `now`: only events from now on. */
  after?: string;
  types?: readonly EventType[];
  taskHash?: string;
  /** Ends the iteration. */
  signal?: AbortSignal;
  /** Wait before reconnecting after the stream broke (ms; doubles up to 30 s, default 500). */
  reconnectMs?: number;
  fetch?: typeof fetch;
}

/** Codes that no reconnection mends: the iterator ends with them. */
const FATAL = new Set(["AUTH_REQUIRED", "INVALID_TOKEN", "VALIDATION_FAILED", "CHAIN_NOT_CONFIGURED", "FORBIDDEN", "NOT_FOUND"]);

/**
 * The events this key may see, oldest first, forever: reads the log's stream and, when it breaks (a restart, a
 * network fault), reconnects with `Last-Event-ID` from the last event it yielded, so each event comes once, in order.
 * Ends when `signal` aborts, or throws an ApiError for a refusal no retry mends (a revoked key, a bad filter).
 */
export async function* streamEvents(options: EventStreamOptions): AsyncGenerator<MarketEvent> {
  const doFetch = options.fetch ?? fetch;
  const base = options.baseUrl.replace(/\/$/, "");
  const query = new URLSearchParams();
  if (options.chain) query.set("chain", options.chain);
  if (options.types?.length) query.set("types", options.types.join(","));
  if (options.taskHash) query.set("taskHash", options.taskHash);
  let after = options.after ?? "0";
  let wait = options.reconnectMs ?? 500;
  while (!options.signal?.aborted) {
    try {
      // `now`: the log's head, read once, so a reconnection resumes from a cursor and misses nothing in between.
      if (after === "now") after = (await eventPage({ ...options, after: "now", limit: 1 })).next;
      const response = await doFetch(`${base}/api/v1/events/stream${query.size ? `?${query}` : ""}`, {
        headers: {
          accept: "text/event-stream",
          "last-event-id": after,
          ...(options.apiKey ? { "x-api-key": options.apiKey } : {}),
          ...(options.sessionToken ? { authorization: `Bearer ${options.sessionToken}` } : {}),
        },
        redirect: "manual",
        ...(options.signal ? { signal: options.signal } : {}),
      });
      if (!response.ok || !response.body) {
        const parsed = (await response.json().catch(() => undefined)) as { error?: { code?: string; message?: string } } | undefined;
        const error = new ApiError(
          response.status,
          apiErrorCode(parsed?.error?.code, response.status),
          parsed?.error?.message ?? "event stream refused",
          {},
        );
        if (FATAL.has(error.code)) throw error;
      } else {
        for await (const message of readSse(response.body)) {
          const event = JSON.parse(message.data) as MarketEvent;
          after = event.cursor;
          wait = options.reconnectMs ?? 500;
          yield event;
        }
      }
    } catch (error) {
      if (options.signal?.aborted) return;
      if (error instanceof ApiError && FATAL.has(error.code)) throw error;
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, wait);
      options.signal?.addEventListener("abort", () => (clearTimeout(timer), resolve()), { once: true });
    });
    wait = Math.min(30_000, wait * 2);
  }
}

/** One page of the log after `after` (GET /api/v1/events). */
export async function eventPage(options: Omit<EventStreamOptions, "signal" | "reconnectMs"> & { limit?: number }): Promise<EventPage> {
  const doFetch = options.fetch ?? fetch;
  const query = new URLSearchParams({ after: options.after ?? "0" });
  if (options.chain) query.set("chain", options.chain);
  if (options.limit) query.set("limit", String(options.limit));
  if (options.types?.length) query.set("types", options.types.join(","));
  if (options.taskHash) query.set("taskHash", options.taskHash);
  const response = await doFetch(`${options.baseUrl.replace(/\/$/, "")}/api/v1/events?${query}`, {
    headers: {
      ...(options.apiKey ? { "x-api-key": options.apiKey } : {}),
      ...(options.sessionToken ? { authorization: `Bearer ${options.sessionToken}` } : {}),
    },
    redirect: "manual",
  });
  const parsed = (await response.json()) as { success: boolean; data: EventPage; error?: { code?: string; message?: string } };
  if (!response.ok || !parsed.success)
    throw new ApiError(response.status, apiErrorCode(parsed.error?.code, response.status), parsed.error?.message ?? "", {});
  return parsed.data;
}

/**
 * Wakes whoever waits on one task when an event of it arrives (docs/events.md): `market status --wait`,
 * `poll_task_result`'s `waitSeconds` and `waitForResult` wait on it rather than asking again and again.
 */
export interface TaskWatch {
  /** Resolves true at the task's next event not yet waited for, false after `timeoutMs` (or once closed). */
  next(timeoutMs: number): Promise<boolean>;
  /** Whether events arrive: false when the server has no event log (the caller then asks at intervals). */
  readonly live: boolean;
  close(): void;
}

/**
 * Follows the task's events on the stream from the log's head, read before this resolves: an event committed after it
 * wakes `next`, so a caller that reads the task once more after opening the watch misses nothing.
 */
export async function watchTask(options: Omit<EventStreamOptions, "after" | "taskHash" | "signal"> & { taskHash: string }): Promise<TaskWatch> {
  let head: string;
  try {
    head = (await eventPage({ ...options, after: "now", limit: 1 })).next;
  } catch {
    return { live: false, next: (timeoutMs) => new Promise((resolve) => setTimeout(() => resolve(false), timeoutMs)), close() {} };
  }
  const controller = new AbortController();
  let arrived = 0;
  let wake: (() => void) | undefined;
  void (async () => {
    try {
      for await (const _event of streamEvents({ ...options, after: head, taskHash: options.taskHash, signal: controller.signal })) {
        arrived += 1;
        wake?.();
      }
    } catch {
      // A refusal no retry mends: the waiter's timeouts stand in.
    }
  })();
  return {
    live: true,
    next(timeoutMs) {
      if (arrived > 0) {
        arrived -= 1;
        return Promise.resolve(true);
      }
      if (controller.signal.aborted) return Promise.resolve(false);
      return new Promise((resolve) => {
        const done = (seen: boolean) => {
          clearTimeout(timer);
          wake = undefined;
          if (seen) arrived -= 1;
          resolve(seen);
        };
        const timer = setTimeout(() => done(false), timeoutMs);
        wake = () => done(true);
        controller.signal.addEventListener("abort", () => done(false), { once: true });
      });
    },
    close: () => controller.abort(),
  };
}
