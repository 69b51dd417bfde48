/**
 * The API under load for bench:api and bench:browse: the app over a seeded database on loopback (a chain whose
 * provider the measured routes never call), an API key of a wallet, and one autocannon run of a route whose every
 * answer is checked by api-verify-body.js (in a process of its own, load-process.js).
 */
import path from "node:path";
import type { AddressInfo } from "node:net";
import hre from "hardhat";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { buildApp } from "../../server/app";
import type { Db } from "../../server/db";
import { createChains } from "../../server/chains";
import { createBlobStore } from "../../server/storage/blob-store";
import { createAuth } from "../../server/auth";

const PUBLIC_URL = "http://127.0.0.1:3000";
const ESCROW = "0x00000000000000000000000000000000000E5C40";
/** Connections of every load run. */
export const CONNECTIONS = 10;
const LOAD_PROCESS = path.join(__dirname, "load-process.js");

export interface LoadRun {
  reqPerSec: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  requests: number;
  non2xx: number;
  mismatches: number;
  errors: number;
  timeouts: number;
  mbPerSec: number;
}

/** The API over `db` (tasks settled in `token`), listening on a free loopback port, with an API key of `wallet`. */
export async function serveBenchApi(db: Db, options: { dir: string; token: string; wallet: string; web?: { root: string } }) {
  const auth = createAuth({ db, now: Date.now, publicUrl: PUBLIC_URL });
  const { key } = await auth.apiKeys.createApiKey(await auth.accounts.accountForWallet(options.wallet), "bench");
  const chainId = Number((await hre.ethers.provider.getNetwork()).chainId);
  const chains = createChains(
    [{ name: "arc", chainId, rpcUrl: "unused", escrow: ESCROW, token: options.token, startBlock: 0, confirmations: 0, postable: true }],
    { provider: () => hre.ethers.provider },
  );
  const app = await buildApp({
    db,
    chains,
    blobs: createBlobStore(path.join(options.dir, "blobs")),
    config: { publicUrl: PUBLIC_URL, rateLimit: { perIp: 1e12, perKey: 1e12, windowMs: 60_000 }, offerWindowMs: 0 },
    logger: false,
    ...(options.web ? { web: options.web } : {}),
  });
  await app.listen({ host: "127.0.0.1", port: 0 });
  return { app, key, base: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}` };
}

/**
 * One autocannon run of `url` for `seconds` with 10 connections, every answer checked, in a process of its own
 * (bench/lib/load-process.js says why not in a worker thread of this one).
 */
export async function loadRoute(url: string, headers: Record<string, string>, seconds: number): Promise<LoadRun> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [LOAD_PROCESS, JSON.stringify({ url, headers, seconds, connections: CONNECTIONS })],
    {
      maxBuffer: 1024 * 1024,
    },
  );
  return JSON.parse(stdout) as LoadRun;
}
