/**
 * Events (issue 27, docs/events.md): how soon an escrow event reaches its subscribers, and how soon a WorkerRuntime
 * takes a listed task on the stream against the browse-only runtime. Runs a Hardhat node and the API server as child
 * processes on loopback (bench/lib/stack.ts), stops them at the end, and writes bench/events.json.
 *   npm run bench:events
 * - Fan-out: 100 subscribers, each its own account with one SSE stream (`GET /api/v1/events/stream`) and one webhook
 *   to a receiver on loopback. A poster funds tasks on chain at 100 a second (`createTasks`, 10 per block, 10 blocks a
 *   second), each naming one subscriber as its verifier, so each `task.funded` is seen by that subscriber (and the
 *   poster): 100 events a second spread over the 100 subscriptions. Block → SSE and block → webhook are timed from
 *   the moment the block's transaction is mined (its send answered on the automining node) to the event's arrival.
 * - listed → accepted: public tasks posted through the API one at a time, each timed from its listing answered to the
 *   runtime's `task_assigned`, first with a runtime on the stream, then with the browse-only runtime (followEvents
 *   false, the default 15 s browse interval), in the same run.
 * BENCH_EVENT_SECONDS (default 10) and BENCH_LISTED_TASKS (default 8) change the counts (bench/events.json is for the
 * defaults); DEBUG_RUNTIME=1 prints each runtime event and what a browse shows. Everything stops by itself.
 */
import { writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { id as keccakId, NonceManager, Wallet } from "ethers";
import { MockUSDC__factory, TaskEscrow__factory } from "../typechain-types";
import { MarketClient } from "../sdk/src/client";
import { WorkerRuntime } from "../sdk/src/runtime";
import { streamEvents, type MarketEvent } from "../sdk/src/events";
import { calibrated, machineFigures } from "./lib/machine";
import { startBenchStack, type BenchStack } from "./lib/stack";

const SUBSCRIBERS = 100;
const EVENTS_PER_SECOND = 100;
const PER_BLOCK = 10;
const SECONDS = Number(process.env.BENCH_EVENT_SECONDS ?? 10);
const LISTED_TASKS = Number(process.env.BENCH_LISTED_TASKS ?? 8);
/** After the last block, how long deliveries may still come before the bench counts them lost. */
const DRAIN_MS = 30_000;
const MASTER_KEY = "11".repeat(32);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const round = (ms: number) => Math.round(ms * 10) / 10;

function percentiles(values: number[]) {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (p: number) => round(sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN);
  return { count: sorted.length, p50: at(50), p99: at(99), max: at(100) };
}

async function api<T>(stack: BenchStack, key: string, method: string, route: string, body?: unknown): Promise<T> {
  const response = await fetch(`${stack.apiUrl}${route}`, {
    method,
    headers: { "x-api-key": key, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const json = (await response.json()) as { success: boolean; data: T; error?: unknown };
  if (!json.success) throw new Error(`${method} ${route}: ${JSON.stringify(json.error)}`);
  return json.data;
}

/** Webhook deliveries on loopback: the arrival time of each event id (the first one; retries are not timed). */
function receiver() {
  const arrived = new Map<string, number>();
  let duplicates = 0;
  const server: Server = createServer((req, res) => {
    const id = String(req.headers["webhook-id"] ?? "");
    const at = performance.now();
    req.resume();
    req.on("end", () => {
      if (arrived.has(id)) duplicates += 1;
      else arrived.set(id, at);
      res.writeHead(200).end();
    });
  });
  return {
    arrived,
    duplicates: () => duplicates,
    listen: () => new Promise<number>((resolve) => server.listen(0, "127.0.0.1", () => resolve((server.address() as AddressInfo).port))),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function fanOut(stack: BenchStack) {
  const { chain, deployment, provider } = stack;
  const poster = new NonceManager(new Wallet(chain.accounts[3]!, provider));
  const posterAddress = await poster.getAddress();
  const usdc = MockUSDC__factory.connect(deployment.token, new Wallet(chain.accounts[0]!, provider));
  const total = BigInt(EVENTS_PER_SECOND * SECONDS) * 1_000_000n;
  await (await usdc.mint(posterAddress, total)).wait();
  await (await MockUSDC__factory.connect(deployment.token, poster).approve(deployment.proxy, total)).wait();
  const escrow = TaskEscrow__factory.connect(deployment.proxy, poster);

  // The subscribers: each an account of its own with a webhook and a stream, from the log's head.
  const hooks = receiver();
  const port = await hooks.listen();
  const subscribers = await Promise.all(
    Array.from({ length: SUBSCRIBERS }, async (_, i) => {
      const wallet = Wallet.createRandom();
      const key = await stack.apiKeyFor(wallet);
      await api(stack, key, "POST", "/api/v1/webhooks", { url: `http://127.0.0.1:${port}/hook/${i}`, types: ["task.funded"] });
      return { wallet, key };
    }),
  );
  const head = (await api<{ next: string }>(stack, subscribers[0]!.key, "GET", "/api/v1/events?after=now&limit=1")).next;
  const sseArrived = new Map<string, number>();
  const sseTx = new Map<string, string>();
  let sseDuplicates = 0;
  const stop = new AbortController();
  const streams = subscribers.map(async ({ key }) => {
    for await (const event of streamEvents({ baseUrl: stack.apiUrl, apiKey: key, after: head, types: ["task.funded"], signal: stop.signal })) {
      const at = performance.now();
      if (sseArrived.has(event.id)) sseDuplicates += 1;
      else sseArrived.set(event.id, at);
      sseTx.set(event.id, event.txHash!);
    }
  });
  await sleep(1_000);

  // 100 events a second: a block of 10 fundings every 100 ms, each funding naming the next subscriber as verifier.
  const minedAt = new Map<string, number>();
  const blocks = (EVENTS_PER_SECOND * SECONDS) / PER_BLOCK;
  const started = performance.now();
  let sent = 0;
  let queue = Promise.resolve();
  for (let b = 0; b < blocks; b++) {
    const due = started + (b * 1000 * PER_BLOCK) / EVENTS_PER_SECOND;
    if (due > performance.now()) await sleep(due - performance.now());
    const tasks = Array.from({ length: PER_BLOCK }, (_, j) => ({
      taskHash: keccakId(`bench-events-${Date.now()}-${b}-${j}`),
      token: deployment.token,
      amount: 1_000_000n,
      duration: 86_400n,
      verifier: subscribers[(b * PER_BLOCK + j) % SUBSCRIBERS]!.wallet.address,
    }));
    // One send at a time (an automining node takes no nonce gap); it answers once the block is mined.
    queue = queue.then(async () => {
      const tx = await escrow.createTasks(tasks, { gasLimit: 6_000_000n });
      minedAt.set(tx.hash.toLowerCase(), performance.now());
      sent += PER_BLOCK;
    });
  }
  await queue;
  const sendSeconds = (performance.now() - started) / 1000;
  const expected = sent;

  const drainEnd = performance.now() + DRAIN_MS;
  while ((sseArrived.size < expected || hooks.arrived.size < expected) && performance.now() < drainEnd) await sleep(100);
  stop.abort();
  await Promise.allSettled(streams);
  await hooks.close();

  // The webhook's event id names its transaction through the log: read it back from one subscriber's page.
  const txOf = new Map(sseTx);
  const missing = [...hooks.arrived.keys()].filter((id) => !txOf.has(id));
  for (const { key } of subscribers) {
    if (missing.every((id) => txOf.has(id))) break;
    let after = head;
    for (;;) {
      const page = await api<{ events: MarketEvent[]; next: string; more: boolean }>(
        stack,
        key,
        "GET",
        `/api/v1/events?after=${after}&limit=500&types=task.funded`,
      );
      for (const e of page.events) txOf.set(e.id, e.txHash!);
      if (!page.more) break;
      after = page.next;
    }
  }
  const latencies = (arrived: Map<string, number>) =>
    [...arrived].flatMap(([id, at]) => {
      const mined = minedAt.get(txOf.get(id) ?? "");
      return mined === undefined ? [] : [at - mined];
    });
  return {
    subscribers: SUBSCRIBERS,
    eventsSent: expected,
    sendSeconds: round(sendSeconds),
    eventsPerSecondSent: round(expected / sendSeconds),
    blockToSseMs: { ...percentiles(latencies(sseArrived)), duplicates: sseDuplicates, lost: expected - sseArrived.size },
    blockToWebhookMs: { ...percentiles(latencies(hooks.arrived)), duplicates: hooks.duplicates(), lost: expected - hooks.arrived.size },
  };
}

/** Public tasks posted one at a time while a runtime runs: each from its listing answered to the runtime's accept. */
async function listedToAccepted(stack: BenchStack, followEvents: boolean, workerIndex: number, posterIndex: number) {
  const { chain, deployment, provider, apiUrl } = stack;
  const poster = new Wallet(chain.accounts[posterIndex]!, provider);
  const worker = new Wallet(chain.accounts[workerIndex]!, provider);
  const usdc = MockUSDC__factory.connect(deployment.token, new Wallet(chain.accounts[0]!, provider));
  await (await usdc.mint(poster.address, 1_000n * 10n ** 6n)).wait();
  const posting = new MarketClient({
    apiKey: await stack.apiKeyFor(poster),
    baseUrl: apiUrl,
    executor: { privateKey: poster.privateKey, rpcUrls: { arc: chain.url } },
    escrows: { arc: deployment.proxy },
  });
  const listedAt = new Map<string, number>();
  const acceptedAt = new Map<string, number>();
  const capability = followEvents ? "translation" : "text_analysis";
  const workerKey = await stack.apiKeyFor(worker);
  const runtime = new WorkerRuntime({
    apiKey: workerKey,
    baseUrl: apiUrl,
    privateKey: worker.privateKey,
    rpcUrls: { arc: chain.url },
    escrows: { arc: deployment.proxy },
    capabilities: [capability],
    maxConcurrentTasks: 4,
    followEvents,
    executeTask: async () => ({ output: "Bonjour, et merci pour votre message: voici la traduction demandée, mot pour mot." }),
  }).on((event) => {
    if (process.env.DEBUG_RUNTIME) console.log(followEvents, Math.round(performance.now()), JSON.stringify(event));
    if (event.type === "task_assigned") acceptedAt.set(event.taskId.toLowerCase(), performance.now());
    if (event.type === "error") problems.push(event.error.message);
    if (event.type === "task_failed") problems.push(`${event.error.code}: ${event.error.message}`);
  });
  const problems: string[] = [];
  await runtime.start();
  try {
    for (let i = 0; i < LISTED_TASKS; i++) {
      // Spread over the browse interval, so the browse-only runtime's wait is sampled across it.
      await sleep(1_000 + Math.floor(Math.random() * 2_000));
      const run = await posting.postTasks([
        {
          instructions: `Translate greeting number ${i} of the ${followEvents ? "stream" : "browse"} run ${Date.now()} into French.`,
          reward: "1",
          privacy: "public",
          capabilities: [capability],
        },
      ]);
      const hash = run.results[0]!.taskHash!.toLowerCase();
      listedAt.set(hash, performance.now());
    }
    if (process.env.DEBUG_RUNTIME) {
      const probe = new MarketClient({ apiKey: workerKey, baseUrl: apiUrl });
      const seen = await probe.browseA2ATasks({ capabilities: [capability] });
      console.log(
        "browse shows",
        seen.tasks.map((t) => t.meta.taskHash),
        "listed",
        [...listedAt.keys()],
      );
    }
    const end = performance.now() + 40_000;
    while (acceptedAt.size < listedAt.size && performance.now() < end) await sleep(50);
  } finally {
    await runtime.stop({ timeoutMs: 10_000 });
  }
  const waits = [...listedAt].flatMap(([hash, at]) => (acceptedAt.has(hash) ? [Math.max(0, acceptedAt.get(hash)! - at)] : []));
  if (problems.length > 0) console.error(`runtime (followEvents ${followEvents}) reported:\n${problems.slice(0, 5).join("\n")}`);
  return { ...percentiles(waits), tasks: listedAt.size, notAccepted: listedAt.size - waits.length, runtimeErrors: problems.length };
}

async function main() {
  const machine = machineFigures();
  const stack = await startBenchStack("events", {
    MARKET_MASTER_KEY: MASTER_KEY,
    HOSTED_ALLOW_PRIVATE_NETWORKS: "true",
    EVENT_STREAMS_PER_ACCOUNT: "10",
    WEBHOOKS_PER_ACCOUNT: "10",
  });
  try {
    const fan = await fanOut(stack);
    const onStream = await listedToAccepted(stack, true, 4, 5);
    const browseOnly = await listedToAccepted(stack, false, 6, 7);
    const figures = {
      ...fan,
      listedToAcceptedMs: { stream: onStream, browseOnly },
      goals: {
        blockToSseP99Under250Ms: fan.blockToSseMs.p99 < 250,
        listedToAcceptedP99Under1s: onStream.p99 < 1_000,
      },
      settings: {
        indexerPollMs: 200,
        eventFeedPollMs: 50,
        webhookSenderConcurrency: 16,
        browseIntervalMs: 15_000,
        note: "each funding is seen by its poster and the one subscriber named its verifier: 100 events/s over 100 subscriptions",
      },
      loadAverage1m: machine.loadAverage1m,
      machine,
      perCalibration: {} as Record<string, number>,
    };
    figures.perCalibration = calibrated(
      {
        blockToSseP99Ms: { value: fan.blockToSseMs.p99, kind: "duration" },
        blockToWebhookP99Ms: { value: fan.blockToWebhookMs.p99, kind: "duration" },
        listedToAcceptedStreamP99Ms: { value: onStream.p99, kind: "duration" },
      },
      machine,
    );
    console.log(JSON.stringify(figures, null, 2));
    const out = path.join(__dirname, "events.json");
    writeFileSync(out, `${JSON.stringify(figures, null, 2)}\n`);
    console.log(`written to ${out}`);
  } finally {
    stack.close();
  }
}

main().then(
  () => process.exit(process.exitCode ?? 0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
