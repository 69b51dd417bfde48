/**
 * How many blocks one eth_getLogs call covers. Nodes refuse large queries in many wordings ("query returned more than
 * 10000 results", "block range too large", response size limits, timeouts); on a refusal the range halves and the
 * same start is tried again, and after each success it grows back by a quarter, up to the maximum. When the caller
 * counts the logs of each answer, the size also follows the chain's density: after an answer with more logs than
 * `logsPerQuery` the next range covers proportionally fewer blocks, after one with fewer it may cover proportionally
 * more. Answers of a bounded size let the indexer store one range while the node
 * serves the next, instead of waiting for one answer holding a whole dense stretch of the chain. After a refusal the
 * node's own limit is in play: density then only shrinks the size, which grows back by the quarter rule alone.
 */
export interface BlockRangeOptions {
  /** Blocks in the first query. Default 16: a dense chain is not read in one answer, a sparse one grows at once. */
  initial?: number;
  /** Largest range ever asked for. Default 10,000. */
  max?: number;
  /** Logs one answer should hold at most, when the caller counts them. Default 2,000. */
  logsPerQuery?: number;
  /**
   * eth_getLogs ranges the indexer has in flight at most, each the continuation of the one before, while it stores
   * those already read (see sync.ts). Default 2.
   */
  readAhead?: number;
}

export interface BlockRange {
  /** Current range size in blocks. */
  readonly size: number;
  /** The last block of the range starting at `from` that `fetch(from, maxTo)` would ask for now. */
  end(from: number, maxTo: number): number;
  /**
   * Runs `query(to)` for the largest `to <= maxTo` the current size allows, shrinking and retrying on refusals.
   * Returns the `to` that succeeded with its result. Errors other than refusals, and a refusal of a single block,
   * are thrown. `count` tells how many logs a result holds (see `logsPerQuery`).
   */
  fetch<T>(from: number, maxTo: number, query: (to: number) => Promise<T>, count?: (result: T) => number): Promise<{ to: number; result: T }>;
}

export function createBlockRange(options: BlockRangeOptions = {}): BlockRange {
  const max = Math.max(1, options.max ?? 10_000);
  const logsPerQuery = Math.max(1, options.logsPerQuery ?? 2_000);
  let size = Math.min(max, Math.max(1, options.initial ?? 16));
  /** Once the node refused a range, its limit is in play: the size grows back only by the quarter rule. */
  let refused = false;
  return {
    get size() {
      return size;
    },
    end(from, maxTo) {
      return Math.min(maxTo, from + size - 1);
    },
    async fetch(from, maxTo, query, count) {
      for (;;) {
        const to = Math.min(maxTo, from + size - 1);
        const span = to - from + 1;
        try {
          const result = await query(to);
          const logs = count?.(result);
          // Blocks that would have held logsPerQuery logs at this answer's density.
          const fitted = logs ? Math.floor((span * logsPerQuery) / logs) : Infinity;
          if (logs !== undefined && logs > logsPerQuery) size = Math.max(1, Math.min(size, fitted));
          else if (span >= size) {
            // A short range at the head does not count as a success of the full size.
            const grown = Math.min(max, size + Math.max(1, Math.floor(size / 4)));
            size = logs === undefined || refused ? grown : Math.max(grown, Math.min(max, fitted));
          }
          return { to, result };
        } catch (error) {
          if (span <= 1 || !isRangeRefusal(error)) throw error;
          refused = true;
          const suggested = suggestedSpan(error);
          size = Math.max(1, Math.min(Math.floor(span / 2), suggested ?? Infinity));
        }
      }
    },
  };
}

const REFUSALS: readonly RegExp[] = [
  /more than \d+ (results|logs)/i,
  /query returned more than/i,
  /block range/i,
  /range (is )?too (large|wide|big)/i,
  /too many (results|logs|blocks)/i,
  /exceeds? (the )?(max|limit)/i,
  /(response|result) size/i,
  /size exceeded/i,
  /limit exceeded/i,
  /timed? ?out|timeout/i,
];

/** Whether the node refused the query for its size (as opposed to being down or the request being wrong). */
export function isRangeRefusal(error: unknown): boolean {
  const { codes, messages } = describe(error);
  if (codes.includes("TIMEOUT") || codes.includes(-32005)) return true;
  return messages.some((message) => REFUSALS.some((pattern) => pattern.test(message)));
}

/** Some nodes name a range that works: "Try with this block range [0x1, 0x2]". */
function suggestedSpan(error: unknown): number | undefined {
  for (const message of describe(error).messages) {
    const match = /\[\s*(0x[0-9a-f]+)\s*,\s*(0x[0-9a-f]+)\s*\]/i.exec(message);
    if (match?.[1] && match[2]) {
      const span = Number(BigInt(match[2]) - BigInt(match[1])) + 1;
      if (span >= 1) return span;
    }
  }
  return undefined;
}

/** Messages and codes along an error's chain (ethers nests the node's answer under `error`, `info` and `cause`). */
function describe(error: unknown): { messages: string[]; codes: unknown[] } {
  const messages: string[] = [];
  const codes: unknown[] = [];
  const seen = new Set<unknown>();
  const visit = (value: unknown, depth: number) => {
    if (depth > 5 || value === null || typeof value !== "object" || seen.has(value)) return;
    seen.add(value);
    const record = value as Record<string, unknown>;
    for (const key of ["message", "shortMessage"]) {
      if (typeof record[key] === "string") messages.push(record[key]);
    }
    if (record.code !== undefined) codes.push(record.code);
    for (const key of ["error", "info", "cause", "payload"]) visit(record[key], depth + 1);
  };
  if (typeof error === "string") messages.push(error);
  visit(error, 0);
  return { messages, codes };
}
