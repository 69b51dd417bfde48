/**
 * What keeps a runner from hurting the server: a counting semaphore (tasks per agent, tasks across the server), a
 * fetch that refuses private networks and bounds the bytes it reads, and a redactor that keeps secrets out of
 * everything a model, a poster or a log line sees.
 */
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";

export interface Semaphore {
  /** Resolves with a release function once a permit is free; rejects when `signal` aborts first. */
  acquire(signal?: AbortSignal): Promise<() => void>;
  available(): number;
}

export function createSemaphore(limit: number): Semaphore {
  let used = 0;
  const waiting: Array<{ grant: () => void }> = [];
  const release = () => {
    used -= 1;
    const next = waiting.shift();
    if (next) next.grant();
  };
  return {
    available: () => Math.max(0, limit - used - waiting.length),
    acquire(signal) {
      if (signal?.aborted) return Promise.reject(signal.reason);
      return new Promise((resolve, reject) => {
        const grant = () => {
          used += 1;
          signal?.removeEventListener("abort", abort);
          let released = false;
          resolve(() => {
            if (!released) {
              released = true;
              release();
            }
          });
        };
        const entry = { grant };
        const abort = () => {
          const index = waiting.indexOf(entry);
          if (index >= 0) waiting.splice(index, 1);
          reject(signal?.reason);
        };
        if (used < limit) grant();
        else {
          waiting.push(entry);
          signal?.addEventListener("abort", abort, { once: true });
        }
      });
    },
  };
}

/** An address no hosted agent may reach unless private networks are allowed (loopback, private, link-local...). */
export function isPrivateAddress(address: string): boolean {
  const v4 = address.startsWith("::ffff:") ? address.slice(7) : address;
  if (isIP(v4) === 4) {
    const [a = 0, b = 0] = v4.split(".").map(Number);
    return (
      a === 0 ||
      a === 10 ||
      a === 127 ||
      (a === 100 && b >= 64 && b < 128) ||
      (a === 169 && b === 254) ||
      (a === 172 && b >= 16 && b < 32) ||
      (a === 192 && b === 168) ||
      a >= 224
    );
  }
  const v6 = address.toLowerCase();
  return v6 === "::" || v6 === "::1" || v6.startsWith("fc") || v6.startsWith("fd") || v6.startsWith("fe80") || v6.startsWith("ff");
}

/** Why a URL may not be used by a hosted agent, judged from its text alone (deploy time); undefined when it may. */
export function privateUrlReason(url: string): string | undefined {
  let host: string;
  try {
    host = new URL(url).hostname.replace(/^\[|\]$/g, "");
  } catch {
    return "is not a URL";
  }
  if (host === "localhost" || host.endsWith(".localhost") || (isIP(host) !== 0 && isPrivateAddress(host)))
    return "points at a private or loopback address";
  return undefined;
}

export class FetchRefused extends Error {
  override readonly name = "FetchRefused";
}

export interface BoundedFetchOptions {
  maxBytes: number;
  allowPrivateNetworks: boolean;
}

/**
 * A fetch for models and tools: the host must resolve to public addresses only (unless private networks are allowed),
 * redirects are not followed, and the body is read whole but never beyond `maxBytes` (the request fails instead), so a
 * huge or endless answer costs at most that much memory.
 */
export function boundedFetch(options: BoundedFetchOptions): typeof fetch {
  return async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (url.protocol !== "http:" && url.protocol !== "https:") throw new FetchRefused(`${url.protocol} is not http(s)`);
    if (!options.allowPrivateNetworks) {
      const reason = privateUrlReason(url.toString());
      if (reason) throw new FetchRefused(`the URL ${reason}`);
      const addresses = await lookup(url.hostname.replace(/^\[|\]$/g, ""), { all: true });
      if (addresses.some((a) => isPrivateAddress(a.address))) throw new FetchRefused("the host resolves to a private address");
    }
    const response = await fetch(input, { ...init, redirect: "manual" });
    const chunks: Uint8Array[] = [];
    let total = 0;
    if (response.body) {
      const reader = response.body.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        total += value.byteLength;
        if (total > options.maxBytes) {
          await reader.cancel().catch(() => undefined);
          throw new FetchRefused(`the answer is larger than ${options.maxBytes} bytes`);
        }
        chunks.push(value);
      }
    }
    const headers = new Headers(response.headers);
    headers.delete("content-encoding");
    headers.delete("content-length");
    const body = response.status === 204 || response.status === 304 ? null : Buffer.concat(chunks);
    return new Response(body, { status: response.status, statusText: response.statusText, headers });
  };
}

/** Replaces every secret (and the secret without a 0x prefix) with `[redacted]`. */
export function createRedactor(secrets: Iterable<string>): (text: string) => string {
  const values = new Set<string>();
  for (const secret of secrets) {
    if (secret.length < 4) continue;
    values.add(secret);
    if (/^0x/i.test(secret) && secret.length > 6) values.add(secret.slice(2));
  }
  const sorted = [...values].sort((a, b) => b.length - a.length);
  return (text) => {
    let out = text;
    for (const value of sorted) if (out.includes(value)) out = out.split(value).join("[redacted]");
    return out;
  };
}

/** A text cut to `max` characters, saying so. */
export function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}\n[truncated: ${text.length - max} more characters]`;
}
