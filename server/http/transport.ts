/**
 * The HTTP transport of the API, apart from its wiring (server/app.ts): Fastify's server options (logging with
 * credentials redacted, the error envelope for parser and router refusals, trusted proxies, the body limit, AJV's
 * formats, memoized schema compilers) and the `transport` plugin (JSON only, refusing U+0000 and lone surrogates, the
 * OpenAPI document, the body-encoding guard, the rate limiter, the error and not-found handlers).
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest, FastifyServerOptions } from "fastify";
import { STATUS_CODES, type IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import swagger from "@fastify/swagger";
import { isAddress as isChecksummedAddress } from "ethers";
import type { ServerConfig } from "../config";
import { MarketError, errorBody, sendError } from "./errors";
import { createRateLimiter } from "./rate-limit";
import { memoizedSchemaCompilers } from "./schema-compilers";
import { ADDRESS_FORMAT, ErrorEnvelope } from "@market/core/api";
import type { ErrorCode } from "@market/core/errors";
import { hasLoneSurrogate } from "@market/core/text";

export const DEFAULT_BODY_LIMIT = 1024 * 1024;

export interface TransportOptions {
  /** Pino options, or false for silence (tests). `stream` replaces stdout (tests read what is logged). */
  logger?: boolean | { level: string; stream?: { write(line: string): void } };
  trustProxy?: ServerConfig["trustProxy"];
}

/** Fastify's `trustProxy`; a hop count trusts the nearest `hops` proxies. */
function trustedProxies(setting: ServerConfig["trustProxy"] | undefined): boolean | string[] | ((address: string, hop: number) => boolean) {
  if (typeof setting !== "number") return setting ?? false;
  return (_address, hop) => hop < setting;
}

/** Fastify's options for the API's server (they are given when it is made, before any plugin). */
export function serverOptions(options: TransportOptions): FastifyServerOptions {
  return {
    logger:
      options.logger === false
        ? false
        : {
            level: typeof options.logger === "object" ? options.logger.level : "info",
            // Credentials never reach the logs.
            redact: ["req.headers.authorization", 'req.headers["x-api-key"]', 'req.headers["x-admin-key"]', "req.headers.cookie"],
            ...(typeof options.logger === "object" && options.logger.stream ? { stream: options.logger.stream } : {}),
          },
    clientErrorHandler: answerClientError,
    // Router refusals (a path parameter over 100 characters, bad percent-encoding) answer the envelope too.
    frameworkErrors: (error, request, reply) => {
      const badPath = error.code === "FST_ERR_MAX_PARAM_LENGTH" || error.code === "FST_ERR_BAD_URL";
      const message = error.code === "FST_ERR_MAX_PARAM_LENGTH" ? "is too long" : "is not a valid URL component";
      void sendError(
        request,
        reply,
        badPath ? new MarketError("VALIDATION_FAILED", `A path parameter ${message}.`, { details: [{ field: "params", message }] }) : error,
      );
    },
    // Behind a reverse proxy, the client IP (rate limits) comes from X-Forwarded-For of the trusted hops only.
    trustProxy: trustedProxies(options.trustProxy),
    bodyLimit: DEFAULT_BODY_LIMIT,
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, allErrors: false, formats: { [ADDRESS_FORMAT]: isChecksummedAddress } } },
    // Answers are not re-validated: the serializer only needs to know the format exists.
    serializerOpts: { ajv: { formats: { [ADDRESS_FORMAT]: true } } },
    schemaController: { compilersFactory: memoizedSchemaCompilers },
    // Requests carry no trailing-slash variants or case games.
    routerOptions: { ignoreTrailingSlash: true },
  };
}

export interface TransportPluginOptions {
  publicUrl: string;
  rateLimit: ServerConfig["rateLimit"];
  now: () => number;
  /** Tokens whose calls skip the per-IP window (the hosted runners of this process). */
  exemptFromIpLimit: (token: string) => boolean;
  /** A path no route serves, answered with a page (the web app's, issue 28) instead of NOT_FOUND; false when none. */
  pageOf?: (request: FastifyRequest, reply: FastifyReply) => false | Promise<FastifyReply>;
}

/**
 * The transport set on the root of the app (not encapsulated: `skip-override`, as fastify-plugin marks a plugin), so
 * every route plugin registered after it gets its parsers, hooks and handlers.
 */
const transportPlugin: FastifyPluginAsync<TransportPluginOptions> = async (app, { publicUrl, rateLimit, now, exemptFromIpLimit, pageOf }) => {
  // JSON only: Fastify's default text/plain parser would hand routes a string instead of answering 415.
  app.removeContentTypeParser("text/plain");
  // Fastify's JSON parser, refusing U+0000 in any string (PostgreSQL text cannot hold it: a 500 on insert otherwise) and
  // a lone UTF-16 surrogate (`\ud800` alone: stored and hashed as U+FFFD, so two briefs would hash alike).
  const parseJson = app.getDefaultJsonParser("error", "error");
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (request, raw, done) => {
    const text = raw as string;
    void parseJson(request, text, (error: Error | null, body?: unknown) => {
      const suspect = !error && (text.includes("\\u0000") || /\\u[dD][89a-fA-F]/.test(text));
      const found = suspect ? fieldWithBadText(body) : undefined;
      if (found === undefined) return done(error, body);
      const [field, problem] = found;
      const refusal =
        problem === "nul"
          ? new MarketError("VALIDATION_FAILED", `${field} contains U+0000`, { details: [{ field, message: "contains U+0000" }] })
          : new MarketError("LONE_SURROGATE", `${field} holds a UTF-16 surrogate without its pair`, {
              details: [{ field, message: "holds a lone surrogate (not Unicode text)" }],
            });
      done(refusal, undefined);
    });
  });
  app.addSchema(ErrorEnvelope);
  await app.register(swagger, {
    // Shared schemas keep their $id as their name under components.schemas (`ErrorEnvelope`, not `def-0`).
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === "string" ? json.$id : `def-${i}`) },
    openapi: {
      openapi: "3.0.3",
      info: {
        title: "market API",
        version: "1.0.0",
        description:
          "Task marketplace API. Successful answers are `{ success: true, data }`; errors are " +
          "`{ success: false, error: { code, message, reason?, details? } }` with the stable codes of docs/errors.md. " +
          "Amounts are strings of raw units. Authenticate with `X-API-Key: sk_...` or `Authorization: Bearer <session token>`.",
      },
      servers: [{ url: publicUrl }],
      components: {
        securitySchemes: {
          apiKey: { type: "apiKey", in: "header", name: "X-API-Key" },
          session: { type: "http", scheme: "bearer", description: "Session token from POST /api/v1/auth/verify." },
          adminKey: { type: "apiKey", in: "header", name: "X-Admin-Key", description: "The service admin's key (MARKET_ADMIN_API_KEY)." },
        },
      },
    },
  });

  app.addHook("onRequest", guardBodyEncoding);
  app.addHook("onRequest", createRateLimiter(rateLimit, now, { exemptFromIpLimit }));
  app.setErrorHandler((error, request, reply) => sendError(request, reply, error));
  app.setNotFoundHandler(
    (request, reply) =>
      (pageOf !== undefined && pageOf(request, reply)) ||
      sendError(request, reply, new MarketError("NOT_FOUND", `No route ${request.method} ${request.url.split("?")[0]}`)),
  );
  app.get("/openapi.json", { schema: { hide: true } }, async () => app.swagger());
};
(transportPlugin as unknown as Record<symbol, boolean>)[Symbol.for("skip-override")] = true;
export const transport = transportPlugin;

/** Node's HTTP parser errors, raised before a request reaches Fastify, onto the table. */
const CLIENT_ERROR_CODES: Record<string, ErrorCode> = {
  // The connection ended before Content-Length bytes arrived.
  HPE_INVALID_EOF_STATE: "BODY_LENGTH_MISMATCH",
  HPE_INVALID_CONTENT_LENGTH: "BODY_LENGTH_MISMATCH",
  HPE_UNEXPECTED_CONTENT_LENGTH: "BODY_LENGTH_MISMATCH",
  HPE_HEADER_OVERFLOW: "BODY_TOO_LARGE",
  ERR_HTTP_REQUEST_TIMEOUT: "REQUEST_ABORTED",
};

/**
 * Answers a request Node could not parse with the same error envelope as every route (Fastify's default answers
 * `{ error, message, statusCode }` without a code). Other parse errors on a kept-alive connection come from bytes
 * beyond the previous request's Content-Length, hence BODY_LENGTH_MISMATCH as the fallback.
 */
function answerClientError(error: Error & { code?: string }, socket: Duplex) {
  if (error.code === "ECONNRESET" || socket.destroyed) return;
  if (socket.writable) {
    const coded = new MarketError(CLIENT_ERROR_CODES[error.code ?? ""] ?? "BODY_LENGTH_MISMATCH");
    const body = JSON.stringify(errorBody(coded));
    socket.write(
      `HTTP/1.1 ${coded.status} ${STATUS_CODES[coded.status]}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `Content-Type: application/json; charset=utf-8\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}

/**
 * The first field of a parsed body (`body.tasks.0.publicBrief`) whose name or text holds U+0000 or a lone surrogate,
 * and which; walked without recursion.
 */
function fieldWithBadText(body: unknown): [string, "nul" | "surrogate"] | undefined {
  const problem = (text: string) => (text.includes("\0") ? "nul" : hasLoneSurrogate(text) ? "surrogate" : undefined);
  const pending: Array<[unknown, string]> = [[body, "body"]];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [value, field] = next;
    if (typeof value === "string") {
      const found = problem(value);
      if (found) return [field, found];
    } else if (value !== null && typeof value === "object") {
      for (const [key, child] of Object.entries(value)) {
        const found = problem(key);
        if (found) return [field, found];
        pending.push([child, `${field}.${key}`]);
      }
    }
  }
  return undefined;
}

/** Refuses bodies the JSON parser would misread: a charset other than UTF-8, or a compressed body. */
async function guardBodyEncoding(request: { headers: IncomingMessage["headers"] }) {
  const encoding = request.headers["content-encoding"];
  if (encoding !== undefined && encoding.trim().toLowerCase() !== "identity") {
    throw new MarketError("UNSUPPORTED_ENCODING", `Content-Encoding ${encoding} is not accepted; send the body uncompressed.`);
  }
  const type = request.headers["content-type"];
  if (type) {
    const charset = /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(type)?.[1];
    if (charset && !/^utf-?8$/i.test(charset)) {
      throw new MarketError("UNSUPPORTED_CHARSET", `charset ${charset} is not accepted; send UTF-8.`);
    }
  }
}
