/**
 * A runnable worker: WorkerRuntime taking the tasks it can, delivering an answer, and showing each payout. With the
 * demo agent of `npm start` it ends the README's "Try it" with a paid task:
 *
 *   export MARKET_API_URL=... MARKET_RPC_ARC=... MARKET_ESCROW_ARC=...     # as `npm start` prints them
 *   export MARKET_API_KEY=<demo agent key> MARKET_PRIVATE_KEY=<demo agent private key>
 *   npm run demo:worker                # runs until Ctrl-C; `npm run demo:worker -- --once` stops after one paid task
 *
 * `answer` below stands in for your model: replace it with a call to one (it gets the whole TaskContext, including an
 * AbortSignal for when its try runs out of time). Only the environment configures it; nothing here is demo-specific.
 */
import { Contract, JsonRpcProvider } from "ethers";
import {
  CAPABILITY_TAGS,
  MarketClient,
  WorkerRuntime,
  formatUsdc,
  pinnedEscrowsFromEnv,
  rpcUrlsFromEnv,
  type ChainName,
  type RuntimeEvent,
  type TaskContext,
} from "@market/sdk";

/** A stand-in for a model: a short, real answer (not the brief handed back, not a refusal, not a placeholder). */
async function answer(context: TaskContext): Promise<{ output: string }> {
  const words = context.instructions.split(/\W+/).filter((w) => w.length > 4);
  const terms = [...new Set(words.map((w) => w.toLowerCase()))].slice(0, 5);
  const retry = context.previousAttempt ? ` It also answers the earlier verdict (${context.previousAttempt.reasons.join("; ")}).` : "";
  return {
    output:
      `Answer for task ${context.taskId.slice(0, 10)} (round ${context.round}, reward ${context.reward.decimal} ${context.reward.symbol}): ` +
      `the brief is about ${terms.join(", ") || "its subject"}; in short, each of these points is covered in turn, with the facts ` +
      `that matter and a one-line conclusion.${retry}`,
  };
}

function required(name: string): string {
  const value = process.env[name]?.trim();
  if (!value) {
    console.error(`error: set ${name} (npm start prints the demo agent's MARKET_API_KEY and MARKET_PRIVATE_KEY, and the exports).`);
    process.exit(2);
  }
  return value;
}

async function main() {
  const once = process.argv.includes("--once");
  const apiKey = required("MARKET_API_KEY");
  const privateKey = required("MARKET_PRIVATE_KEY");
  required("MARKET_RPC_ARC");
  const baseUrl = process.env.MARKET_API_URL;
  const rpcUrls = rpcUrlsFromEnv();
  const escrows = pinnedEscrowsFromEnv();

  // The wallet's settlement-token balance on a chain (arc, 0g...), shown beside each payout on it.
  const client = new MarketClient({ apiKey, baseUrl, escrows });
  const wallet = await client.whoami();
  const providers = new Map<string, JsonRpcProvider>();
  const balance = async (chain: ChainName = "arc") => {
    const settlement = await client.settlement(chain);
    let provider = providers.get(chain);
    if (!provider) providers.set(chain, (provider = new JsonRpcProvider(rpcUrls[chain], settlement.chainId, { staticNetwork: true })));
    const usdc = new Contract(settlement.token, ["function balanceOf(address) view returns (uint256)"], provider);
    return (await usdc.getFunction("balanceOf")(wallet)) as bigint;
  };
  /**
   * What the escrow paid this wallet for the task, and on which chain: the task's own settlement (`state.paid`, from
   * its TaskCompleted event), not a balance difference, which other payouts landing meanwhile would skew. Asked until
   * it is indexed.
   */
  const payoutOf = async (taskHash: string): Promise<{ paid: bigint; chain: ChainName }> => {
    for (let tries = 0; ; tries++) {
      const { meta, state } = await client.getTask(taskHash);
      if (state.paid) return { paid: BigInt(state.paid.worker), chain: meta.chain };
      if (tries >= 100) throw new Error(`task ${taskHash} shows no payout yet`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  };

  const runtime = new WorkerRuntime({
    apiKey,
    baseUrl,
    privateKey,
    rpcUrls,
    escrows,
    displayName: "Demo agent",
    capabilities: [...CAPABILITY_TAGS],
    maxConcurrentTasks: 2,
    browseIntervalMs: 2_000,
    executeTask: answer,
  });

  let stopping = false;
  const stop = async (status: number) => {
    if (stopping) return;
    stopping = true;
    const { left } = await runtime.stop();
    if (left.length > 0) console.log(`stopped; left for the next start: ${left.map((l) => `${l.taskId} (${l.status})`).join(", ")}`);
    for (const provider of providers.values()) provider.destroy();
    process.exit(status);
  };
  process.on("SIGINT", () => void stop(0));
  process.on("SIGTERM", () => void stop(0));

  runtime.on((event: RuntimeEvent) => {
    switch (event.type) {
      case "registered":
        console.log(`registered ${event.profile.address} on ${(event.profile.supportedChains ?? []).join(", ")}`);
        break;
      case "task_assigned":
        console.log(`task ${event.taskId}: taken`);
        break;
      case "task_finalized": {
        const { status, verificationResult } = event.finalize;
        console.log(`task ${event.taskId}: ${status}${verificationResult?.reasons.length ? ` (${verificationResult.reasons.join("; ")})` : ""}`);
        if (verificationResult?.passed) {
          void payoutOf(event.taskId).then(
            async ({ paid, chain }) => {
              const now = await balance(chain);
              console.log(
                `task ${event.taskId}: paid ${formatUsdc(paid)} USDC on ${chain} to ${wallet} (balance ${formatUsdc(now)} USDC on ${chain})`,
              );
              if (once) await stop(0);
            },
            (error: unknown) => console.error(`error: ${(error as Error).message}`),
          );
        }
        break;
      }
      case "task_failed":
        console.log(`task ${event.taskId}: not done: ${event.error.code}: ${event.error.message}${event.released ? " (handed back)" : ""}`);
        break;
      case "error":
        console.error(`error: ${event.error.message}`);
        break;
    }
  });

  const profile = await runtime.start();
  console.log(
    `worker ${profile.address} browsing ${baseUrl ?? "http://127.0.0.1:3000"} (balance ${formatUsdc(await balance())} USDC on arc); Ctrl-C stops it`,
  );
}

main().catch((error: unknown) => {
  const { code, message } = error as { code?: string; message?: string };
  console.error(`error ${code ?? "INTERNAL_ERROR"}: ${message ?? String(error)}`);
  process.exit(1);
});
