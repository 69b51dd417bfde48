/**
 * A self-run worker's gas and key (issue 29, items 1 and 11): a WorkerRuntime whose wallet cannot pay a delivery's
 * gas accepts nothing and says INSUFFICIENT_GAS once; a delivery without gas is refused with INSUFFICIENT_GAS (nothing
 * sent) and no signed transaction in hex; a runtime whose accept finds the task taken by another runtime with the same
 * key leaves it (KEY_SHARED) instead of working it twice.
 */
import { expect } from "chai";
import hre from "hardhat";
import { stackFixture, type Stack } from "../support/stack";
import { MarketClient } from "../../sdk/src/client";
import { WorkerRuntime, type RuntimeEvent } from "../../sdk/src/runtime";
import { ApiError } from "../../sdk/src/errors";

const seededStack = stackFixture(async (s) => ({
  posterKey: await s.apiKeyFor(s.poster),
  workerKey: await s.registerAgent(s.worker, ["summarization"]),
}));

async function until(check: () => boolean | Promise<boolean>, timeoutMs = 30_000, what = "condition") {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("sdk: a worker's gas and one runtime per key", function () {
  this.timeout(120_000);
  let s: Stack;
  let keys: { posterKey: string; workerKey: string };
  let poster: MarketClient;
  beforeEach(async function () {
    ({ stack: s, seeded: keys } = await seededStack());
    poster = new MarketClient(await s.clientOptions(s.poster, keys.posterKey));
  });
  afterEach(async function () {
    await s.close();
  });

  const post = async (instructions: string) =>
    (await poster.postTask({ instructions, amountRaw: 1_000_000n, privacy: "public", capabilities: ["summarization"] })).taskHash!;
  const output = "Summary: the note lists three suppliers, their prices and the delivery dates they promise for spring.";

  it("without gas: the runtime takes nothing and says INSUFFICIENT_GAS once; a delivery is refused, nothing sent, no hex", async function () {
    await hre.network.provider.send("hardhat_setBalance", [s.worker.address, "0x0"]);
    const task = await post("Summarise the supplier note.");
    const events: RuntimeEvent[] = [];
    const runtime = new WorkerRuntime({
      ...(await s.runtimeOptions(s.worker, keys.workerKey)),
      capabilities: ["summarization"],
      browseIntervalMs: 50,
      executeTask: async () => ({ output }),
    }).on((e) => events.push(e));
    await runtime.start();
    await until(() => events.some((e) => e.type === "error"), 20_000, "the gas error");
    await new Promise((resolve) => setTimeout(resolve, 500)); // several browses
    await runtime.stop();
    const errors = events.filter((e): e is Extract<RuntimeEvent, { type: "error" }> => e.type === "error");
    expect(errors.map((e) => (e.error as ApiError).code)).to.deep.equal(["INSUFFICIENT_GAS"]);
    expect(errors[0]!.error.message).to.contain(`Wallet ${s.worker.address} has 0 wei of native gas on arc`);
    expect(events.filter((e) => e.type === "task_assigned")).to.deep.equal([]);
    expect((await poster.getTask(task)).state.status).to.equal("open");

    // Taken anyway (straight through the API), its delivery finds no gas: refused before anything is sent.
    const worker = new MarketClient(await s.clientOptions(s.worker, keys.workerKey));
    await worker.acceptTask(task);
    const nonce = await hre.ethers.provider.getTransactionCount(s.worker.address);
    const refused = await worker.deliverResult({ taskHash: task, output }).catch((e: unknown) => e as ApiError);
    expect(refused).to.be.instanceOf(ApiError);
    expect((refused as ApiError).code).to.equal("INSUFFICIENT_GAS");
    expect((refused as ApiError).message).to.not.match(/0x[0-9a-f]{130,}/i);
    expect(await hre.ethers.provider.getTransactionCount(s.worker.address)).to.equal(nonce);
  });

  it("posts on the chain a call names (issue 29, item 5), refusing one the service does not take tasks on, before sending", async function () {
    const nonce = await hre.ethers.provider.getTransactionCount(s.poster.address);
    const input = { instructions: "Name three bridges of Paris.", amountRaw: 1_000_000n, privacy: "public" as const };
    const refused = await poster.postTasks([input], { chain: "0g" }).catch((e: unknown) => e as ApiError);
    expect((refused as ApiError).code).to.equal("WRONG_CHAIN");
    expect((refused as ApiError).message).to.contain("0g");
    expect(await hre.ethers.provider.getTransactionCount(s.poster.address)).to.equal(nonce);
    const posted = await poster.postTask(input, { chain: "arc" });
    expect(posted.status).to.equal("posted");
    // Listed; shown once the indexer has it.
    let chain: string | undefined;
    await until(
      async () =>
        (chain = await poster.getTask(posted.taskHash!).then(
          (t) => t.meta.chain,
          () => undefined,
        )) !== undefined,
      20_000,
      "the task indexed",
    );
    expect(chain).to.equal("arc");
  });

  it("a task another runtime with the same key took is left to it (KEY_SHARED), never worked twice", async function () {
    const task = await post("Summarise the shared-key note.");
    const other = new MarketClient(await s.clientOptions(s.worker, keys.workerKey));
    const options = await s.runtimeOptions(s.worker, keys.workerKey);
    const realFetch = globalThis.fetch;
    // The other runtime's accept lands between this runtime's browse and its own accept.
    const racing: typeof fetch = async (input, init) => {
      if (init?.method === "POST" && String(input).endsWith(`/api/v1/a2a/tasks/${task}/accept`)) await other.acceptTask(task);
      return realFetch(input, init);
    };
    const events: RuntimeEvent[] = [];
    let executed = 0;
    const runtime = new WorkerRuntime({
      ...options,
      fetch: racing,
      capabilities: ["summarization"],
      browseIntervalMs: 50,
      executeTask: async () => {
        executed++;
        return { output };
      },
    }).on((e) => events.push(e));
    await runtime.start();
    await until(() => events.some((e) => e.type === "error"), 20_000, "the shared-key warning");
    await runtime.stop();
    const errors = events.filter((e): e is Extract<RuntimeEvent, { type: "error" }> => e.type === "error");
    expect(errors.map((e) => (e.error as ApiError).code)).to.deep.equal(["KEY_SHARED"]);
    expect(errors[0]!.error.message).to.contain(`Task ${task} is held by another runtime working with this API key`);
    expect(events.filter((e) => e.type === "task_assigned")).to.deep.equal([]);
    expect(executed).to.equal(0);
    expect((await poster.getTask(task)).state.status).to.equal("assigned");
  });
});
