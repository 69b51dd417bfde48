/**
 * The local stack a bench runs against: a Hardhat node and the API server as child processes on loopback (the
 * escrow deployed, the verifier key set), stopped by `close()`. Shared by the benches that go through the API.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { JsonRpcProvider, Wallet } from "ethers";
import { freePort, startLocalChain, type LocalChain } from "../../scripts/lib/local-chain";
import { readDeployment, type EscrowDeployment } from "../../deploy/deployments";

const ROOT = path.resolve(__dirname, "../..");

export interface BenchStack {
  /** A scratch folder removed by `close()`. */
  work: string;
  chain: LocalChain;
  deployment: EscrowDeployment;
  apiUrl: string;
  server: ChildProcess;
  provider: JsonRpcProvider;
  /** Signs in with the wallet through the API (EIP-4361) and creates an API key. */
  apiKeyFor(wallet: Pick<Wallet, "address" | "signMessage">): Promise<string>;
  close(): void;
}

async function waitForHealth(url: string, child: ChildProcess, output: () => string): Promise<void> {
  const end = Date.now() + 120_000;
  while (Date.now() < end) {
    if (child.exitCode !== null) throw new Error(`the API server exited (${child.exitCode}):\n${output()}`);
    try {
      if ((await fetch(`${url}/health/ready`)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`the API server did not become ready:\n${output()}`);
}

/**
 * Starts the chain, deploys, and starts the API with `serverEnv` on top of the bench settings; `serverRpc` gives the
 * API another URL for the chain (a proxy in front of it, bench/lib/rpc-meter.ts).
 */
export async function startBenchStack(
  name: string,
  serverEnv: Record<string, string> = {},
  options: { serverRpc?: (chainUrl: string) => Promise<string> } = {},
): Promise<BenchStack> {
  const work = mkdtempSync(path.join(tmpdir(), `market-bench-${name}-`));
  const chain = await startLocalChain({ port: await freePort(), quiet: true });
  let server: ChildProcess | undefined;
  const close = () => {
    server?.kill("SIGTERM");
    chain.stop();
    rmSync(work, { recursive: true, force: true });
  };
  try {
    const env = { ...process.env, LOCAL_RPC_URL: chain.url, DEPLOYMENTS_DIR: work, HARDHAT_NETWORK: "" };
    const cli = require.resolve("hardhat/internal/cli/cli");
    await promisify(execFile)(process.execPath, [cli, "run", "--no-compile", "--network", "localhost", "deploy/deploy.ts"], { env, cwd: ROOT });
    const deployment = readDeployment("localhost", work)!;

    const apiUrl = `http://127.0.0.1:${await freePort()}`;
    let output = "";
    // BENCH_CPU_PROFILE_DIR: the server writes a V8 CPU profile there (one per thread) when it stops.
    const profile = process.env.BENCH_CPU_PROFILE_DIR ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROFILE_DIR}`] : [];
    server = spawn(process.execPath, [...profile, "-r", "ts-node/register/transpile-only", "server/main.ts"], {
      cwd: ROOT,
      env: {
        ...env,
        PORT: new URL(apiUrl).port,
        SQLITE_PATH: path.join(work, "market.sqlite"),
        BLOB_DIR: path.join(work, "blobs"),
        CHAIN_ARC_RPC_URL: options.serverRpc ? await options.serverRpc(chain.url) : chain.url,
        CHAIN_ARC_DEPLOYMENT: "localhost",
        MARKET_VERIFIER_PRIVATE_KEY: chain.accounts[1],
        RATE_LIMIT_PER_IP: "1000000",
        RATE_LIMIT_PER_KEY: "1000000",
        OFFER_WINDOW_MS: "0",
        LOG_LEVEL: "warn",
        ...serverEnv,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    server.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    server.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    await waitForHealth(apiUrl, server, () => output);

    const apiKeyFor = async (wallet: Pick<Wallet, "address" | "signMessage">): Promise<string> => {
      const post = async <T>(route: string, body: unknown, headers: Record<string, string> = {}): Promise<T> => {
        const response = await fetch(`${apiUrl}${route}`, {
          method: "POST",
          headers: { "content-type": "application/json", ...headers },
          body: JSON.stringify(body),
        });
        const json = (await response.json()) as { success: boolean; data: T; error?: unknown };
        if (!json.success) throw new Error(`${route}: ${JSON.stringify(json.error)}`);
        return json.data;
      };
      const { message } = await post<{ message: string }>("/api/v1/auth/nonce", { address: wallet.address });
      const { token } = await post<{ token: string }>("/api/v1/auth/verify", { message, signature: await wallet.signMessage(message) });
      return (await post<{ key: string }>("/api/v1/api-keys", { name: "bench" }, { authorization: `Bearer ${token}` })).key;
    };
    const provider = new JsonRpcProvider(chain.url, undefined, { staticNetwork: true });
    return { work, chain, deployment, apiUrl, server, provider, apiKeyFor, close };
  } catch (error) {
    close();
    throw error;
  }
}
