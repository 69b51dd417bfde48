/**
 * A webhook receiver on loopback for tests: records every request (headers and raw body) and answers each as its
 * script says, by how many times that webhook-id has come: a status, or `hang` (never answers: the sender's timeout).
 * It can be started on a fixed port, stopped (connections refused) and started again.
 */
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface ReceivedWebhook {
  headers: IncomingHttpHeaders;
  body: string;
  answered: number | "hang";
  /** When it arrived (epoch ms). */
  at: number;
}

export type Answer = number | "hang";

export function webhookReceiver(script: (attempt: number, id: string) => Answer = () => 200) {
  const received: ReceivedWebhook[] = [];
  const attempts = new Map<string, number>();
  const hanging = new Set<ServerResponse>();
  let server: Server | undefined;
  let port = 0;

  function handle(headers: IncomingHttpHeaders, body: string, res: ServerResponse) {
    const id = String(headers["webhook-id"] ?? "");
    const attempt = (attempts.get(id) ?? 0) + 1;
    attempts.set(id, attempt);
    const answer = script(attempt, id);
    received.push({ headers, body, answered: answer, at: Date.now() });
    if (answer === "hang") {
      hanging.add(res);
      return;
    }
    const reply = () => res.writeHead(answer, { "content-type": "text/plain" }).end("ok");
    if (receiver.delayMs > 0) setTimeout(reply, receiver.delayMs);
    else reply();
  }

  const receiver = {
    /** Every answer waits this long (ms). */
    delayMs: 0,
    received,
    attempts,
    get url() {
      return `http://127.0.0.1:${port}/hook`;
    },
    /** Listens (on the same port as before, once it has one). */
    async start(): Promise<void> {
      server = createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on("data", (c: Buffer) => chunks.push(c));
        req.on("end", () => handle(req.headers, Buffer.concat(chunks).toString("utf8"), res));
      });
      await new Promise<void>((resolve, reject) => {
        server!.once("error", reject);
        server!.listen(port, "127.0.0.1", () => resolve());
      });
      port = (server.address() as AddressInfo).port;
    },
    /** Stops listening: the next attempts find the port closed. */
    async stop(): Promise<void> {
      for (const res of hanging) res.destroy();
      hanging.clear();
      const closing = server;
      server = undefined;
      if (!closing) return;
      closing.closeAllConnections();
      await new Promise<void>((resolve) => closing.close(() => resolve()));
    },
  };
  return receiver;
}

export type WebhookReceiver = ReturnType<typeof webhookReceiver>;

/** Waits until `check` holds, polling every 20 ms, for at most `ms`. */
export async function until(check: () => boolean | Promise<boolean>, ms = 20_000, what = "the condition"): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
