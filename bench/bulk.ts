/**
 * Bulk posting benchmark: a 1,000-row task file (half public, half private briefs wrapped to 20 agents) posted end to
 * end on the local stack through the same path as `market post-tasks` (the CLI's file reader, then
 * MarketClient.postTasks with batch funding). Runs a Hardhat node and the API server as child processes on loopback,
 * stops them at the end, and writes bench/bulk.json. BENCH_RUNS=5 runs it five times, each on a fresh stack: the JSON
 * holds every run (`runs`, each with its load average and the machine's calibration) and the median run's figures.
 *   npm run bench:bulk
 *   BENCH_CPU_PROFILE_DIR=<dir>  the API server's CPU profiles, and this process's over the posting (bulk-client.cpuprofile)
 *   BENCH_RPC_COUNT=1            the client's and the API's JSON-RPC calls by method, printed (bench/bulk.json untouched)
 */
import { writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import path from "node:path";
import { Wallet } from "ethers";
import { MockUSDC__factory } from "../typechain-types";
import { MarketClient } from "../sdk/src/client";
import { loadTaskFile } from "../cli/src/task-file";
import { writeCsv } from "@market/core/bulk";
import { publicKeyFromPrivateKey } from "@market/core/crypto";
import { cpuMeter } from "./lib/cpu";
import { calibrated, machineFigures } from "./lib/machine";
import { startBenchStack } from "./lib/stack";
import { wrapRates } from "./lib/wrap-rates";
import { profiled } from "./lib/profile";
import { defaultSealer, type ThreadSealer } from "../sdk/src/posting/seal-threads";
import { rpcMeter, type RpcMeter } from "./lib/rpc-meter";

const ROWS = 1_000;
const AGENTS = 20;
const BAR_SECONDS = 40;
const RUNS = Number(process.env.BENCH_RUNS ?? 1);

async function main() {
  const runs: Array<NonNullable<Awaited<ReturnType<typeof run>>>> = [];
  for (let i = 0; i < RUNS; i++) {
    const figures = await run();
    if (!figures) return; // a run counting RPC calls
    runs.push(figures);
    console.log(`run ${i + 1} of ${RUNS}: ${figures.totalSeconds} s at load ${figures.loadAverage1m}`);
  }
  const totals = runs.map((r) => r.totalSeconds).sort((a, b) => a - b);
  const median = runs.find((r) => r.totalSeconds === totals[Math.floor((totals.length - 1) / 2)])!;
  const out = path.join(__dirname, "bulk.json");
  writeFileSync(out, `${JSON.stringify({ ...median, runs: RUNS > 1 ? runs : undefined }, null, 2)}\n`);
  console.log(`written to ${out}${RUNS > 1 ? ` (the median of ${RUNS} runs: ${totals.join(", ")} s)` : ""}`);
  if (median.totalSeconds > BAR_SECONDS) {
    console.error(`total ${median.totalSeconds.toFixed(1)} s is over the ${BAR_SECONDS} s bar`);
    process.exitCode = 1;
  }
}

/** One run on a fresh stack: its figures, or nothing for a run counting RPC calls. */
async function run() {
  // BENCH_RPC_COUNT=1: the client's and the API's JSON-RPC calls counted by method, through a proxy each (which costs
  // this process some CPU: the timed figures of such a run are not comparable).
  const meters: { client?: RpcMeter; api?: RpcMeter } = {};
  const counting = process.env.BENCH_RPC_COUNT === "1";
  const stack = await startBenchStack("bulk", {}, counting ? { serverRpc: async (url) => (meters.api = await rpcMeter(url)).url } : {});
  const { work, chain, deployment, apiUrl, server, provider, apiKeyFor } = stack;
  if (counting) meters.client = await rpcMeter(chain.url);
  try {
    // 20 agents on arc with public keys: every private brief is wrapped to all of them.
    const agents = Array.from({ length: AGENTS }, () => Wallet.createRandom());
    for (const agent of agents) {
      const key = await apiKeyFor(agent);
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
      apiKey: await apiKeyFor(poster),
      baseUrl: apiUrl,
      executor: { privateKey: posterKey, rpcUrls: { arc: meters.client?.url ?? chain.url } },
      escrows: { arc: deployment.proxy },
    });
    let transactions = 0;
    // The client's default sealer in Node: worker threads (sdk/src/posting/seal-threads.ts).
    const sealer = defaultSealer() as Partial<ThreadSealer>;
    const sealedBefore = sealer.sealed ?? { onThreads: 0, here: 0 };
    const machine = machineFigures();
    const loadBefore = loadavg()[0]!;
    meters.api?.reset();
    const cpu = cpuMeter({ client: process.pid, api: server.pid, chain: chain.process.pid });
    const started = performance.now();
    const fileRows = loadTaskFile(file);
    const fileCheckMs = performance.now() - started;
    // The run's critical path, chunk by chunk: reading the file and staging the first chunk (until its onFunding);
    // each funding from onFunding to mined (onFunded); from there to the next chunk's onFunding (its nonce, and any
    // wait for its staging or for the previous chunk's listing, which runs beside the next funding); and after the last
    // funding, the end of its listing.
    const critical = { startSeconds: 0, sendSeconds: 0, betweenSeconds: 0, listSeconds: 0 };
    let mark = started;
    const lap = (key: keyof typeof critical) => {
      const at = performance.now();
      critical[key] += (at - mark) / 1000;
      mark = at;
    };
    const post = () =>
      client.postTasks(
        fileRows.map((r) => r.input),
        {
          onFunding: () => lap(transactions === 0 ? "startSeconds" : "betweenSeconds"),
          onFunded: () => {
            transactions++;
            lap("sendSeconds");
          },
        },
      );
    const profileDir = process.env.BENCH_CPU_PROFILE_DIR;
    const result = profileDir ? (await profiled(post, { files: [] }, path.join(profileDir, "bulk-client.cpuprofile"))).result : await post();
    lap("listSeconds");
    const totalSeconds = (performance.now() - started) / 1000;
    const cpuSeconds = cpu.stop();
    const sealedAfter = sealer.sealed ?? { onThreads: 0, here: 0 };
    const rpcCalls = counting ? { client: meters.client!.counts(), api: meters.api!.counts() } : undefined;
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
      // Private briefs sealed on the sealer's worker threads, and in the posting thread while none was ready yet.
      sealedBriefs: { onThreads: sealedAfter.onThreads - sealedBefore.onThreads, postingThread: sealedAfter.here - sealedBefore.here },
      fundSeconds: seconds(result.timings.fundMs),
      listSeconds: seconds(result.timings.listMs),
      totalSeconds: Math.round(totalSeconds * 100) / 100,
      // Where the total went, in order, adding up to it (the phases above overlap: the next chunk is staged while one
      // is funded, and each chunk is listed while the next one is funded): reading the file and staging the first
      // chunk; sending each funding until mined; between fundings (the next one's nonce, and any wait for its staging
      // or for the listing of the chunk before); and the last chunk's listing.
      criticalPath: Object.fromEntries(Object.entries(critical).map(([k, v]) => [k, Math.round(v * 1000) / 1000])),
      // CPU seconds each process spent during the run, and the machine's load average before it (a busy machine's
      // figures are slower: compare runs by these too).
      cpuSeconds,
      loadAverage1m: Math.round(loadBefore * 100) / 100,
      ...(rpcCalls ? { rpcCalls } : {}),
      // Measured after the run, alone in this process (the chain and the API idle): the same 20 agents per brief.
      wrapsPerSecond: await wrapRates(AGENTS, 100),
      // The machine's calibration and the main figures divided by it (bench/lib/machine.ts).
      machine,
      perCalibration: {} as Record<string, number>,
    };
    figures.perCalibration = calibrated(
      {
        totalSeconds: { value: totalSeconds * 1000, kind: "duration" },
        encryptSeconds: { value: result.timings.prepareMs, kind: "duration" },
        fundSeconds: { value: result.timings.fundMs, kind: "duration" },
      },
      machine,
    );
    console.dir(figures, { depth: null });
    console.log(
      "(the next chunk is encrypted and its funding built while the current one is funded, and listed while the next one is, so phases add up to more than the total)",
    );
    if (counting) {
      console.log("(a run counting RPC calls through proxies: bench/bulk.json is left as it was)");
      return undefined;
    }
    return figures;
  } finally {
    meters.client?.close();
    meters.api?.close();
    stack.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
