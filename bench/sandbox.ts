/**
 * What sandboxes cost the rest of the server (issue 26): the local stack (a Hardhat node and the API server as child
 * processes on loopback, 50 listed tasks), measured twice, unloaded and while four sandboxes burn CPU at their limits
 * (`while :; do :; done` in the server's bubblewrap engine, its limits, SCHED_IDLE, `nice 19` and, where writable, its cgroup of
 * low CPU weight (server/sandbox/priority.ts), started by this process):
 *   - browse: GET /api/v1/a2a/tasks from 4 concurrent clients for BENCH_SECONDS (p50, p99);
 *   - block → API-visible delay: a block mined (one transaction), then GET /health/ready polled until the API shows the
 *     indexer at that block (p50, p99 over BENCH_BLOCKS blocks);
 * and the sandbox's start-up overhead per run: `sh -c true` and a JS Eval `return 1` in the sandbox against the same
 * programs spawned plainly (p50 over 20 runs each). Unloaded and loaded rounds alternate, twice each. Writes bench/sandbox.json with the machine's load average and
 * calibration (bench/lib/machine.ts) and stops by itself.
 *   npm run bench:sandbox            (BENCH_SECONDS=8 and BENCH_BLOCKS=25 per round by default)
 */
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { Wallet } from "ethers";
import { MockUSDC__factory } from "../typechain-types";
import { MarketClient } from "../sdk/src/client";
import { createSandboxEngine, DEFAULT_SANDBOX_LIMITS, type SandboxLimits } from "../server/sandbox/engine";
import { jsEvalArgv } from "../server/sandbox/tools";
import { machineFigures, perCalibration } from "./lib/machine";
import { startBenchStack } from "./lib/stack";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const BLOCKS = Number(process.env.BENCH_BLOCKS ?? 25);
const ROUNDS = 2;
const BURNERS = 4;
const STARTS = 20;
const CLIENTS = 4;

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

async function blockDelays(apiUrl: string, miner: Pick<Wallet, "address" | "sendTransaction" | "getNonce">) {
  const delays: number[] = [];
  let nonce = await miner.getNonce("latest");
  for (let i = 0; i < BLOCKS; i++) {
    const receipt = await (await miner.sendTransaction({ to: miner.address, value: 1n, nonce: nonce++ })).wait();
    const mined = performance.now();
    for (;;) {
      const ready = (await (await fetch(`${apiUrl}/health/ready`)).json()) as { data?: { chains: Array<{ indexedBlock: number | null }> } };
      if ((ready.data?.chains[0]?.indexedBlock ?? -1) >= receipt!.blockNumber) break;
      await sleep(2);
    }
    delays.push(performance.now() - mined);
    await sleep(Math.random() * 200);
  }
  return delays;
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
  const limits: SandboxLimits = { ...DEFAULT_SANDBOX_LIMITS, timeoutMs: 15_000 };
  const jsArgv = jsEvalArgv(limits.memoryBytes);
  const stdin = JSON.stringify({ code: "return 1", input: null });
  const figures = { shSandboxedMs: [] as number[], shPlainMs: [] as number[], jsSandboxedMs: [] as number[], jsPlainMs: [] as number[] };
  for (let i = 0; i < STARTS; i++) {
    const sh = await engine.run({ argv: ["/bin/sh", "-c", "true"], limits });
    if (sh.exitCode !== 0) throw new Error(`the sandbox failed: ${sh.stderr}`);
    figures.shSandboxedMs.push(sh.wallMs);
    figures.shPlainMs.push(await plainRun(["/bin/sh", "-c", "true"]));
    const js = await engine.run({ argv: jsArgv, stdin, limits });
    if (!js.stdout.includes('"value":1')) throw new Error(`JS Eval failed: ${js.stderr}`);
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
    const engine = createSandboxEngine();
    const limits: SandboxLimits = { ...DEFAULT_SANDBOX_LIMITS, timeoutMs: 600_000, cpuSeconds: 600 };
    // Unloaded and loaded rounds alternate (ROUNDS of each), so a drift of the machine's other load hits both alike.
    const samples = { unloaded: { browse: [] as number[], block: [] as number[] }, loaded: { browse: [] as number[], block: [] as number[] } };
    for (let round = 0; round < ROUNDS; round++) {
      samples.unloaded.browse.push(...(await browse(apiUrl)));
      samples.unloaded.block.push(...(await blockDelays(apiUrl, miner)));
      const burning = new AbortController();
      const burners = Array.from({ length: BURNERS }, () =>
        engine.run({ argv: ["/bin/sh", "-c", "while :; do :; done"], limits, signal: burning.signal }),
      );
      await sleep(1_000);
      try {
        samples.loaded.browse.push(...(await browse(apiUrl)));
        samples.loaded.block.push(...(await blockDelays(apiUrl, miner)));
      } finally {
        burning.abort();
      }
      const ended = await Promise.all(burners);
      if (ended.some((r) => r.killed !== "aborted")) throw new Error("a burner ended before the measurement did");
    }
    const figures = (values: number[]) => ({ samples: values.length, p50Ms: quantile(values, 0.5), p99Ms: quantile(values, 0.99) });
    const unloaded = { browse: figures(samples.unloaded.browse), blockToApi: figures(samples.unloaded.block) };
    const loaded = { browse: figures(samples.loaded.browse), blockToApi: figures(samples.loaded.block) };
    const startUpFigures = await startUp();

    const ratio = (a: number, b: number) => Math.round((a / b) * 100) / 100;
    const report = {
      burners: BURNERS,
      burnerLimits: { cpuSeconds: limits.cpuSeconds, memoryBytes: limits.memoryBytes, processes: limits.processes, nice: 19, schedIdle: true },
      burnerPriority: engine.priority(),
      rounds: ROUNDS,
      unloaded,
      loaded,
      ratios: {
        browseP99: ratio(loaded.browse.p99Ms, unloaded.browse.p99Ms),
        blockToApiP99: ratio(loaded.blockToApi.p99Ms, unloaded.blockToApi.p99Ms),
      },
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
      loadAverage1mAfter: machineFigures().loadAverage1m,
      measuredAt: new Date().toISOString(),
    };
    console.table({
      "browse p99 ms": { unloaded: unloaded.browse.p99Ms, loaded: loaded.browse.p99Ms, ratio: report.ratios.browseP99 },
      "block → API p99 ms": { unloaded: unloaded.blockToApi.p99Ms, loaded: loaded.blockToApi.p99Ms, ratio: report.ratios.blockToApiP99 },
    });
    console.log("start-up", JSON.stringify(startUpFigures), "load average", machine.loadAverage1m);
    // Issue 30 item 6: the main figures divided by the machine's calibration, printed beside it.
    console.log(
      `per calibration (SHA-256 loop ${machine.calibration.sha256LoopMs} ms, SQLite loop ${machine.calibration.sqliteInsertLoopMs} ms):`,
      report.normalised,
    );
    writeFileSync(path.join(__dirname, "sandbox.json"), `${JSON.stringify(report, null, 2)}\n`);
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
