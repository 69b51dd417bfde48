import { createServer, type AddressInfo } from "node:net";
import { expect } from "chai";
import { time } from "@nomicfoundation/hardhat-network-helpers";
import { stackFixture, type Stack } from "../support/stack";
import { cliEnv, ensureCliBuilt, runCli, taskDir } from "../support/cli";
import { MarketClient } from "../../sdk/src/client";

/** The poster's API key; the worker registered as an agent on arc (no tags), with its API key. */
const seededStack = stackFixture(async (s) => ({ posterKey: await s.apiKeyFor(s.poster), workerKey: await s.registerAgent(s.worker, []) }));

describe("cli: market review and market cancel", function () {
  let s: Stack;
  let poster: MarketClient;
  let worker: MarketClient;
  let env: NodeJS.ProcessEnv;
  let cwd: string;

  before(ensureCliBuilt);
  beforeEach(async function () {
    const { stack, seeded } = await seededStack();
    s = stack;
    poster = new MarketClient(await s.clientOptions(s.poster, seeded.posterKey));
    worker = new MarketClient(await s.clientOptions(s.worker, seeded.workerKey));
    env = await cliEnv(s, s.poster, { apiKey: seeded.posterKey });
    cwd = taskDir({});
  });
  afterEach(async function () {
    await s.close();
  });

  /** Posts public tasks through the SDK; returns their hashes in order. */
  async function post(rows: Array<{ instructions: string; amountRaw: bigint; verificationMode?: "auto" | "manual"; durationSeconds?: number }>) {
    const result = await poster.postTasks(rows.map((r) => ({ privacy: "public" as const, ...r })));
    expect(result.posted).to.equal(rows.length);
    await s.sync();
    return result.results.map((r) => r.taskHash!);
  }

  async function deliver(taskHash: string, output: string) {
    await worker.acceptTask(taskHash);
    const finalized = await worker.deliverResult({ taskHash, output });
    expect(finalized.status).to.be.oneOf(["submitted", "awaiting_verification"]);
    await s.sync();
  }

  it("review --approve pays the worker (less the fee); review --reject fails the round", async function () {
    const [approved, rejected] = await post([
      { instructions: "Write a limerick about ledgers.", amountRaw: 5_000_000n, verificationMode: "manual" },
      { instructions: "Write a limerick about audits.", amountRaw: 4_000_000n, verificationMode: "manual" },
    ]);
    await deliver(approved!, "There once was a ledger so neat, whose columns were always complete.");
    await deliver(rejected!, "No.");

    // Without a verdict flag: the delivered result, to judge it.
    const shown = await runCli(["review", approved!], { env, cwd });
    expect(shown.status, shown.stderr).to.equal(0);
    expect(shown.stdout).to.contain("status: awaiting_verification, rounds used: 1 of 3");
    expect(shown.stdout).to.contain("output:\nThere once was a ledger so neat, whose columns were always complete.\n");
    expect(shown.stdout).to.contain(`judge it with: market review ${approved} --approve | --reject --reason <text>`);

    const workerBefore = await s.usdc.balanceOf(s.worker.address);
    const approve = await runCli(["review", approved!, "--approve", "--score", "90", "--reason", "Scans well", "--reason", "On topic"], { env, cwd });
    expect(approve.status, approve.stderr).to.equal(0);
    expect(approve.stdout).to.contain(`approved ${approved}`);
    expect(approve.stdout).to.match(/status: (verified|completed)\n/);
    expect(approve.stdout).to.match(/tx: 0x[0-9a-f]{64}\n/);
    expect((await s.usdc.balanceOf(s.worker.address)) - workerBefore).to.equal(4_500_000n);

    const reject = await runCli(["review", rejected!, "--reject", "--reason", "Too short"], { env, cwd });
    expect(reject.status, reject.stderr).to.equal(0);
    expect(reject.stdout).to.contain(`rejected ${rejected}`);
    expect(reject.stdout).to.contain("status: failed");
    expect(await s.usdc.balanceOf(s.worker.address)).to.equal(workerBefore + 4_500_000n);

    const again = await runCli(["review", approved!, "--approve"], { env, cwd });
    expect(again.status).to.equal(1);
    expect(again.stderr).to.match(/^error WRONG_STATE: /);
    const both = await runCli(["review", approved!, "--approve", "--reject"], { env, cwd });
    expect(both.status).to.equal(2);
    expect(both.stderr).to.contain("error VALIDATION_FAILED: give at most one of --approve and --reject");
    const judged = await runCli(["review", rejected!], { env, cwd });
    expect(judged.stdout).to.contain("verdict: failed, score 0 (Too short)");
  });

  it("review by someone other than the poster is refused with NOT_POSTER", async function () {
    const [task] = await post([{ instructions: "Write a limerick about invoices.", amountRaw: 1_000_000n, verificationMode: "manual" }]);
    await deliver(task!, "An invoice arrived in the post, and it cost far more than the most.");
    const stranger = await runCli(["review", task!, "--approve"], { env: await cliEnv(s, s.stranger), cwd });
    expect(stranger.status).to.equal(1);
    expect(stranger.stderr).to.match(/^error NOT_POSTER: /);
  });

  it("cancel cancels an open task (says cancelled, not refund), and claims an assigned one after its deadline", async function () {
    const [open, assigned] = await post([
      { instructions: "Name the largest desert.", amountRaw: 2_000_000n },
      { instructions: "Name the deepest lake.", amountRaw: 3_000_000n, durationSeconds: 3600 },
    ]);
    const posterBefore = await s.usdc.balanceOf(s.poster.address);
    const escrowBefore = await s.usdc.balanceOf(s.escrowAddress);

    const cancelled = await runCli(["cancel", open!], { env, cwd });
    expect(cancelled.status, cancelled.stderr).to.equal(0);
    expect(cancelled.stdout).to.contain(`${open}: cancelled: the whole reward went back to your wallet`);
    const tx = /tx: (0x[0-9a-f]{64})/.exec(cancelled.stdout)![1]!;
    expect((await s.escrow.runner!.provider!.getTransactionReceipt(tx))!.from).to.equal(s.poster.address);
    expect((await s.usdc.balanceOf(s.poster.address)) - posterBefore).to.equal(2_000_000n);
    // A second cancel says the task is over already, not the claim precondition's "Claiming is not possible" (issue 29).
    await s.sync();
    const again = await runCli(["cancel", open!], { env, cwd });
    expect(again.status).to.equal(1);
    expect(again.stderr).to.match(
      /^error WRONG_STATE: Task 0x[0-9a-f]{64} is cancelled already: its reward went back to the poster; nothing is left/,
    );

    await worker.acceptTask(assigned!);
    const early = await runCli(["cancel", assigned!], { env, cwd });
    expect(early.status).to.equal(1);
    expect(early.stderr).to.match(/^error DEADLINE_NOT_REACHED: /);
    await time.increase(3601);
    await s.sync();
    const claimed = await runCli(["cancel", assigned!], { env, cwd });
    expect(claimed.status, claimed.stderr).to.equal(0);
    expect(claimed.stdout).to.contain(`${assigned}: claimed after the deadline: the whole reward went back to your wallet`);
    expect((await s.usdc.balanceOf(s.poster.address)) - posterBefore).to.equal(5_000_000n);
    expect(escrowBefore - (await s.usdc.balanceOf(s.escrowAddress))).to.equal(5_000_000n);
  });

  it("a server that does not answer is named in NETWORK_ERROR", async function () {
    // A loopback port just freed: nothing listens on it.
    const free = createServer();
    await new Promise<void>((resolve) => free.listen(0, "127.0.0.1", resolve));
    const port = (free.address() as AddressInfo).port;
    await new Promise((resolve) => free.close(resolve));
    const down = `http://127.0.0.1:${port}`;
    const answer = await runCli(["tasks"], { env: { ...env, MARKET_API_URL: down }, cwd });
    expect(answer.status).to.equal(1);
    expect(answer.stderr).to.match(/^error NETWORK_ERROR: GET http:\/\/127\.0\.0\.1:\d+\/api\/v1\//);
    expect(answer.stderr).to.contain(`${down}/api/v1/`);
    expect(answer.stderr).to.contain(`fetch failed (ECONNREFUSED); is the API at ${down} running?`);
  });
});
