import { ERROR_CODES, isErrorCode, type ErrorCode, type ErrorCodeInfo } from "@market/core/errors";

/**
 * The code of every `ApiError`: one of the error codes of core/errors.ts (docs/errors.md), `HTTP_<status>` when the
 * service answered without a code, or, from a service newer than this SDK, a code the table does not have yet, passed
 * on as it was answered (`isErrorCode` tells the two apart).
 */
export type ApiErrorCode = ErrorCode | `HTTP_${number}` | (string & {});

/** The `ApiErrorCode` of a code as answered: the code itself, else `HTTP_<status>`. */
export function apiErrorCode(code: string | undefined, status: number): ApiErrorCode {
  return code !== undefined && code !== "" ? code : `HTTP_${status}`;
}

/**
 * Every refusal the SDK reports: from the API (`status` is the HTTP status, `body` the answer's `error` object) or
 * from the client itself before anything was sent (transaction guard, row checks, `OWNER_MISMATCH`), with the status
 * the code table gives. Branch on `code`; `message` may change.
 */
export class ApiError extends Error {
  override readonly name = "ApiError";
  readonly status: number;
  readonly code: ApiErrorCode;
  readonly body: ApiErrorBody;

  constructor(status: number, code: ApiErrorCode, message: string, body: Partial<ApiErrorBody> = {}, options?: { cause?: unknown }) {
    super(message, options);
    this.status = status;
    this.code = code;
    this.body = { code, message, ...body };
  }

  /** True when the same request may succeed later unchanged (rate limits, pending transactions, lagging index). */
  get retryable(): boolean {
    return isRetryableCode(this.code);
  }
}

/** Whether a refusal with this code may succeed later unchanged: the code table says so, or the service failed (5xx without a code). */
export function isRetryableCode(code: string): boolean {
  if (isErrorCode(code)) return (ERROR_CODES[code] as ErrorCodeInfo).retryable === true;
  return /^HTTP_5[0-9]{2}$/.test(code);
}

export interface ApiErrorBody {
  code: string;
  message: string;
  reason?: string;
  details?: Array<Record<string, unknown>>;
  /** Per-row refusals of a bulk call (`INVALID_ROWS`). */
  errors?: RowError[];
  [key: string]: unknown;
}

export interface RowError {
  /** 0-based index of the row in the call (and the file line, for files). */
  index: number;
  line?: number;
  column?: string;
  code: string;
  message: string;
}

/** The HTTP status the code table gives a code (400 for a code it does not know, 0-status client codes included). */
export function statusOfCode(code: string): number {
  return (isErrorCode(code) ? ERROR_CODES[code].status : 0) || 400;
}

/** A refusal raised by the client, with the status of the code table. */
export function clientError(code: keyof typeof ERROR_CODES, message: string, body: Partial<ApiErrorBody> = {}): ApiError {
  const status = ERROR_CODES[code].status || 400;
  return new ApiError(status, code, message, body);
}
