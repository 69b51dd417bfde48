/**
 * Bulk posting benchmark: a 1,000-row task file (half public, half private briefs wrapped to 20 agents) posted end to
 * end on the local stack through the same path as `market post-tasks` (the CLI's file reader, then
 * MarketClient.postTasks with batch funding). Runs a Hardhat node and the API server as child processes on loopback,
 * stops them at the end, and writes bench/bulk.json.
 *   npm run bench:bulk
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { JsonRpcProvider, Wallet } from "ethers";
import { freePort, startLocalChain } from "../scripts/lib/local-chain";
import { readDeployment } from "../deploy/deployments";
import { MockUSDC__factory } from "../typechain-types";
import { MarketClient } from "../sdk/src/client";
import { loadTaskFile } from "../cli/src/task-file";
import { writeCsv } from "../core/bulk";
import { publicKeyFromPrivateKey } from "../core/crypto";
import { cpuMeter } from "./lib/cpu";
import { wrapRates } from "./lib/wrap-rates";

const ROOT = path.resolve(__dirname, "..");
const ROWS = 1_000;
const AGENTS = 20;
const BAR_SECONDS = 40;

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

/** Signs in with the wallet through the API (EIP-4361) and creates an API key. */
async function apiKeyFor(apiUrl: string, wallet: Pick<Wallet, "address" | "signMessage">): Promise<string> {
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
}

async function main() {
  const work = mkdtempSync(path.join(tmpdir(), "market-bench-bulk-"));
  const chain = await startLocalChain({ port: await freePort(), quiet: true });
  let server: ChildProcess | undefined;
  try {
    const env = { ...process.env, LOCAL_RPC_URL: chain.url, DEPLOYMENTS_DIR: work, HARDHAT_NETWORK: "" };
    const cli = require.resolve("hardhat/internal/cli/cli");
    await promisify(execFile)(process.execPath, [cli, "run", "--no-compile", "--network", "localhost", "deploy/deploy.ts"], { env, cwd: ROOT });
    const deployment = readDeployment("localhost", work)!;

    const apiPort = await freePort();
    const apiUrl = `http://127.0.0.1:${apiPort}`;
    let output = "";
    server = spawn(process.execPath, ["-r", "ts-node/register/transpile-only", "server/main.ts"], {
      cwd: ROOT,
      env: {
        ...env,
        PORT: String(apiPort),
        SQLITE_PATH: path.join(work, "market.sqlite"),
        BLOB_DIR: path.join(work, "blobs"),
        CHAIN_ARC_RPC_URL: chain.url,
        CHAIN_ARC_DEPLOYMENT: "localhost",
        MARKET_VERIFIER_PRIVATE_KEY: chain.accounts[1],
        RATE_LIMIT_PER_IP: "1000000",
        RATE_LIMIT_PER_KEY: "1000000",
        OFFER_WINDOW_MS: "0",
        LOG_LEVEL: "warn",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    server.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    server.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    await waitForHealth(apiUrl, server, () => output);

    // 20 agents on arc with public keys: every private brief is wrapped to all of them.
    const agents = Array.from({ length: AGENTS }, () => Wallet.createRandom());
    for (const agent of agents) {
      const key = await apiKeyFor(apiUrl, agent);
      const response = await fetch(`${apiUrl}/api/v1/a2a/register`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": key },
        body: JSON.stringify({
          publicKey: publicKeyFromPrivateKey(agent.privateKey),
          supportedChains: ["arc"],
          capabilities: ["summarization", "translation"],
        }),
      });
      if (!response.ok) throw new Error(`registering an agent failed: ${await response.text()}`);
    }

    const provider = new JsonRpcProvider(chain.url, undefined, { staticNetwork: true });
    const posterKey = chain.accounts[3]!;
    const poster = new Wallet(posterKey, provider);
    const usdc = MockUSDC__factory.connect(deployment.token, new Wallet(chain.accounts[0]!, provider));
    await (await usdc.mint(poster.address, 1_000_000n * 10n ** 6n)).wait();

    const file = path.join(work, "tasks.csv");
    const rows = Array.from({ length: ROWS }, (_, i) => [
      `Task ${i}: summarise the following note in two sentences. Note ${i}: the quarterly figures rose by ${i % 17} percent.`,
      "0.25",
      i % 2 === 0 ? "public" : "private",
      "summarization",
    ]);
    writeFileSync(file, writeCsv(["instructions", "reward", "privacy", "capabilities"], rows));

    const client = new MarketClient({
      apiKey: await apiKeyFor(apiUrl, poster),
      baseUrl: apiUrl,
      executor: { privateKey: posterKey, rpcUrls: { arc: chain.url } },
      escrows: { arc: deployment.proxy },
    });
    let transactions = 0;
    const loadBefore = loadavg()[0]!;
    const cpu = cpuMeter({ client: process.pid, api: server.pid, chain: chain.process.pid });
    const started = performance.now();
    const fileRows = loadTaskFile(file);
    const fileCheckMs = performance.now() - started;
    const result = await client.postTasks(
      fileRows.map((r) => r.input),
      { onFunded: () => void transactions++ },
    );
    const totalSeconds = (performance.now() - started) / 1000;
    const cpuSeconds = cpu.stop();
    if (result.posted !== ROWS)
      throw new Error(`posted ${result.posted} of ${ROWS}: ${JSON.stringify(result.results.find((r) => r.status !== "posted"))}`);

    const seconds = (ms: number) => Math.round(ms) / 1000;
    const figures = {
      rows: ROWS,
      publicRows: ROWS / 2,
      privateRows: ROWS / 2,
      agentsWrappedTo: AGENTS,
      fundingTransactions: transactions,
      checkSeconds: seconds(fileCheckMs + result.timings.checkMs),
      encryptSeconds: seconds(result.timings.prepareMs),
      fundSeconds: seconds(result.timings.fundMs),
      listSeconds: seconds(result.timings.listMs),
      totalSeconds: Math.round(totalSeconds * 100) / 100,
      // CPU seconds each process spent during the run, and the machine's load average before it (a busy machine's
      // figures are slower: compare runs by these too).
      cpuSeconds,
      loadAverage1m: Math.round(loadBefore * 100) / 100,
      // Measured after the run, alone in this process (the chain and the API idle): the same 20 agents per brief.
      wrapsPerSecond: await wrapRates(AGENTS, 100),
    };
    const out = path.join(__dirname, "bulk.json");
    writeFileSync(out, `${JSON.stringify(figures, null, 2)}\n`);
    console.log(figures);
    console.log(
      "(the next chunk is encrypted and its funding built while the current one is funded and listed, so phases add up to more than the total)",
    );
    console.log(`written to ${out}`);
    if (totalSeconds > BAR_SECONDS) {
      console.error(`total ${totalSeconds.toFixed(1)} s is over the ${BAR_SECONDS} s bar`);
      process.exitCode = 1;
    }
  } finally {
    server?.kill("SIGTERM");
    chain.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
