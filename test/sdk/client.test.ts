import { expect } from "chai";
import hre from "hardhat";
import { startStack, type Stack } from "../support/stack";
import { MarketClient, type MarketClientOptions } from "../../sdk/src/client";
import { ApiError } from "../../sdk/src/errors";
import type { PostTaskInput } from "../../sdk/src/posting";
import { publicTaskHash } from "../../core/crypto";

/** A fetch that lets a test rewrite the API's answer to one route (the service misbehaving). */
function tampering(path: RegExp, rewrite: (data: Record<string, unknown>) => void): typeof fetch {
  return (async (input: string | URL | Request, init?: RequestInit) => {
    const response = await fetch(input, init);
    if (!path.test(new URL(String(input)).pathname)) return response;
    const body = (await response.json()) as { success: boolean; data: Record<string, unknown> };
    if (body.success) rewrite(body.data);
    return new Response(JSON.stringify(body), { status: response.status, headers: response.headers });
  }) as typeof fetch;
}

async function refusal(promise: Promise<unknown>): Promise<ApiError> {
  const error = await promise.then(() => undefined, (e: unknown) => e);
  expect(error, "expected a refusal").to.be.instanceOf(ApiError);
  return error as ApiError;
}

describe("MarketClient", function () {
  this.timeout(60_000);
  let s: Stack;
  let base: MarketClientOptions & { executor: NonNullable<MarketClientOptions["executor"]> };
  const task: PostTaskInput = { instructions: "Translate a short greeting into French, please.", amountRaw: 1_000_000n, privacy: "public" };

  beforeEach(async function () {
    s = await startStack();
    base = await s.clientOptions(s.poster);
  });
  afterEach(async function () {
    await s.close();
  });

  /** Nothing was sent: the poster's nonce and balance did not move. */
  async function nothingSent(run: () => Promise<unknown>) {
    const nonce = await hre.ethers.provider.getTransactionCount(s.poster.address);
    const balance = await s.usdc.balanceOf(s.poster.address);
    await run();
    expect(await hre.ethers.provider.getTransactionCount(s.poster.address)).to.equal(nonce);
    expect(await s.usdc.balanceOf(s.poster.address)).to.equal(balance);
  }

  describe("transaction guard", function () {
    const guarded: Array<[string, string, (options: typeof base) => MarketClientOptions]> = [
      ["no RPC for the chain", "WRONG_RPC", (o) => ({ ...o, executor: { ...o.executor, rpcUrls: {} } })],
      [
        "an RPC that answers for another chain",
        "WRONG_RPC",
        (o) => ({ ...o, fetch: tampering(/health\/settlement/, (d) => ((d.chains as Array<Record<string, unknown>>)[0]!.chainId = 5042)) }),
      ],
      ["no pinned escrow", "ESCROW_NOT_PINNED", (o) => ({ ...o, escrows: {} })],
      ["a pinned escrow other than the service's", "ESCROW_MISMATCH", (o) => ({ ...o, escrows: { arc: s.stranger.address } })],
      ["a funding transaction for another chain", "WRONG_CHAIN", (o) => ({ ...o, fetch: tampering(/^\/api\/v1\/tasks$/, (d) => ((d.unsignedTx as Record<string, unknown>).chainId = 1)) })],
      [
        "a funding transaction to another contract",
        "ESCROW_MISMATCH",
        (o) => ({ ...o, fetch: tampering(/^\/api\/v1\/tasks$/, (d) => ((d.unsignedTx as Record<string, unknown>).to = s.stranger.address)) }),
      ],
      [
        "a funding transaction with another amount",
        "TX_MISMATCH",
        (o) => ({
          ...o,
          fetch: tampering(/^\/api\/v1\/tasks$/, (d) => {
            const tx = d.unsignedTx as { data: string };
            tx.data = tx.data.replace(/0{6}f4240/, "00000f4241");
          }),
        }),
      ],
      ["a funding transaction from another wallet", "TX_MISMATCH", (o) => ({ ...o, fetch: tampering(/^\/api\/v1\/tasks$/, (d) => ((d.unsignedTx as Record<string, unknown>).from = s.stranger.address)) })],
      ["a funding transaction carrying value", "TX_MISMATCH", (o) => ({ ...o, fetch: tampering(/^\/api\/v1\/tasks$/, (d) => ((d.unsignedTx as Record<string, unknown>).value = "1")) })],
    ];
    for (const [what, code, options] of guarded) {
      it(`refuses ${what} (${code}) and sends nothing`, async function () {
        await nothingSent(async () => {
          const client = new MarketClient(options(base));
          const outcome = await client.postTask(task).then(
            (r) => r,
            (e: unknown) => e,
          );
          // A refusal before funding either throws or comes back as a failed row with nothing paid.
          const codeSeen = outcome instanceof ApiError ? outcome.code : (outcome as { status: string; error?: { code: string } }).error?.code;
          if (!(outcome instanceof ApiError)) expect((outcome as { status: string }).status).to.equal("failed");
          expect(codeSeen).to.equal(code);
        });
      });
    }

    it("refuses an evidence transaction that is not submitEvidence of the delivered output (TX_MISMATCH)", async function () {
      const agentOptions = await s.clientOptions(s.worker);
      const agent = new MarketClient(agentOptions);
      await agent.createAgent({ privateKey: agentOptions.executor.privateKey, supportedChains: ["arc"] });
      const posted = await new MarketClient(base).postTask(task);
      await s.sync();
      await agent.acceptTask(posted.taskHash!);
      const tampered = new MarketClient({
        ...agentOptions,
        fetch: tampering(/\/deliver$/, (d) => {
          const tx = d.unsignedTx as { data: string };
          tx.data = tx.data.slice(0, -2) + (tx.data.endsWith("00") ? "01" : "00");
        }),
      });
      const nonce = await hre.ethers.provider.getTransactionCount(s.worker.address);
      expect((await refusal(tampered.deliverResult(posted.taskHash!, "Bonjour, et bienvenue !"))).code).to.equal("TX_MISMATCH");
      expect(await hre.ethers.provider.getTransactionCount(s.worker.address)).to.equal(nonce);
    });
  });

  describe("createAgent", function () {
    it("refuses a key that is not the API key's wallet (OWNER_MISMATCH 409) and registers nothing", async function () {
      const client = new MarketClient(base);
      const error = await refusal(client.createAgent({ privateKey: (await s.clientOptions(s.stranger)).executor.privateKey, supportedChains: ["arc"] }));
      expect(error.code).to.equal("OWNER_MISMATCH");
      expect(error.status).to.equal(409);
      expect(await s.db.selectFrom("agents").selectAll().execute()).to.deep.equal([]);
    });

    it("without a key, generates one, registers its public key and returns it once", async function () {
      const client = new MarketClient(base);
      const { profile, privateKey } = await client.createAgent({ supportedChains: ["arc"], capabilities: ["translation"] });
      expect(privateKey).to.match(/^0x[0-9a-f]{64}$/);
      expect(profile.address).to.equal(s.poster.address);
      const { publicKeyFromPrivateKey } = await import("../../core/crypto");
      expect(profile.publicKey).to.equal(publicKeyFromPrivateKey(privateKey!));
    });
  });

  describe("postTasks row checks (INVALID_ROWS, nothing sent)", function () {
    const rows: Array<[string, PostTaskInput[], string]> = [
      ["reward and amount together", [{ instructions: "x", reward: "1", amountRaw: 1n }], "REWARD_AND_AMOUNT"],
      ["neither reward nor amount", [{ instructions: "x" }], "REWARD_REQUIRED"],
      ["a duration out of range", [{ instructions: "x", reward: "1", durationSeconds: 60 }], "DURATION_OUT_OF_RANGE"],
      ["a reward with 7 decimals", [{ instructions: "x", reward: "1.0000001" }], "AMOUNT_TOO_MANY_DECIMALS"],
      ["an unknown capability", [{ instructions: "x", reward: "1", capabilities: ["telepathy"] }], "UNKNOWN_CAPABILITY"],
      ["a bad target", [{ instructions: "x", reward: "1", targetExecutor: "0x1234" }], "INVALID_ADDRESS"],
      ["a zone over 128 characters", [{ instructions: "x", reward: "1", zone: "z".repeat(129) }], "ZONE_TOO_LONG"],
      ["agent verification in bulk", [{ instructions: "x", reward: "1", verificationMode: "agent", verifierAddress: "0x0000000000000000000000000000000000000001" }], "INVALID_VERIFICATION"],
      ["a catastrophic regex", [{ instructions: "x", reward: "1", verificationCriteria: { regex_pattern: "(a+)+$" } }], "CRITERIA_REGEX_UNSAFE"],
      [
        "the same public brief twice",
        [
          { instructions: "same", reward: "1", privacy: "public" },
          { instructions: "same", reward: "1", privacy: "public" },
        ],
        "DUPLICATE_BRIEF",
      ],
      ["more than 1,000 rows", Array.from({ length: 1001 }, (_, i) => ({ instructions: `row ${i}`, reward: "1" })), "TOO_MANY_ROWS"],
    ];
    for (const [what, input, code] of rows) {
      it(`refuses ${what} (${code})`, async function () {
        await nothingSent(async () => {
          const error = await refusal(new MarketClient(base).postTasks(input));
          expect(error.code).to.equal("INVALID_ROWS");
          expect(error.body.errors?.map((e) => e.code)).to.include(code);
        });
      });
    }

    it("refuses private rows no registered agent can open (INVALID_ROWS with NO_EXECUTORS)", async function () {
      await nothingSent(async () => {
        const error = await refusal(new MarketClient(base).postTasks([{ instructions: "secret", reward: "1", capabilities: ["translation"] }]));
        expect(error.code).to.equal("INVALID_ROWS");
        expect(error.body.errors).to.deep.equal([{ index: 0, column: "capabilities", code: "NO_EXECUTORS", message: "no agent with a public key and these capabilities is registered on the chain" }]);
      });
    });

    it("refuses a run above maxTotalRaw before spending (SPEND_LIMIT)", async function () {
      await nothingSent(async () => {
        const error = await refusal(new MarketClient(base).postTasks([task, { ...task, instructions: "second brief" }], { maxTotalRaw: 1_999_999n }));
        expect(error.code).to.equal("SPEND_LIMIT");
      });
    });
  });

  describe("postTasks runs", function () {
    it("approves once, funds one createTasks per chunk, and lists every row", async function () {
      await s.usdc.connect(s.poster).approve(s.escrowAddress, 0n);
      const inputs = Array.from({ length: 7 }, (_, i) => ({ instructions: `Chunked public brief ${i}`, amountRaw: 1_000n + BigInt(i), privacy: "public" as const }));
      const funded: string[] = [];
      const result = await new MarketClient(base).postTasks(inputs, { chunkSize: 3, onFunded: ({ txHash }) => void funded.push(txHash) });
      expect(result).to.deep.include({ posted: 7, unlisted: 0, failed: 0, skipped: 0, stopped: false, totalRaw: "7021" });
      expect(new Set(funded).size).to.equal(3);
      const approvals = await s.usdc.queryFilter(s.usdc.filters.Approval(s.poster.address, s.escrowAddress));
      expect(approvals.filter((a) => a.args.value === 7021n)).to.have.length(1);
      expect(await s.escrow.escrowed(s.token)).to.equal(7021n);
    });

    it("fails a row the API refuses before funding alone, with nothing paid for it", async function () {
      const client = new MarketClient(base);
      await client.postTask({ ...task, instructions: "already listed brief" });
      const before = await s.usdc.balanceOf(s.poster.address);
      const result = await client.postTasks([
        { ...task, instructions: "fresh brief one" },
        { ...task, instructions: "already listed brief" },
        { ...task, instructions: "fresh brief two" },
      ], { chunkSize: 1 });
      expect(result.results.map((r) => r.status)).to.deep.equal(["posted", "failed", "posted"]);
      expect(result.results[1]!.error?.code).to.equal("TASK_HASH_IN_USE");
      expect(await s.usdc.balanceOf(s.poster.address)).to.equal(before - 2_000_000n);
    });

    it("stops at a listing failure; the unlisted row carries indexParams that indexTask finishes without paying again", async function () {
      let failOnce = true;
      const flaky = (async (input: string | URL | Request, init?: RequestInit) => {
        if (failOnce && new URL(String(input)).pathname === "/api/v1/a2a/tasks/index") {
          failOnce = false;
          return new Response(JSON.stringify({ success: false, error: { code: "INTERNAL_ERROR", message: "down" } }), { status: 503 });
        }
        return fetch(input, init);
      }) as typeof fetch;
      const client = new MarketClient({ ...base, fetch: flaky });
      const result = await client.postTasks([
        { ...task, instructions: "listing fails for this one" },
        { ...task, instructions: "never reached" },
      ], { chunkSize: 1 });
      expect(result).to.deep.include({ posted: 0, unlisted: 1, skipped: 1, stopped: true });
      const unlisted = result.results[0]!;
      expect(unlisted.indexParams?.taskHash).to.equal(publicTaskHash("listing fails for this one"));
      const balance = await s.usdc.balanceOf(s.poster.address);
      expect(await client.indexTask(unlisted.indexParams!)).to.deep.equal({ taskHash: unlisted.taskHash, status: "listed" });
      expect(await s.usdc.balanceOf(s.poster.address)).to.equal(balance);
      await s.sync();
      expect((await client.getTask(unlisted.taskHash!)).state.status).to.equal("open");
    });

    it("cancelAndRefund gets back a task that was funded but never listed, straight from the escrow", async function () {
      const down = (async (input: string | URL | Request, init?: RequestInit) =>
        new URL(String(input)).pathname === "/api/v1/a2a/tasks/index"
          ? new Response(JSON.stringify({ success: false, error: { code: "INTERNAL_ERROR", message: "down" } }), { status: 503 })
          : fetch(input, init)) as typeof fetch;
      const before = await s.usdc.balanceOf(s.poster.address);
      const result = await new MarketClient({ ...base, fetch: down }).postTasks([{ ...task, instructions: "funded, never listed" }]);
      expect(result.unlisted).to.equal(1);
      expect(await s.usdc.balanceOf(s.poster.address)).to.equal(before - 1_000_000n);
      const refund = await new MarketClient(base).cancelAndRefund(result.results[0]!.taskHash!);
      expect(refund.outcome).to.equal("refund");
      expect(await s.usdc.balanceOf(s.poster.address)).to.equal(before);
      const error = await refusal(new MarketClient(await s.clientOptions(s.stranger)).cancelAndRefund(result.results[0]!.taskHash!));
      expect(error.code).to.equal("NOT_POSTER");
    });
  });
});
