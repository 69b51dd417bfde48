import { ApiError, apiErrorCode } from "./errors";

export interface HttpOptions {
  baseUrl: string;
  apiKey?: string;
  /** A sign-in session token, sent as `Authorization: Bearer` (account routes: API keys). */
  sessionToken?: string;
  /** Per request (ms). */
  timeoutMs?: number;
  /** How many times a 429 with a Retry-After is retried after it. */
  rateLimitRetries?: number;
  fetch?: typeof fetch;
}

export type Http = ReturnType<typeof createHttp>;

/** JSON over HTTP with the API's envelope: `data` on success, `ApiError` (with the stable `code`) otherwise. */
export function createHttp(options: HttpOptions) {
  const baseUrl = options.baseUrl.replace(/\/$/, "");
  const doFetch = options.fetch ?? fetch;
  const timeoutMs = options.timeoutMs ?? 120_000;

  async function request<T>(method: string, path: string, body?: unknown, attempt = 0): Promise<T> {
    let response: Response;
    try {
      response = await doFetch(`${baseUrl}${path}`, {
        method,
        headers: {
          accept: "application/json",
          ...(body === undefined ? {} : { "content-type": "application/json" }),
          ...(options.apiKey ? { "x-api-key": options.apiKey } : {}),
          ...(options.sessionToken ? { authorization: `Bearer ${options.sessionToken}` } : {}),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        // fetch keeps custom headers across a redirect to another origin: following one would hand the API key to it.
        redirect: "manual",
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (cause) {
      // Name the server tried and the socket's own reason (ECONNREFUSED...), not only undici's "fetch failed".
      const inner = (cause as Error).cause as { code?: string; message?: string } | undefined;
      const reason = inner?.code ?? inner?.message;
      const why = (cause as Error).message + (reason ? ` (${reason})` : "");
      throw new ApiError(0, "NETWORK_ERROR", `${method} ${baseUrl}${path}: ${why}; is the API at ${baseUrl} running?`, {}, { cause });
    }
    const text = await response.text();
    let parsed: { success?: boolean; data?: T; error?: { code?: string; message?: string } } | undefined;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    if (response.ok && parsed?.success === true) return parsed.data as T;
    const error = parsed?.error;
    // The request rate limit (Retry-After) is waited out; a 429 without it is a route's own limit (an agent's accepts
    // per minute, its assignment cap) that the caller handles: asking again at once would only count against it.
    const retryAfter = response.headers.get("retry-after");
    if (response.status === 429 && retryAfter !== null && attempt < (options.rateLimitRetries ?? 3)) {
      await new Promise((resolve) => setTimeout(resolve, retryAfterSeconds(retryAfter) * 1000));
      return request(method, path, body, attempt + 1);
    }
    throw new ApiError(
      response.status,
      apiErrorCode(error?.code, response.status),
      error?.message ?? `${method} ${path} answered ${response.status}`,
      error ?? {},
    );
  }

  return {
    get: <T>(path: string) => request<T>("GET", path),
    post: <T>(path: string, body: unknown = {}) => request<T>("POST", path, body),
    patch: <T>(path: string, body: unknown = {}) => request<T>("PATCH", path, body),
    del: <T>(path: string) => request<T>("DELETE", path),
    baseUrl,
  };
}

/** Retry-After as seconds (delay-seconds or an HTTP date), between 1 and 60. */
export function retryAfterSeconds(header: string | null): number {
  const seconds = header === null ? 1 : /^\d+$/.test(header.trim()) ? Number(header) : (Date.parse(header) - Date.now()) / 1000;
  return Math.min(60, Math.max(1, Number.isFinite(seconds) ? Math.ceil(seconds) : 1));
}
