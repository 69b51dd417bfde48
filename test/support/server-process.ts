/**
 * `npm run server` as child processes (server/main.ts under ts-node), configured by the environment: for tests that
 * kill a server (SIGKILL) and start others on the same database.
 */
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import hre from "hardhat";
import type { HardhatEthersSigner } from "@nomicfoundation/hardhat-ethers/signers";
import type { deployEscrowFixture } from "../fixtures/escrow";
import { privateKeyOf, TEST_MASTER_KEY } from "../server/harness";

const ROOT = path.resolve(__dirname, "../..");

export interface ServerProcess {
  child: ChildProcess;
  url: string;
  /** Everything the process wrote so far (stdout and stderr). */
  output(): string;
  /** SIGKILL: no shutdown of any kind; resolves once the process is gone. */
  kill(): Promise<void>;
  /** SIGTERM (a graceful stop), then SIGKILL after a few seconds: never waits on a stuck child. */
  stop(): Promise<void>;
}

/**
 * The environment of a server process over the escrow fixture's deployment with its chain at `rpcUrl`: SQLite and blobs
 * under `dir` (or the PostgreSQL database `databaseUrl`), hosted agents on (the test master key, loopback models), a
 * fast indexer in the main thread; `extra` adds or overrides.
 */
export async function serverEnv(
  base: Awaited<ReturnType<typeof deployEscrowFixture>>,
  options: { rpcUrl: string; dir: string; databaseUrl?: string; extra?: NodeJS.ProcessEnv },
): Promise<NodeJS.ProcessEnv> {
  return {
    ...process.env,
    HOST: "127.0.0.1",
    PORT: "0",
    ...(options.databaseUrl ? { DATABASE_URL: options.databaseUrl } : { SQLITE_PATH: path.join(options.dir, "market.sqlite") }),
    BLOB_DIR: path.join(options.dir, "blobs"),
    CHAIN_ARC_RPC_URL: options.rpcUrl,
    CHAIN_ARC_DEPLOYMENT: "none",
    CHAIN_ARC_ESCROW: base.escrowAddress,
    CHAIN_ARC_TOKEN: base.token,
    CHAIN_ARC_CHAIN_ID: String((await hre.ethers.provider.getNetwork()).chainId),
    CHAIN_ARC_START_BLOCK: String(base.deployment.block),
    MARKET_VERIFIER_PRIVATE_KEY: privateKeyOf(base.verifier),
    MARKET_MASTER_KEY: TEST_MASTER_KEY,
    HOSTED_ALLOW_PRIVATE_NETWORKS: "true",
    INDEXER_POLL_MS: "100",
    INDEXER_IN_WORKER: "false",
    LOG_LEVEL: "warn",
    ...options.extra,
  };
}

/** Starts server/main.ts with `env`; resolves once it listens (its "market API on <url>" line). */
export async function startServerProcess(env: NodeJS.ProcessEnv, timeoutMs = 90_000): Promise<ServerProcess> {
  const child = spawn(process.execPath, [require.resolve("ts-node/dist/bin.js"), "--transpile-only", path.join(ROOT, "server/main.ts")], {
    cwd: ROOT,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the server did not start:\n${output}`)), timeoutMs);
    const check = () => {
      const found = /market API on (http:\/\/\S+)/.exec(output);
      if (found) {
        clearTimeout(timer);
        resolve(found[1]!);
      }
    };
    child.stdout.on("data", check);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`the server exited (${code}):\n${output}`));
    });
  });
  const gone = () => child.exitCode !== null || child.signalCode !== null;
  return {
    child,
    url,
    output: () => output,
    async kill() {
      if (!gone()) child.kill("SIGKILL");
      await exited;
    },
    async stop() {
      if (gone()) return;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** POSTs JSON to a server over HTTP and answers the envelope's data (throws on a refusal). */
export async function postJson<T>(url: string, route: string, body: unknown, headers: Record<string, string> = {}): Promise<T> {
  const response = await fetch(`${url}${route}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  const parsed = (await response.json()) as { success: boolean; data: T; error?: { code: string; message: string } };
  if (!parsed.success) throw new Error(`${route}: ${response.status} ${parsed.error?.code}: ${parsed.error?.message}`);
  return parsed.data;
}

/**
 * Signs in with the wallet and creates an API key, the path a user takes: the nonce is asked of `url` and the rest of
 * `verifyUrl` (another API process on the same database, behind the same public URL), default the same.
 */
export async function apiKeyOver(url: string, signer: HardhatEthersSigner, verifyUrl = url): Promise<string> {
  const nonce = await postJson<{ message: string }>(url, "/api/v1/auth/nonce", { address: signer.address });
  const session = await postJson<{ token: string }>(verifyUrl, "/api/v1/auth/verify", {
    message: nonce.message,
    signature: await signer.signMessage(nonce.message),
  });
  return (await postJson<{ key: string }>(verifyUrl, "/api/v1/api-keys", { name: "process" }, { authorization: `Bearer ${session.token}` })).key;
}
