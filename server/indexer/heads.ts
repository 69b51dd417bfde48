/**
 * New heads by subscription: a WebSocket to the node, `eth_subscribe` of "newHeads", and a call for each head the
 * node announces, so the indexer reads a new block as soon as it exists instead of at its next poll. Polling stays
 * the fallback: a node without WebSocket (or refusing the subscription) is tried again with a back-off, and a lost
 * connection is opened again the same way; nothing the subscription says is trusted beyond "look now".
 */
import type { ChainConfig } from "../config";

/** What of the indexer's logger (sync.ts IndexerLogger) this writes to. */
interface HeadsLogger {
  debug(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

/** The client side of the WebSocket protocol: `ws`, the library ethers' WebSocketProvider uses (no @types here). */
interface Socket {
  on(event: "open" | "close", listener: () => void): void;
  on(event: "message", listener: (data: Buffer) => void): void;
  on(event: "error", listener: (error: Error) => void): void;
  send(data: string): void;
  terminate(): void;
}
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { WebSocket } = require("ws") as { WebSocket: new (url: string, options?: { handshakeTimeout?: number }) => Socket };

const RETRY_MS = 1_000;
const MAX_RETRY_MS = 30_000;
const HANDSHAKE_TIMEOUT_MS = 10_000;

export interface HeadFollower {
  /** Whether the node has confirmed the subscription (and the connection is still open). */
  readonly subscribed: boolean;
  /** Closes the connection and stops trying again. */
  stop(): void;
}

/**
 * The WebSocket endpoint of a chain's node: `<PREFIX>WS_URL` when set, else its RPC URL with ws:// (wss://) for
 * http:// (https://), which is where Hardhat's node and most nodes serve both; undefined for any other scheme.
 */
export function newHeadsUrl(chain: Pick<ChainConfig, "rpcUrl" | "wsUrl">): string | undefined {
  if (chain.wsUrl) return chain.wsUrl;
  const match = /^http(s?):\/\//i.exec(chain.rpcUrl);
  return match ? `ws${match[1]!.toLowerCase()}://${chain.rpcUrl.slice(match[0].length)}` : undefined;
}

/** Calls `onHead` with each new head's number the node at `url` announces, until stop(). */
export function followNewHeads(url: string, onHead: (number: number) => void, logger?: HeadsLogger): HeadFollower {
  let socket: Socket | undefined;
  let subscription: string | undefined;
  let stopped = false;
  let failures = 0;
  let timer: NodeJS.Timeout | undefined;

  const connect = () => {
    const current = new WebSocket(url, { handshakeTimeout: HANDSHAKE_TIMEOUT_MS });
    socket = current;
    current.on("open", () => current.send(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_subscribe", params: ["newHeads"] })));
    current.on("message", (data) => {
      let message: {
        id?: number;
        result?: unknown;
        error?: { message?: string };
        method?: string;
        params?: { subscription?: string; result?: { number?: string } };
      };
      try {
        message = JSON.parse(data.toString()) as typeof message;
      } catch {
        return;
      }
      if (message.id === 1) {
        if (typeof message.result === "string") {
          subscription = message.result;
          failures = 0;
          logger?.info({ url: redact(url) }, "indexer: following new heads by subscription");
        } else {
          logger?.info({ url: redact(url), reason: message.error?.message }, "indexer: the node refused eth_subscribe; polling");
          current.terminate();
        }
        return;
      }
      if (message.method === "eth_subscription" && message.params?.subscription === subscription) {
        onHead(Number(message.params?.result?.number ?? NaN));
      }
    });
    // Every failure ends in "close" (ws emits it after "error"), where the next attempt is planned.
    current.on("error", (error) => logger?.debug({ url: redact(url), reason: error.message }, "indexer: new-heads connection failed"));
    current.on("close", () => {
      if (socket !== current) return;
      socket = undefined;
      subscription = undefined;
      if (stopped) return;
      failures++;
      timer = setTimeout(connect, Math.min(MAX_RETRY_MS, RETRY_MS * 2 ** Math.min(failures - 1, 10)));
      timer.unref(); // never what keeps a process alive
    });
  };
  connect();

  return {
    get subscribed() {
      return subscription !== undefined;
    },
    stop() {
      stopped = true;
      clearTimeout(timer);
      const current = socket;
      socket = undefined;
      subscription = undefined;
      current?.terminate();
    },
  };
}

/** A URL without its path, query or credentials: hosted nodes put their API key in them. */
function redact(url: string): string {
  try {
    const { protocol, host } = new URL(url);
    return `${protocol}//${host}`;
  } catch {
    return "(invalid url)";
  }
}
