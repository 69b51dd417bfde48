/**
 * What sandboxes cost the rest of the server (issue 26): the local stack (a Hardhat node and the API server as child
 * processes on loopback, 50 listed tasks), measured unloaded and while four sandboxes burn CPU at their limits
 * (`while :; do :; done` in the server's bubblewrap engine with its limits, SCHED_IDLE, `nice 19` and, where writable,
 * the sandboxes' cgroup (server/sandbox/priority.ts): the idle one by default, and also, as a third phase, the weighted
 * one of `SANDBOX_CPU_IDLE=0`, started by this process):
 *   - browse: GET /api/v1/a2a/tasks from 4 concurrent clients for BENCH_SECONDS per round (p50, p95, p99);
 *   - block → API-visible delay: a transaction sent raw (`eth_sendRawTransaction`, which returns once Hardhat's
 *     automine has mined its block), then GET /health/ready polled every 2 ms until the API shows the indexer at that
 *     block; the delay runs from the send's answer to the first answer showing the block (p50, p95, p99 over
 *     BENCH_BLOCKS blocks per round), with the run-queue wait (/proc/<pid>/schedstat) of the API server and of the node
 *     per block;
 * and the sandbox's start-up overhead per run: `sh -c true` and a JS Eval `return 1` in the sandbox against the same
 * programs spawned plainly (p50 over 20 runs each). The phases alternate within each of BENCH_ROUNDS rounds, so a drift
 * of the machine's other load hits them alike. Writes bench/sandbox.json with the machine's load average and
 * calibration (bench/lib/machine.ts); BENCH_KEEP_RUNS=1 keeps the summaries of the runs already in it (`runs`, the last
 * five). Stops by itself.
 *   npm run bench:sandbox            (BENCH_ROUNDS=6, BENCH_SECONDS=4 and BENCH_BLOCKS=60 by default: 360 blocks a phase)
 */
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { Wallet, type BaseWallet } from "ethers";
import { MockUSDC__factory } from "../typechain-types";
import { MarketClient } from "../sdk/src/client";
import { createSandboxEngine, DEFAULT_SANDBOX_LIMITS, type SandboxEngine, type SandboxLimits } from "../server/sandbox/engine";
import { jsEvalArgv } from "../server/sandbox/tools";
import { machineFigures, perCalibration } from "./lib/machine";
import { startBenchStack } from "./lib/stack";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const BLOCKS = Number(process.env.BENCH_BLOCKS ?? 60);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
const BURNERS = 4;
const STARTS = 20;
const CLIENTS = 4;
const OUT = path.join(__dirname, "sandbox.json");

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const quantile = (values: number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return Math.round(sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]! * 10) / 10;
};

async function browse(apiUrl: string) {
  const latencies: number[] = [];
  const end = performance.now() + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (performance.now() < end) {
        const started = performance.now();
        const response = await fetch(`${apiUrl}/api/v1/a2a/tasks`);
        const body = (await response.json()) as { success: boolean };
        if (!response.ok || !body.success) throw new Error(`browse answered ${response.status}`);
        latencies.push(performance.now() - started);
      }
    }),
  );
  return latencies;
}

/** Milliseconds the threads of `pid` have waited on a run queue so far (0 where /proc does not say). */
function runQueueWaitMs(pid: number | undefined): number {
  if (pid === undefined) return 0;
  let total = 0;
  try {
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      try {
        total += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, "utf8").split(" ")[1]) / 1e6;
      } catch {
        // The thread ended.
      }
    }
  } catch {
    // No /proc here.
  }
  return total;
}

interface BlockSampler {
  /** Mines BLOCKS blocks one after another; answers each one's delay until the API shows it (ms). */
  sample(): Promise<{ delays: number[]; serverWaitMs: number; nodeWaitMs: number }>;
}

async function blockSampler(
  apiUrl: string,
  chainUrl: string,
  miner: BaseWallet,
  pids: { server: number | undefined; node: number | undefined },
): Promise<BlockSampler> {
  const rpc = async <T>(method: string, params: unknown[]): Promise<T> => {
    const response = await fetch(chainUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
    });
    const body = (await response.json()) as { result?: T; error?: unknown };
    if (body.error !== undefined) throw new Error(`${method}: ${JSON.stringify(body.error)}`);
    return body.result as T;
  };
  const chainId = BigInt(await rpc<string>("eth_chainId", []));
  let nonce = await miner.getNonce("latest");
  return {
    async sample() {
      const delays: number[] = [];
      const waited = { server: runQueueWaitMs(pids.server), node: runQueueWaitMs(pids.node) };
      for (let i = 0; i < BLOCKS; i++) {
        // Signed beforehand, so that the measured span holds no work of this client's but the polls.
        const raw = await miner.signTransaction({
          type: 2,
          chainId,
          to: miner.address,
          value: 1n,
          nonce: nonce++,
          gasLimit: 21_000n,
          maxFeePerGas: 100n * 10n ** 9n,
          maxPriorityFeePerGas: 10n ** 9n,
        });
        const hash = await rpc<string>("eth_sendRawTransaction", [raw]);
        const mined = performance.now();
        const receipt = await rpc<{ blockNumber: string } | null>("eth_getTransactionReceipt", [hash]);
        if (receipt === null) throw new Error("the node answered the send before mining its block (automine off?)");
        const block = Number(receipt.blockNumber);
        for (;;) {
          const ready = (await (await fetch(`${apiUrl}/health/ready`)).json()) as { data?: { chains: Array<{ indexedBlock: number | null }> } };
          if ((ready.data?.chains[0]?.indexedBlock ?? -1) >= block) break;
          await sleep(2);
        }
        delays.push(performance.now() - mined);
        await sleep(Math.random() * 50);
      }
      return {
        delays,
        serverWaitMs: runQueueWaitMs(pids.server) - waited.server,
        nodeWaitMs: runQueueWaitMs(pids.node) - waited.node,
      };
    },
  };
}

function plainRun(argv: string[], stdin = ""): Promise<number> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    // The environment a sandbox gets (no NODE_OPTIONS of this process's).
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ["pipe", "ignore", "ignore"], env: { PATH: "/usr/bin:/bin", HOME: "/tmp" } });
    child.stdin.on("error", () => undefined);
    child.stdin.end(stdin);
    child.on("error", reject);
    child.on("close", () => resolve(performance.now() - started));
  });
}

async function startUp() {
  const engine = createSandboxEngine();
  // The server's default engine (the idle cgroup): on a busy machine a start waits for idle CPU time.
  const limits: SandboxLimits = { ...DEFAULT_SANDBOX_LIMITS, timeoutMs: 60_000 };
  const jsArgv = jsEvalArgv(limits.memoryBytes);
  const stdin = JSON.stringify({ code: "return 1", input: null });
  const figures = { shSandboxedMs: [] as number[], shPlainMs: [] as number[], jsSandboxedMs: [] as number[], jsPlainMs: [] as number[] };
  for (let i = 0; i < STARTS; i++) {
    const sh = await engine.run({ argv: ["/bin/sh", "-c", "true"], limits });
    if (sh.exitCode !== 0) throw new Error(`the sandbox failed (${sh.killed ?? sh.exitCode}): ${sh.stderr}`);
    figures.shSandboxedMs.push(sh.wallMs);
    figures.shPlainMs.push(await plainRun(["/bin/sh", "-c", "true"]));
    const js = await engine.run({ argv: jsArgv, stdin, limits });
    if (!js.stdout.includes('"value":1')) throw new Error(`JS Eval failed (${js.killed ?? js.exitCode}): ${js.stderr}`);
    figures.jsSandboxedMs.push(js.wallMs);
    figures.jsPlainMs.push(await plainRun(jsArgv, stdin));
  }
  const sh = { sandboxedP50Ms: quantile(figures.shSandboxedMs, 0.5), plainP50Ms: quantile(figures.shPlainMs, 0.5) };
  const js = { sandboxedP50Ms: quantile(figures.jsSandboxedMs, 0.5), plainP50Ms: quantile(figures.jsPlainMs, 0.5) };
  return {
    runs: STARTS,
    sh: { ...sh, overheadMs: Math.round((sh.sandboxedP50Ms - sh.plainP50Ms) * 10) / 10 },
    jsEval: { ...js, overheadMs: Math.round((js.sandboxedP50Ms - js.plainP50Ms) * 10) / 10 },
  };
}

type Phase = "unloaded" | "loaded" | "loadedWeighted";

async function main() {
  const machine = machineFigures();
  const stack = await startBenchStack("sandbox");
  try {
    const { chain, deployment, apiUrl, provider, apiKeyFor } = stack;
    const poster = new Wallet(chain.accounts[3]!, provider);
    // A wallet of its own that only mines the measured blocks, its nonce counted here.
    const miner = Wallet.createRandom().connect(provider);
    await (await new Wallet(chain.accounts[6]!, provider).sendTransaction({ to: miner.address, value: 10n ** 18n })).wait();
    const usdc = MockUSDC__factory.connect(deployment.token, new Wallet(chain.accounts[0]!, provider));
    await (await usdc.mint(poster.address, 1_000n * 10n ** 6n)).wait();
    const client = new MarketClient({
      apiKey: await apiKeyFor(poster),
      baseUrl: apiUrl,
      executor: { privateKey: poster.privateKey, rpcUrls: { arc: chain.url } },
      escrows: { arc: deployment.proxy },
    });
    const posted = await client.postTasks(
      Array.from({ length: 50 }, (_, i) => ({
        instructions: `Task ${i}: summarise the quarterly report in three sentences.`,
        reward: "1",
        privacy: "public" as const,
        capabilities: ["summarization"],
      })),
    );
    if (posted.posted !== 50) throw new Error(`posted ${posted.posted} of 50`);

    await browse(apiUrl); // warm-up
    const blocks = await blockSampler(apiUrl, chain.url, miner, { server: stack.server.pid, node: chain.process.pid });
    const limits: SandboxLimits = { ...DEFAULT_SANDBOX_LIMITS, timeoutMs: 600_000, cpuSeconds: 600 };
    // The server's default (the idle cgroup), and SANDBOX_CPU_IDLE=0 (the weighted cgroup at the default weight).
    const engines: Record<Exclude<Phase, "unloaded">, SandboxEngine> = {
      loaded: createSandboxEngine(),
      loadedWeighted: createSandboxEngine({ cpuIdle: false }),
    };
    const phases: Phase[] = ["unloaded", "loaded", "loadedWeighted"];
    const samples = Object.fromEntries(
      phases.map((phase) => [phase, { browse: [] as number[], block: [] as number[], serverWaitMs: 0, nodeWaitMs: 0 }]),
    ) as Record<Phase, { browse: number[]; block: number[]; serverWaitMs: number; nodeWaitMs: number }>;
    const measure = async (phase: Phase) => {
      samples[phase].browse.push(...(await browse(apiUrl)));
      const sampled = await blocks.sample();
      samples[phase].block.push(...sampled.delays);
      samples[phase].serverWaitMs += sampled.serverWaitMs;
      samples[phase].nodeWaitMs += sampled.nodeWaitMs;
    };
    for (let round = 0; round < ROUNDS; round++) {
      for (const phase of phases) {
        if (phase === "unloaded") {
          await measure(phase);
          continue;
        }
        const burning = new AbortController();
        const burners = Array.from({ length: BURNERS }, () =>
          engines[phase].run({ argv: ["/bin/sh", "-c", "while :; do :; done"], limits, signal: burning.signal }),
        );
        await sleep(1_000);
        try {
          await measure(phase);
        } finally {
          burning.abort();
        }
        const ended = await Promise.all(burners);
        if (ended.some((r) => r.killed !== "aborted")) throw new Error("a burner ended before the measurement did");
      }
      console.log(`round ${round + 1} of ${ROUNDS} done, load average ${machineFigures().loadAverage1m}`);
    }
    const figures = (values: number[]) => ({
      samples: values.length,
      p50Ms: quantile(values, 0.5),
      p95Ms: quantile(values, 0.95),
      p99Ms: quantile(values, 0.99),
      maxMs: quantile(values, 1),
    });
    const perPhase = (phase: Phase) => {
      const { browse: b, block, serverWaitMs, nodeWaitMs } = samples[phase];
      return {
        browse: figures(b),
        blockToApi: {
          ...figures(block),
          runQueueWaitPerBlockMs: {
            apiServer: Math.round((serverWaitMs / block.length) * 100) / 100,
            node: Math.round((nodeWaitMs / block.length) * 100) / 100,
          },
        },
      };
    };
    const unloaded = perPhase("unloaded");
    const loaded = perPhase("loaded");
    const loadedWeighted = perPhase("loadedWeighted");
    const startUpFigures = await startUp();

    const ratio = (a: number, b: number) => Math.round((a / b) * 100) / 100;
    const loadAverage1mAfter = machineFigures().loadAverage1m;
    const ratios = {
      browseP99: ratio(loaded.browse.p99Ms, unloaded.browse.p99Ms),
      blockToApiP99: ratio(loaded.blockToApi.p99Ms, unloaded.blockToApi.p99Ms),
    };
    const summary = {
      measuredAt: new Date().toISOString(),
      loadAverage1m: machine.loadAverage1m,
      loadAverage1mAfter,
      browseP99Ms: { unloaded: unloaded.browse.p99Ms, loaded: loaded.browse.p99Ms, ratio: ratios.browseP99 },
      blockToApiP99Ms: { unloaded: unloaded.blockToApi.p99Ms, loaded: loaded.blockToApi.p99Ms, ratio: ratios.blockToApiP99 },
      weightedRatios: {
        browseP99: ratio(loadedWeighted.browse.p99Ms, unloaded.browse.p99Ms),
        blockToApiP99: ratio(loadedWeighted.blockToApi.p99Ms, unloaded.blockToApi.p99Ms),
      },
      startUpOverheadMs: { sh: startUpFigures.sh.overheadMs, jsEval: startUpFigures.jsEval.overheadMs },
    };
    const previous =
      process.env.BENCH_KEEP_RUNS === "1" && existsSync(OUT) ? ((JSON.parse(readFileSync(OUT, "utf8")) as { runs?: unknown[] }).runs ?? []) : [];
    const report = {
      burners: BURNERS,
      burnerLimits: { cpuSeconds: limits.cpuSeconds, memoryBytes: limits.memoryBytes, processes: limits.processes, nice: 19, schedIdle: true },
      burnerPriority: { loaded: engines.loaded.priority(), loadedWeighted: engines.loadedWeighted.priority() },
      rounds: ROUNDS,
      blocksPerRound: BLOCKS,
      unloaded,
      loaded,
      loadedWeighted,
      ratios,
      bar: "loaded p99 within twice the unloaded p99 (issue 26)",
      startUp: startUpFigures,
      normalised: {
        unloadedBrowseP99: perCalibration(unloaded.browse.p99Ms, "duration", machine.calibration),
        loadedBrowseP99: perCalibration(loaded.browse.p99Ms, "duration", machine.calibration),
        jsEvalStartUp: perCalibration(startUpFigures.jsEval.sandboxedP50Ms, "duration", machine.calibration),
      },
      seconds: SECONDS,
      clients: CLIENTS,
      machine,
      loadAverage1mAfter,
      measuredAt: summary.measuredAt,
      runs: [...previous, summary].slice(-5),
    };
    const row = (p: ReturnType<typeof perPhase>) => ({
      "browse p50/p95/p99": `${p.browse.p50Ms} / ${p.browse.p95Ms} / ${p.browse.p99Ms}`,
      "block → API p50/p95/p99": `${p.blockToApi.p50Ms} / ${p.blockToApi.p95Ms} / ${p.blockToApi.p99Ms}`,
      "run-queue wait/block api, node": `${p.blockToApi.runQueueWaitPerBlockMs.apiServer}, ${p.blockToApi.runQueueWaitPerBlockMs.node}`,
    });
    console.table({ unloaded: row(unloaded), loaded: row(loaded), "loaded (weighted)": row(loadedWeighted) });
    console.log(
      "ratios",
      JSON.stringify(ratios),
      "start-up",
      JSON.stringify(startUpFigures),
      "load average",
      machine.loadAverage1m,
      "→",
      loadAverage1mAfter,
    );
    // Issue 30 item 6: the main figures divided by the machine's calibration, printed beside it.
    console.log(
      `per calibration (SHA-256 loop ${machine.calibration.sha256LoopMs} ms, SQLite loop ${machine.calibration.sqliteInsertLoopMs} ms):`,
      report.normalised,
    );
    writeFileSync(OUT, `${JSON.stringify(report, null, 2)}\n`);
  } finally {
    stack.close();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
