/**
 * What keeps a runner from hurting the server: the server's task slots shared fairly between owners, a
 * fetch that refuses private networks (checked at connect time, on the address connected to) and bounds the bytes it
 * reads, and a redactor that keeps secrets out of everything a model, a poster or a log line sees.
 */
import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { isIP } from "node:net";
import { Agent, fetch as undiciFetch, type Dispatcher } from "undici";

/** Permits as one agent sees them (its owner's share of the server's slots). */
export interface Semaphore {
  /** Resolves with a release function once a permit is free; rejects when `signal` aborts first. */
  acquire(signal?: AbortSignal): Promise<() => void>;
  available(): number;
}

export interface FairSemaphore {
  /** A permit for `key` (an owner) once one is free and the key holds less than its share; rejects when `signal` aborts first. */
  acquire(key: string, signal?: AbortSignal): Promise<() => void>;
  /** Permits `key` could take now. */
  available(key: string): number;
  /** Grants waiting permits the shares now allow (call after the number of active keys changed). */
  recheck(): void;
}

/**
 * A semaphore of `limit` permits shared fairly between keys (fairness units: a fee-paid agent, or an owner's unpaid
 * agents together; runner/index.ts `fairnessUnit`): a key holds at most its share, `limit` divided by `activeKeys()`
 * (at least 1), so one key cannot take every permit while others run. A freed permit goes to the waiter under its
 * share whose key holds fewest, and a key holding nothing may always queue for one, so busy keys cannot starve it. Shares shrink when
 * owners arrive without taking back permits already held: those come back as their tasks end (each bounded by its
 * time budget).
 */
export function createFairSemaphore(limit: number, activeKeys: () => number): FairSemaphore {
  let used = 0;
  const held = new Map<string, number>();
  const waiting: Array<{ key: string; grant: () => void }> = [];
  const share = () => Math.max(1, Math.floor(limit / Math.max(1, activeKeys())));
  const holding = (key: string) => held.get(key) ?? 0;
  const grantable = (key: string) => used < limit && holding(key) < share();
  /** When each key was last granted a permit (a counter): the longest unserved key goes first among equals. */
  const served = new Map<string, number>();
  let grants = 0;
  const before = (a: string, b: string) => holding(a) < holding(b) || (holding(a) === holding(b) && (served.get(a) ?? 0) < (served.get(b) ?? 0));

  /**
   * Grants free permits to waiters under their share, the key holding fewest first, and among those the key served
   * longest ago (the first come within a key): a key that holds nothing gets the next free permit before keys already
   * working, and a key that just freed one does not take it back ahead of one that has waited (issue 23 item 4), so
   * keys whose tasks hang cannot keep passing permits among their own waiters.
   */
  function pump() {
    while (used < limit) {
      let best = -1;
      for (let i = 0; i < waiting.length; i++) {
        const entry = waiting[i]!;
        if (grantable(entry.key) && (best < 0 || before(entry.key, waiting[best]!.key))) best = i;
      }
      if (best < 0) return;
      const [entry] = waiting.splice(best, 1);
      entry!.grant();
    }
  }

  return {
    recheck: pump,
    available(key) {
      const queued = waiting.filter((w) => w.key === key).length;
      const mine = share() - holding(key) - queued;
      // An idle key (holding and awaiting nothing) may always queue one: it is served before any key already working.
      if (holding(key) === 0 && queued === 0) return Math.max(1, Math.min(limit - used, mine));
      // Waiters of other keys under their share take the next free permits first.
      const ahead = waiting.filter((w) => w.key !== key && holding(w.key) < share()).length;
      return Math.max(0, Math.min(limit - used - ahead, mine));
    },
    acquire(key, signal) {
      if (signal?.aborted) return Promise.reject(signal.reason);
      return new Promise((resolve, reject) => {
        const grant = () => {
          used += 1;
          served.set(key, ++grants);
          held.set(key, holding(key) + 1);
          signal?.removeEventListener("abort", abort);
          let released = false;
          resolve(() => {
            if (released) return;
            released = true;
            used -= 1;
            const left = holding(key) - 1;
            if (left > 0) held.set(key, left);
            else held.delete(key);
            pump();
          });
        };
        const entry = { key, grant };
        const abort = () => {
          const index = waiting.indexOf(entry);
          if (index >= 0) waiting.splice(index, 1);
          reject(signal?.reason);
        };
        if (grantable(key)) grant();
        else {
          waiting.push(entry);
          signal?.addEventListener("abort", abort, { once: true });
        }
      });
    },
  };
}

function isPrivateV4([a = 0, b = 0]: readonly number[]): boolean {
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

/** The 16 bytes of an IPv6 address (`::` shorthand and a dotted IPv4 tail included); undefined when it is not one. */
function ipv6Bytes(address: string): number[] | undefined {
  if (isIP(address) !== 6) return undefined;
  let text = address.toLowerCase();
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const [a = 0, b = 0, c = 0, d = 0] = dotted[1]!.split(".").map(Number);
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = "", tail] = text.split("::");
  const groups = (part: string) => (part === "" ? [] : part.split(":").map((g) => parseInt(g, 16)));
  const left = groups(head);
  const right = tail === undefined ? [] : groups(tail);
  const words = [...left, ...Array<number>(8 - left.length - right.length).fill(0), ...right];
  return words.flatMap((w) => [w >> 8, w & 0xff]);
}

/**
 * An address no hosted agent may reach unless private networks are allowed (loopback, private, link-local...). An IPv6
 * address that carries an IPv4 one (IPv4-mapped `::ffff:a.b.c.d` in any spelling, NAT64 `64:ff9b::/96`, 6to4
 * `2002::/16`) is judged by that IPv4 address: `[::ffff:127.0.0.1]` connects to loopback.
 */
export function isPrivateAddress(address: string): boolean {
  if (isIP(address) === 4) return isPrivateV4(address.split(".").map(Number));
  const bytes = ipv6Bytes(address);
  if (!bytes) return false;
  const zeros = (from: number, to: number) => bytes.slice(from, to).every((b) => b === 0);
  // IPv4-mapped (::ffff:0:0/96): the kernel connects to the IPv4 address.
  if (zeros(0, 10) && bytes[10] === 0xff && bytes[11] === 0xff) return isPrivateV4(bytes.slice(12));
  // ::/96: unspecified, loopback and the deprecated IPv4-compatible addresses.
  if (zeros(0, 12)) return true;
  // NAT64 (64:ff9b::/96) and 6to4 (2002::/16) reach the IPv4 address they carry.
  if (bytes[0] === 0x00 && bytes[1] === 0x64 && bytes[2] === 0xff && bytes[3] === 0x9b && zeros(4, 12)) return isPrivateV4(bytes.slice(12));
  if (bytes[0] === 0x20 && bytes[1] === 0x02) return isPrivateV4(bytes.slice(2, 6));
  const [first = 0, second = 0] = bytes;
  // Unique local fc00::/7, link-local fe80::/10, site-local fec0::/10, multicast ff00::/8.
  return (first & 0xfe) === 0xfc || (first === 0xfe && (second & 0x80) === 0x80) || first === 0xff;
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

/** `dns.lookup`'s shape, as `net.connect` calls it (`all` set when it tries every address). */
export type LookupFunction = (
  hostname: string,
  options: { all?: boolean; family?: number | string; hints?: number },
  callback: (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
) => void;

export interface BoundedFetchOptions {
  maxBytes: number;
  allowPrivateNetworks: boolean;
  /** Resolves host names when connecting; the system's resolver (`dns.lookup`) when absent. Tests name their hosts. */
  lookup?: LookupFunction;
}

/**
 * The resolver a connection uses, checking what it answers: with private networks refused, a host any of whose
 * addresses is private fails the connection (FetchRefused). The check is made on the very answer the socket connects
 * to, for every new connection: a host name cannot pass a check with a public address and then connect to a private
 * one (DNS rebinding).
 */
export function checkedLookup(base: LookupFunction, allowPrivateNetworks: boolean): LookupFunction {
  return (hostname, options, callback) => {
    base(hostname, { ...options, all: true }, (error, result) => {
      if (error) return callback(error, options.all ? [] : "");
      const addresses: LookupAddress[] = Array.isArray(result) ? result : [{ address: result, family: isIP(result) }];
      if (addresses.length === 0)
        return callback(Object.assign(new Error(`${hostname} has no address`), { code: "ENOTFOUND" }), options.all ? [] : "");
      if (!allowPrivateNetworks && addresses.some((a) => isPrivateAddress(a.address)))
        return callback(new FetchRefused(`the host ${hostname} resolves to a private address`), options.all ? [] : "");
      if (options.all) return callback(null, addresses);
      const first = addresses[0]!;
      return callback(null, first.address, first.family);
    });
  };
}

/** The system's resolver (`dns.lookup`) in LookupFunction's shape. */
const systemLookup: LookupFunction = (hostname, options, callback) =>
  dnsLookup(hostname, { all: options.all === true, hints: options.hints, family: familyOf(options.family) }, callback);

function familyOf(family: number | string | undefined): 0 | 4 | 6 {
  return family === 4 || family === "IPv4" ? 4 : family === 6 || family === "IPv6" ? 6 : 0;
}
/** One connection pool per (resolver, private networks allowed): connections are reused, and each new one is checked. */
const dispatchers = new WeakMap<LookupFunction, Map<boolean, Dispatcher>>();

function dispatcherFor(lookup: LookupFunction, allowPrivateNetworks: boolean): Dispatcher {
  let byMode = dispatchers.get(lookup);
  if (!byMode) dispatchers.set(lookup, (byMode = new Map()));
  let dispatcher = byMode.get(allowPrivateNetworks);
  if (!dispatcher) {
    dispatcher = new Agent({ connect: { lookup: checkedLookup(lookup, allowPrivateNetworks) } });
    byMode.set(allowPrivateNetworks, dispatcher);
  }
  return dispatcher;
}

/** The FetchRefused behind a failed fetch (undici answers `TypeError: fetch failed` with the cause), if any. */
function refusalIn(error: unknown): FetchRefused | undefined {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) if (e instanceof FetchRefused) return e;
  return undefined;
}

/**
 * A fetch for models and tools: unless private networks are allowed, the URL may not name a private address and its
 * host must resolve to public addresses only, checked at connect time on the address connected to (`checkedLookup`,
 * for every connection: no DNS rebinding between a check and the connection). Redirects are never followed (a 3xx is
 * answered as it is, so no redirect reaches an unchecked host), and the body is read whole but never beyond `maxBytes`
 * (the request fails instead), so a huge or endless answer costs at most that much memory.
 */
export function boundedFetch(options: BoundedFetchOptions): typeof fetch {
  const dispatcher = dispatcherFor(options.lookup ?? systemLookup, options.allowPrivateNetworks);
  return async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (url.protocol !== "http:" && url.protocol !== "https:") throw new FetchRefused(`${url.protocol} is not http(s)`);
    if (!options.allowPrivateNetworks) {
      // An address written in the URL is connected to without a lookup: judged by its text.
      const reason = privateUrlReason(url.toString());
      if (reason) throw new FetchRefused(`the URL ${reason}`);
    }
    let response: Awaited<ReturnType<typeof undiciFetch>>;
    try {
      response = await undiciFetch(url, {
        method: init?.method ?? (input instanceof Request ? input.method : "GET"),
        headers: init?.headers ?? (input instanceof Request ? input.headers : undefined),
        body: (init?.body ?? null) as string | Uint8Array | null,
        signal: init?.signal ?? null,
        redirect: "manual",
        dispatcher,
      });
    } catch (error) {
      throw refusalIn(error) ?? error;
    }
    const chunks: Uint8Array[] = [];
    let total = 0;
    if (response.body) {
      const reader = response.body.getReader();
      try {
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
      } catch (error) {
        throw refusalIn(error) ?? error;
      }
    }
    const headers = new Headers(response.headers);
    headers.delete("content-encoding");
    headers.delete("content-length");
    const body = response.status === 204 || response.status === 304 ? null : Buffer.concat(chunks);
    return new Response(body, { status: response.status, statusText: response.statusText, headers });
  };
}

/**
 * Replaces every secret (and the secret without a 0x prefix) with `[redacted]`, in plain text and in JSON text: a
 * secret with a `"`, a `\` or a control character is written escaped inside JSON (`JSON.stringify`), so its escaped
 * form is looked for as well.
 */
export function createRedactor(secrets: Iterable<string>): (text: string) => string {
  const values = new Set<string>();
  const add = (value: string) => {
    values.add(value);
    const escaped = JSON.stringify(value).slice(1, -1);
    if (escaped !== value) values.add(escaped);
  };
  for (const secret of secrets) {
    if (secret.length < 4) continue;
    add(secret);
    if (/^0x/i.test(secret) && secret.length > 6) add(secret.slice(2));
  }
  const sorted = [...values].sort((a, b) => b.length - a.length);
  return (text) => {
    let out = text;
    for (const value of sorted) if (out.includes(value)) out = out.split(value).join("[redacted]");
    return out;
  };
}

/**
 * A copy of `value` with every string in it (keys included) redacted: for log fields, which are redacted before they
 * are serialised rather than as JSON text.
 */
export function redactFields<T>(value: T, redact: (text: string) => string): T {
  const walk = (v: unknown, depth: number): unknown => {
    if (typeof v === "string") return redact(v);
    if (v instanceof Error) return { name: v.name, message: redact(v.message) };
    if (depth > 8 || v === null || typeof v !== "object") return typeof v === "bigint" ? v.toString() : v;
    if (Array.isArray(v)) return v.map((item) => walk(item, depth + 1));
    return Object.fromEntries(Object.entries(v).map(([k, item]) => [redact(k), walk(item, depth + 1)]));
  };
  return walk(value, 0) as T;
}

/** A text cut to `max` characters, saying so. */
export function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}\n[truncated: ${text.length - max} more characters]`;
}

/** Time a run gets past its budget to wind down (its answer recorded, its slot freed) before it is cut off. */
export const RUN_GRACE_MS = 5_000;

/**
 * Runs `work` with a signal aborted at `deadline` (or when `parent` aborts), and settles by `deadline + graceMs`
 * whatever `work` does (issue 23 item 4): a model call, a tool or anything else that ignores its signal still cannot
 * keep a run, and the server slot it holds, past its time budget.
 */
export async function runWithinBudget<T>(
  deadline: number,
  parent: AbortSignal,
  work: (signal: AbortSignal) => Promise<T>,
  { now = Date.now, graceMs = RUN_GRACE_MS }: { now?: () => number; graceMs?: number } = {},
): Promise<T> {
  const budget = new AbortController();
  const left = Math.max(0, deadline - now());
  const soft = setTimeout(() => budget.abort(new Error("the task's time budget ran out")), left);
  let hard: NodeJS.Timeout | undefined;
  const cutOff = new Promise<never>((_, reject) => {
    hard = setTimeout(() => reject(new Error("the task's time budget ran out (the run was cut off)")), left + graceMs);
  });
  try {
    return await Promise.race([work(AbortSignal.any([parent, budget.signal])), cutOff]);
  } finally {
    clearTimeout(soft);
    clearTimeout(hard);
  }
}
