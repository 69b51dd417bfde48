import type { Interface } from "ethers";

interface DecodedRevert {
  name: string;
  args: unknown[];
}

/**
 * The revert data (0x-prefixed hex) inside an error thrown by ethers or by a node's JSON-RPC layer, wherever the
 * provider put it (`data`, `data.data`, `error.data`, `info.error.data`, `parent`, ...).
 */
export function findRevertData(error: unknown): string | undefined {
  return findData(error, /^0x[0-9a-fA-F]{8}/, 0);
}

/**
 * True when the chain ran the call and it reverted, as opposed to a node that did not answer: ethers'
 * `CALL_EXCEPTION`, a provider error carrying revert data, even empty (`0x`: a bare `revert()`, or a function the
 * contract does not have), or a node's message saying the call reverted.
 */
export function isCallRevert(error: unknown): boolean {
  const e = error as { code?: string; message?: string } | null;
  return e?.code === "CALL_EXCEPTION" || findData(error, /^0x([0-9a-fA-F]{2})*$/, 0) !== undefined || /revert/i.test(e?.message ?? "");
}

/** A node's answer to a broadcast that means the transaction is already in the pool or mined (or its nonce is used). */
export function isAlreadySent(error: unknown): boolean {
  return /already known|nonce too low|nonce has already been used|known transaction|AlreadyKnown/i.test(String((error as Error | null)?.message));
}

const REFUSAL_CODES = new Set(["CALL_EXCEPTION", "INSUFFICIENT_FUNDS", "NONCE_EXPIRED", "REPLACEMENT_UNDERPRICED", "TRANSACTION_REPLACED"]);

/**
 * True when the node answered and refused (a JSON-RPC error: ethers' coded refusals, a provider error with a numeric
 * JSON-RPC code, or a revert), as opposed to a node that did not answer at all (connection refused, timeout).
 */
export function isNodeRefusal(error: unknown): boolean {
  const e = error as { code?: unknown; error?: { code?: unknown } } | null;
  if (typeof e?.code === "number" || typeof e?.error?.code === "number") return true;
  return (typeof e?.code === "string" && REFUSAL_CODES.has(e.code)) || isCallRevert(error);
}

function findData(error: unknown, pattern: RegExp, depth: number): string | undefined {
  if (depth > 5 || error === null || typeof error !== "object") return undefined;
  const e = error as Record<string, unknown>;
  if (typeof e.data === "string" && pattern.test(e.data)) return e.data;
  for (const key of ["data", "error", "info", "parent", "cause"]) {
    const found = findData(e[key], pattern, depth + 1);
    if (found) return found;
  }
  return undefined;
}

/** The custom error of `iface` that `error` carries, with its arguments, or undefined. */
export function decodeRevert(iface: Interface, error: unknown): DecodedRevert | undefined {
  const revert = (error as { revert?: DecodedRevert } | null)?.revert;
  if (revert?.name) return { name: revert.name, args: [...revert.args] };
  const data = findRevertData(error);
  if (!data) return undefined;
  try {
    const parsed = iface.parseError(data);
    return parsed ? { name: parsed.name, args: [...parsed.args] } : undefined;
  } catch {
    return undefined;
  }
}

/** `ErrorName(arg, ...)` for a decodable custom error, else the shortest message the error offers. */
export function describeRevert(iface: Interface, error: unknown): string {
  const decoded = decodeRevert(iface, error);
  if (decoded) return `${decoded.name}(${decoded.args.map(String).join(", ")})`;
  const e = error as { shortMessage?: string; message?: string };
  return e.shortMessage ?? e.message ?? String(error);
}
