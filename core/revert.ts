import type { Interface } from "ethers";

interface DecodedRevert {
  name: string;
  args: unknown[];
}

/**
 * The revert data (0x-prefixed hex) inside an error thrown by ethers or by a node's JSON-RPC layer, wherever the
 * provider put it (`data`, `data.data`, `error.data`, `info.error.data`, `parent`, ...).
 */
export function findRevertData(error: unknown, depth = 0): string | undefined {
  if (depth > 5 || error === null || typeof error !== "object") return undefined;
  const e = error as Record<string, unknown>;
  if (typeof e.data === "string" && /^0x[0-9a-fA-F]{8}/.test(e.data)) return e.data;
  for (const key of ["data", "error", "info", "parent", "cause"]) {
    const found = findRevertData(e[key], depth + 1);
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
