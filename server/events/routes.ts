import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyRequest } from "fastify";
import { authenticated, principalOf, type Authenticate } from "../auth";
import type { ChainRegistry } from "../chains";
import type { Db } from "../db";
import { CREDENTIALS, errorResponses, ok } from "../http/schemas";
import { Envelope, EVENT_TYPES, EventPage, EventsQuery, type EventType } from "@market/core/api";
import { MarketError } from "@market/core/errors";
import type { ChainName } from "@market/core/chains";
import type { EventFeed } from "./feed";
import { MAX_PAGE, readEvents, walletsOf, type EventFilter } from "./replay";
import { lastCursor } from "./log";

export interface EventRoutesDeps {
  auth: Authenticate;
  db: Db;
  chains: ChainRegistry;
  feed: EventFeed;
  /** Streams one account may hold open at once. */
  streamsPerAccount: number;
  /** Comment line sent on an idle stream so proxies keep it open (ms). */
  heartbeatMs?: number;
}

/** The prefix app.ts registers `eventRoutes` under. */
export const EVENTS_PREFIX = "/api/v1/events";

const DEFAULT_PAGE = 100;
const STREAM_PAGE = 200;

/** The replay (`GET /api/v1/events`) and its live form over Server-Sent Events (`GET /api/v1/events/stream`). */
export const eventRoutes: FastifyPluginAsyncTypebox<EventRoutesDeps> = async (app, deps) => {
  const { auth, db, chains, feed } = deps;
  const heartbeatMs = deps.heartbeatMs ?? 15_000;
  const openStreams = new Map<number, number>();
  let closing = false;
  const stops = new Set<() => void>();
  // Open streams end before the server waits for its connections to close.
  app.addHook("preClose", async () => {
    closing = true;
    for (const stop of stops) stop();
  });

  app.addHook("onRequest", authenticated(auth));

  async function filterOf(request: FastifyRequest, query: EventsQuery, after: string) {
    const principal = principalOf(request);
    const chain = query.chain ? chains.require(query.chain).config.name : chains.posting().config.name;
    const cursor = after === "now" ? await lastCursor(db, chain) : Number(after);
    const filter: EventFilter = { chain, after: cursor, wallets: await walletsOf(db, principal), ...typesOf(query.types) };
    if (query.taskHash) filter.taskHash = query.taskHash;
    return { principal, filter };
  }

  app.get(
    "/",
    {
      schema: {
        tags: ["events"],
        summary: "Events after a cursor, oldest first, that this key may see (replay)",
        security: CREDENTIALS,
        querystring: EventsQuery,
        response: { 200: Envelope(EventPage), ...errorResponses(401) },
      },
    },
    async (request) => {
      const limit = Number(request.query.limit ?? DEFAULT_PAGE);
      if (limit < 1 || limit > MAX_PAGE) {
        throw new MarketError("VALIDATION_FAILED", `limit must be 1 to ${MAX_PAGE}.`, { details: [{ field: "limit", message: `1 to ${MAX_PAGE}` }] });
      }
      const { filter } = await filterOf(request, request.query, request.query.after ?? "0");
      const { events, more, next } = await readEvents(db, filter, limit);
      return ok({ chain: filter.chain as ChainName, events, next: String(next), more });
    },
  );

  app.get(
    "/stream",
    {
      schema: {
        tags: ["events"],
        summary: "The same events as a Server-Sent Events stream; `Last-Event-ID` (or `after`) resumes",
        description:
          "Each event is `id: <cursor>`, `event: <type>`, `data: <event JSON>`. Authenticate with a header (`X-API-Key` or " +
          "`Authorization: Bearer <session token>`); a browser reads the stream with fetch(), never with a secret in the URL.",
        security: CREDENTIALS,
        querystring: EventsQuery,
        response: errorResponses(401),
      },
    },
    async (request, reply) => {
      const resume = request.headers["last-event-id"];
      const resumeText = Array.isArray(resume) ? resume[0] : resume;
      if (resumeText !== undefined && !/^[0-9]{1,15}$/.test(resumeText)) {
        throw new MarketError("VALIDATION_FAILED", "Last-Event-ID must be a cursor.", { details: [{ field: "last-event-id", message: "a cursor" }] });
      }
      const { principal, filter } = await filterOf(request, request.query, resumeText ?? request.query.after ?? "0");
      const open = openStreams.get(principal.accountId) ?? 0;
      if (open >= deps.streamsPerAccount) throw new MarketError("EVENT_STREAMS_EXCEEDED", undefined, { details: [{ message: "open", open }] });
      openStreams.set(principal.accountId, open + 1);

      reply.hijack();
      const raw = reply.raw;
      raw.writeHead(200, {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-cache, no-transform",
        connection: "keep-alive",
        "x-accel-buffering": "no",
      });
      raw.write("retry: 1000\n\n");
      let stopped = false;
      const stop = () => {
        stopped = true;
        if (!raw.writableEnded) raw.end();
      };
      stops.add(stop);
      request.raw.on("close", stop);
      raw.on("close", stop);
      let cursor = filter.after;
      try {
        while (!stopped && !closing) {
          const { events, more, next } = await readEvents(db, { ...filter, after: cursor }, STREAM_PAGE);
          for (const event of events) raw.write(`id: ${event.cursor}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
          cursor = next;
          if (more) continue;
          const head = await feed.waitPast(filter.chain, cursor, heartbeatMs);
          if (!stopped && head <= cursor) raw.write(": keep-alive\n\n");
        }
      } catch (error) {
        request.log.warn({ err: error }, "event stream ended by an error");
      } finally {
        stops.delete(stop);
        openStreams.set(principal.accountId, (openStreams.get(principal.accountId) ?? 1) - 1);
        if (!raw.writableEnded) raw.end();
      }
    },
  );
};

function typesOf(text: string | undefined): { types?: EventType[] } {
  if (text === undefined || text === "") return {};
  const types = text.split(",").map((t) => t.trim());
  const unknown = types.filter((t) => !(EVENT_TYPES as readonly string[]).includes(t));
  if (unknown.length > 0) {
    throw new MarketError("VALIDATION_FAILED", `Unknown event types: ${unknown.join(", ")}.`, {
      details: [{ field: "types", message: "unknown event type" }],
    });
  }
  return { types: types as EventType[] };
}
