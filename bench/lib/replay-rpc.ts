/**
 * A recorded chain served again: the logs and block headers of a real chain (recorded once from a Hardhat node
 * running the real escrow) answered from memory by a JSON-RPC server on loopback. The indexer's catch-up from a node is
 * capped by how fast the node serves eth_getLogs (Hardhat: 11-18k events/s on this machine), which says nothing about
 * the indexer; a replay answers as fast as HTTP on loopback allows, so the catch-up's figure is the indexer's own.
 * Nothing is synthesized: every log and header is one the node served, byte for byte as JSON.
 *
 * Served: eth_chainId, net_version, eth_blockNumber, eth_getBlockByNumber (a number or "latest"/"earliest", the
 * transactions as their hashes), eth_getLogs of the recorded contracts (address: one or several, fromBlock/toBlock,
 * topics), single calls and batches. Anything else is answered with JSON-RPC error -32601.
 */
import { fork } from "node:child_process";
import { INDEXER_V8_FLAGS } from "../../server/indexer/worker";
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** A log as eth_getLogs answers it (hex quantities). */
export interface RecordedLog {
  address: string;
  blockNumber: string;
  blockHash: string;
  logIndex: string;
  transactionHash: string;
  transactionIndex: string;
  topics: string[];
  data: string;
  removed?: boolean;
}

/** A header as eth_getBlockByNumber(number, false) answers it. */
export type RecordedHeader = Record<string, unknown> & { number: string; hash: string; parentHash: string; timestamp: string };

export interface Recording {
  chainId: number;
  /** Block numbers `first` to `head`, every header in between. */
  first: number;
  head: number;
  headers: RecordedHeader[];
  /** Every log of the recorded contracts in the blocks, in chain order. */
  logs: RecordedLog[];
}

type Send = (method: string, params: unknown[]) => Promise<unknown>;

const HEADER_BATCH = 200;

/** Records the logs of `addresses` and every header in blocks `first` to `head` from a node. */
export async function recordChain(send: Send, addresses: readonly string[], first: number, head: number): Promise<Recording> {
  const chainId = Number(await send("eth_chainId", []));
  const logs = (await send("eth_getLogs", [
    { address: [...addresses], fromBlock: `0x${first.toString(16)}`, toBlock: `0x${head.toString(16)}` },
  ])) as RecordedLog[];
  const headers: RecordedHeader[] = [];
  for (let n = first; n <= head; n += HEADER_BATCH) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(HEADER_BATCH, head - n + 1) }, (_, i) => send("eth_getBlockByNumber", [`0x${(n + i).toString(16)}`, false])),
    );
    headers.push(...(batch as RecordedHeader[]));
  }
  return { chainId, first, head, headers, logs };
}

export interface ReplayRpc {
  url: string;
  /** Calls served so far, by method. */
  calls(): Record<string, number>;
  close(): Promise<void>;
}

interface Call {
  jsonrpc?: string;
  id?: unknown;
  method?: string;
  params?: unknown[];
}

class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** Serves `recording` on 127.0.0.1 (port 0 unless given). */
export async function startReplayRpc(recording: Recording, port = 0): Promise<ReplayRpc> {
  const { first, head } = recording;
  // Each log and header serialized once; an answer is their JSON joined.
  const logNumbers = recording.logs.map((log) => Number(log.blockNumber));
  const logJson = recording.logs.map((log) => JSON.stringify(log));
  const logAddresses = recording.logs.map((log) => log.address.toLowerCase());
  const headerJson = recording.headers.map((header) => JSON.stringify(header));
  const chainIdJson = JSON.stringify(`0x${recording.chainId.toString(16)}`);
  const calls = new Map<string, number>();

  /** Index of the first log at block >= n. */
  const lowerBound = (n: number) => {
    let lo = 0;
    let hi = logNumbers.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (logNumbers[mid]! < n) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  const blockOf = (tag: unknown, fallback: number): number => {
    if (tag === undefined || tag === null) return fallback;
    if (tag === "latest" || tag === "safe" || tag === "finalized" || tag === "pending") return head;
    if (tag === "earliest") return 0;
    if (typeof tag === "string" && /^0x[0-9a-f]+$/i.test(tag)) return Number(tag);
    throw new RpcError(-32602, `invalid block tag ${JSON.stringify(tag)}`);
  };

  /** The JSON text of one call's result. */
  const answer = (call: Call): string => {
    const params = call.params ?? [];
    switch (call.method) {
      case "eth_chainId":
        return chainIdJson;
      case "net_version":
        return JSON.stringify(String(recording.chainId));
      case "eth_blockNumber":
        return JSON.stringify(`0x${head.toString(16)}`);
      case "eth_getBlockByNumber": {
        if (params[1] === true) throw new RpcError(-32602, "the replay serves headers with transaction hashes only");
        const n = blockOf(params[0], head);
        return n >= first && n <= head ? headerJson[n - first]! : "null";
      }
      case "eth_getLogs": {
        const filter = (params[0] ?? {}) as {
          address?: string | string[];
          fromBlock?: string;
          toBlock?: string;
          topics?: unknown[];
          blockHash?: string;
        };
        if (filter.blockHash !== undefined) throw new RpcError(-32602, "the replay serves block ranges only");
        const from = blockOf(filter.fromBlock, head);
        const to = Math.min(blockOf(filter.toBlock, head), head);
        const addresses =
          filter.address === undefined
            ? undefined
            : new Set((Array.isArray(filter.address) ? filter.address : [filter.address]).map((a) => a.toLowerCase()));
        const topics = filter.topics ?? [];
        const parts: string[] = [];
        for (let i = lowerBound(from); i < logNumbers.length && logNumbers[i]! <= to; i++) {
          if (addresses && !addresses.has(logAddresses[i]!)) continue;
          if (topics.length > 0 && !matchesTopics(recording.logs[i]!.topics, topics)) continue;
          parts.push(logJson[i]!);
        }
        return `[${parts.join(",")}]`;
      }
      default:
        throw new RpcError(-32601, `method ${String(call.method)} is not served by the replay`);
    }
  };

  const respond = (call: Call): string => {
    calls.set(call.method ?? "?", (calls.get(call.method ?? "?") ?? 0) + 1);
    const id = JSON.stringify(call.id ?? null);
    try {
      return `{"jsonrpc":"2.0","id":${id},"result":${answer(call)}}`;
    } catch (error) {
      const code = error instanceof RpcError ? error.code : -32603;
      return `{"jsonrpc":"2.0","id":${id},"error":${JSON.stringify({ code, message: error instanceof Error ? error.message : String(error) })}}`;
    }
  };

  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      let body: string;
      try {
        const payload = JSON.parse(Buffer.concat(chunks).toString()) as Call | Call[];
        body = Array.isArray(payload) ? `[${payload.map(respond).join(",")}]` : respond(payload);
      } catch {
        body = `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`;
      }
      response.writeHead(200, { "content-type": "application/json" });
      response.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls: () => Object.fromEntries(calls),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** eth_getLogs topic filter: position by position, null matches anything, an array any of its values. */
function matchesTopics(logTopics: readonly string[], filter: readonly unknown[]): boolean {
  return filter.every((wanted, i) => {
    if (wanted === null || wanted === undefined) return true;
    const topic = logTopics[i]?.toLowerCase();
    if (topic === undefined) return false;
    return Array.isArray(wanted) ? wanted.some((w) => String(w).toLowerCase() === topic) : String(wanted).toLowerCase() === topic;
  });
}

/**
 * The replay in a process of its own (as a node is), serving the recording in `file` (JSON: `{ recording }`, as
 * BENCH_RECORDING writes it): its answers are built and written on another core than the indexer's, and none of its
 * work shows in the indexer's profile. Resolves once it listens. It stands in for a node faster than the catch-up, so
 * it runs with the V8 settings that keep a quiet minute from slowing its next answers (the indexer's own,
 * INDEXER_V8_FLAGS): with V8's defaults an idle heap is shrunk, and the next catch-up's answers wait for full
 * collections.
 */
export async function startReplayProcess(file: string): Promise<ReplayRpc> {
  const child = fork(__filename, ["--serve", file], {
    execArgv: ["-r", "ts-node/register/transpile-only", ...INDEXER_V8_FLAGS],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.once("message", (message: { url?: string }) => (message.url ? resolve(message.url) : reject(new Error("the replay did not start"))));
    child.once("exit", (code) => reject(new Error(`the replay exited (code ${code})`)));
  });
  let calls: Record<string, number> = {};
  return {
    url,
    calls: () => calls,
    close: () =>
      new Promise<void>((resolve) => {
        child.once("message", (message: { calls?: Record<string, number> }) => {
          calls = message.calls ?? calls;
          child.kill();
          resolve();
        });
        child.once("exit", () => resolve());
        child.send("stop");
      }),
  };
}

// The replay process (startReplayProcess): serves the recording until told to stop, or until its parent goes.
if (require.main === module && process.argv[2] === "--serve") {
  const { recording } = JSON.parse(readFileSync(process.argv[3]!, "utf8")) as { recording: Recording };
  void startReplayRpc(recording).then((replay) => {
    process.send?.({ url: replay.url });
    process.on("message", () => process.send?.({ calls: replay.calls() }));
    process.on("disconnect", () => process.exit(0));
  });
}
