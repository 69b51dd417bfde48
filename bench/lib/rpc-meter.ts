/**
 * JSON-RPC calls a bench's process makes, by method: a loopback HTTP proxy in front of the chain, one per caller, that
 * forwards each request as it is (batches too) and counts the methods in it. Measuring only: the hop costs the bench
 * process some CPU and each call a little latency, so a bench runs it on request (BENCH_RPC_COUNT=1).
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface RpcMeter {
  /** The proxy's URL, to give the caller instead of the chain's. */
  url: string;
  /** Calls per method so far, most first, with `total` and the HTTP requests they came in (a batch holds several). */
  counts(): Record<string, number>;
  reset(): void;
  close(): void;
}

export async function rpcMeter(target: string): Promise<RpcMeter> {
  let counts = new Map<string, number>();
  let requests = 0;
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const body = Buffer.concat(chunks);
      requests++;
      try {
        const payload = JSON.parse(body.toString()) as { method?: string } | Array<{ method?: string }>;
        for (const call of Array.isArray(payload) ? payload : [payload]) {
          const method = call.method ?? "?";
          counts.set(method, (counts.get(method) ?? 0) + 1);
        }
      } catch {
        counts.set("(unparsed)", (counts.get("(unparsed)") ?? 0) + 1);
      }
      fetch(target, { method: "POST", headers: { "content-type": "application/json" }, body })
        .then(async (answer) => {
          response.writeHead(answer.status, { "content-type": "application/json" });
          response.end(Buffer.from(await answer.arrayBuffer()));
        })
        .catch((error: unknown) => {
          response.writeHead(502);
          response.end(String(error));
        });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    counts() {
      const sorted = [...counts.entries()].sort((a, b) => b[1] - a[1]);
      return { total: sorted.reduce((sum, [, n]) => sum + n, 0), httpRequests: requests, ...Object.fromEntries(sorted) };
    },
    reset() {
      counts = new Map();
      requests = 0;
    },
    close() {
      server.closeAllConnections();
      server.close();
    },
  };
}
