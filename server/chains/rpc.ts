import { JsonRpcProvider, Network, type JsonRpcPayload, type JsonRpcResult } from "ethers";
import type { ChainConfig } from "../config";

/** A catch-up query may carry many megabytes of logs; a node that takes longer than this is treated as refusing. */
const REQUEST_TIMEOUT_MS = 60_000;

/**
 * The server's JSON-RPC provider: ethers' JsonRpcProvider with its transport replaced by Node's fetch. ethers' own
 * transport grows the response body chunk by chunk and decodes UTF-8 in JavaScript, which takes seconds for the
 * multi-megabyte eth_getLogs answers of an indexer catch-up; fetch reads and parses them natively. Everything else
 * (batching, errors, formatting) is ethers'. No response cache: the API and the outbox must see the chain as it is.
 */
export class ChainRpcProvider extends JsonRpcProvider {
  readonly #url: string;

  constructor(config: Pick<ChainConfig, "rpcUrl" | "chainId">) {
    // A short batch stall: live polling is a chain of single requests, and concurrent header reads still batch.
    super(config.rpcUrl, config.chainId, { staticNetwork: Network.from(config.chainId), batchStallTime: 2, cacheTimeout: -1 });
    this.#url = config.rpcUrl;
  }

  override async _send(payload: JsonRpcPayload | JsonRpcPayload[]): Promise<JsonRpcResult[]> {
    const response = await fetch(this.#url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(payload),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    }).catch((error: unknown) => {
      const timedOut = error instanceof Error && error.name === "TimeoutError";
      throw Object.assign(new Error(timedOut ? "request timeout" : `request failed: ${String(error)}`, { cause: error }), {
        code: timedOut ? "TIMEOUT" : "NETWORK_ERROR",
      });
    });
    const text = await response.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    // Many nodes answer a refused query with an HTTP error status and a JSON-RPC error body: hand ethers the body so
    // the node's message reaches the caller.
    if (body !== undefined && (response.ok || hasRpcError(body))) return (Array.isArray(body) ? body : [body]) as JsonRpcResult[];
    throw Object.assign(new Error(`bad response (${response.status} ${response.statusText}): ${text.slice(0, 300)}`), {
      code: "SERVER_ERROR",
      status: response.status,
    });
  }
}

function hasRpcError(body: unknown): boolean {
  const items: unknown[] = Array.isArray(body) ? body : [body];
  return items.some((item) => typeof item === "object" && item !== null && "error" in item);
}
