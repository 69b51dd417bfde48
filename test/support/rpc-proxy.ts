/**
 * A JSON-RPC endpoint on loopback in front of another (the served in-process chain), standing for a restrictive
 * provider: `eth_getLogs` over more than `maxLogBlocks` blocks is refused as such providers refuse it, and every
 * `eth_getLogs` answer comes `logDelayMs` late, so an indexer's catch-up takes many small, slow ranges. `hold()`
 * keeps every `eth_getLogs` waiting until `release()`. `holdSendsTo(address)` keeps every raw transaction to that
 * address from reaching the chain until `releaseSends()` (it is then sent, whether its sender still waits or not).
 * Every other call is passed through as it is.
 */
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { Transaction, getAddress } from "ethers";

interface RpcRequest {
  jsonrpc: string;
  id: number | string | null;
  method: string;
  params?: unknown[];
}

export interface RpcProxy {
  url: string;
  /** eth_getLogs calls answered so far (refusals included). */
  readonly logCalls: number;
  /** Raw transactions held by `holdSendsTo` so far. */
  readonly heldSends: number;
  holdSendsTo(address: string): void;
  releaseSends(): void;
  hold(): void;
  release(): void;
  close(): Promise<void>;
}

export async function startRpcProxy(target: string, options: { maxLogBlocks: number; logDelayMs: number }): Promise<RpcProxy> {
  let gate: Promise<void> = Promise.resolve();
  let open: (() => void) | undefined;
  let logCalls = 0;
  let sendsTo: string | undefined;
  let sendGate: Promise<void> = Promise.resolve();
  let openSends: (() => void) | undefined;
  let heldSends = 0;

  /** A raw transaction to the held address waits for `releaseSends`. */
  async function sendGateOf(request: RpcRequest): Promise<void> {
    if (!sendsTo || request.method !== "eth_sendRawTransaction") return;
    const to = Transaction.from(String(request.params?.[0])).to;
    if (to && getAddress(to) === sendsTo) {
      heldSends++;
      await sendGate;
    }
  }

  async function forward(request: RpcRequest): Promise<unknown> {
    const response = await fetch(target, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(request) });
    return response.json();
  }

  async function answer(request: RpcRequest): Promise<unknown> {
    await sendGateOf(request);
    if (request.method !== "eth_getLogs") return forward(request);
    await gate;
    await new Promise((resolve) => setTimeout(resolve, options.logDelayMs));
    logCalls++;
    const filter = (request.params?.[0] ?? {}) as { fromBlock?: string; toBlock?: string };
    const hex = /^0x[0-9a-f]+$/i;
    if (filter.fromBlock && filter.toBlock && hex.test(filter.fromBlock) && hex.test(filter.toBlock)) {
      const span = Number(BigInt(filter.toBlock) - BigInt(filter.fromBlock)) + 1;
      if (span > options.maxLogBlocks) {
        return { jsonrpc: "2.0", id: request.id, error: { code: -32005, message: "query returned more than 10000 results" } };
      }
    }
    return forward(request);
  }

  const body = (req: IncomingMessage) =>
    new Promise<string>((resolve, reject) => {
      let text = "";
      req.on("data", (chunk: Buffer) => (text += chunk.toString()));
      req.on("end", () => resolve(text));
      req.on("error", reject);
    });

  const server = createServer((req, res) => {
    void (async () => {
      try {
        const parsed = JSON.parse(await body(req)) as RpcRequest | RpcRequest[];
        const answered = Array.isArray(parsed) ? await Promise.all(parsed.map(answer)) : await answer(parsed);
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify(answered));
      } catch (error) {
        res.writeHead(500, { "content-type": "application/json" });
        res.end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32603, message: (error as Error).message } }));
      }
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const release = () => {
    open?.();
    open = undefined;
    gate = Promise.resolve();
  };
  return {
    url: `http://127.0.0.1:${port}`,
    get logCalls() {
      return logCalls;
    },
    get heldSends() {
      return heldSends;
    },
    holdSendsTo(address: string) {
      sendsTo = getAddress(address);
      sendGate = new Promise((resolve) => (openSends = resolve));
    },
    releaseSends() {
      sendsTo = undefined;
      openSends?.();
      openSends = undefined;
    },
    hold() {
      if (open) return;
      gate = new Promise((resolve) => (open = resolve));
    },
    release,
    async close() {
      release();
      openSends?.();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
