import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { redactUrls } from "@market/core/text";
import { ERROR_CODES, MarketError, type ErrorCode, type ErrorCodeAlias, type ErrorDetail } from "@market/core/errors";

export { MarketError } from "@market/core/errors";

/** Shorthand for throwing a coded error from a route or service. */
export function fail(
  code: ErrorCode | ErrorCodeAlias,
  message?: string,
  options?: { reason?: string; details?: ErrorDetail[]; cause?: unknown },
): never {
  throw new MarketError(code, message, options);
}

/** Fastify's own error codes for request bodies, mapped onto the table. */
const FASTIFY_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_INVALID_JSON_BODY: "INVALID_JSON",
  FST_ERR_CTP_EMPTY_JSON_BODY: "INVALID_JSON",
  FST_ERR_CTP_BODY_TOO_LARGE: "BODY_TOO_LARGE",
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: "BODY_LENGTH_MISMATCH",
  FST_ERR_CTP_INVALID_MEDIA_TYPE: "UNSUPPORTED_MEDIA_TYPE",
  FST_ERR_CTP_INVALID_TYPE: "UNSUPPORTED_MEDIA_TYPE",
  FST_ERR_CTP_EMPTY_TYPE: "UNSUPPORTED_MEDIA_TYPE",
  ECONNRESET: "REQUEST_ABORTED",
  ECONNABORTED: "REQUEST_ABORTED",
};

interface ValidationIssue {
  instancePath?: string;
  keyword?: string;
  message?: string;
  params?: Record<string, unknown>;
}

/** Ajv's error, turned into the field it names (`body.amount`, `query.capabilities`). */
function validationDetails(error: FastifyError & { validationContext?: string }): ErrorDetail[] {
  // Fastify says `querystring`; fields are named `query.<name>` everywhere else (and in route code).
  const context = error.validationContext === "querystring" ? "query" : (error.validationContext ?? "body");
  return ((error.validation ?? []) as ValidationIssue[]).map((issue) => {
    const missing = issue.params?.missingProperty;
    const extra = issue.params?.additionalProperty;
    const pathParts = (issue.instancePath ?? "").split("/").filter(Boolean);
    if (typeof missing === "string") pathParts.push(missing);
    if (typeof extra === "string") pathParts.push(extra);
    const field = [context, ...pathParts].join(".");
    const message =
      typeof extra === "string" ? "is not a known field" : typeof missing === "string" ? "is required" : (issue.message ?? "is invalid");
    return { field, message };
  });
}

export function toMarketError(error: unknown): MarketError {
  if (error instanceof MarketError) return error;
  const e = error as FastifyError & { validationContext?: string; type?: string };
  if (e?.validation) {
    const details = validationDetails(e);
    const first = details[0];
    return new MarketError("VALIDATION_FAILED", first ? `${first.field} ${first.message}` : "invalid request", { details });
  }
  // ethers' getAddress() on a client's value (a mixed-case address with a wrong EIP-55 checksum): the client's fault.
  const ethersArgument = error as { code?: string; argument?: string; shortMessage?: string };
  if (ethersArgument?.code === "INVALID_ARGUMENT" && ethersArgument.argument === "address") {
    return new MarketError("INVALID_ADDRESS", `Not a valid address (${ethersArgument.shortMessage ?? "bad checksum"}).`, { cause: error });
  }
  const mapped = e?.code ? FASTIFY_CODES[e.code] : undefined;
  if (mapped) return new MarketError(mapped, undefined, { cause: error });
  if (e?.type === "request.aborted" || e?.message === "aborted") return new MarketError("REQUEST_ABORTED", undefined, { cause: error });
  return new MarketError("INTERNAL_ERROR", ERROR_CODES.INTERNAL_ERROR.description, { cause: error });
}

export function errorBody(error: MarketError) {
  return {
    success: false as const,
    error: {
      code: error.code,
      message: error.message,
      ...(error.reason === undefined ? {} : { reason: error.reason }),
      ...(error.details === undefined ? {} : { details: error.details }),
    },
  };
}

/**
 * An error as the server logs it: its type, code, message, stack and causes, each text with URLs cut to their host
 * (`redactUrls`): a provider's error names the RPC URL it called, and many providers put the key in it.
 */
export function loggableError(error: unknown, depth = 0): unknown {
  if (!(error instanceof Error)) return typeof error === "string" ? redactUrls(error) : error;
  const { code } = error as { code?: unknown };
  return {
    type: error.name,
    message: redactUrls(error.message),
    ...(typeof code === "string" || typeof code === "number" ? { code } : {}),
    ...(error.stack ? { stack: redactUrls(error.stack) } : {}),
    ...(error.cause !== undefined && depth < 4 ? { cause: loggableError(error.cause, depth + 1) } : {}),
  };
}

export function sendError(request: FastifyRequest, reply: FastifyReply, error: unknown) {
  const coded = toMarketError(error);
  if (coded.status >= 500) request.log.error({ err: loggableError(error) }, "request failed");
  if (coded.code === "REQUEST_ABORTED" || coded.code === "BODY_TOO_LARGE" || coded.code === "BODY_LENGTH_MISMATCH") {
    // The client may still be sending: close rather than read the rest.
    reply.header("connection", "close");
  }
  return reply.status(coded.status).send(errorBody(coded));
}
