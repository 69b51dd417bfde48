import { expect } from "chai";
import hre from "hardhat";
import { stackFixture, type Stack } from "../support/stack";
import { MarketClient, type AssignedTask, type MarketClientOptions } from "../../sdk/src/client";
import { asAddress, asTaskHash } from "@market/core/api";
import { ApiError } from "../../sdk/src/errors";
import { WorkerRuntime } from "../../sdk/src/runtime";
import { inspect } from "node:util";
import { createServer as createHttpServer } from "node:http";
import type { PostTaskInput } from "../../sdk/src/posting";
import { encryptBrief, privateTaskHash, publicKeyFromPrivateKey, publicTaskHash, resultHash, wrapBriefKey } from "@market/core/crypto";
import { escrowInterface, STATE_GAS_MARGIN } from "../../sdk/src/chain";

/** A fetch that lets a test rewrite the API's answer to one route (the service misbehaving). */
function tampering(path: RegExp, rewrite: (data: Record<string, unknown>) => void): typeof fetch {
  return async (input: string | URL | Request, init?: RequestInit) => {
    const response = await fetch(input, init);
    if (!path.test(new URL(String(input)).pathname)) return response;
    const body = (await response.json()) as { success: boolean; data: Record<string, unknown> };
    if (body.success) rewrite(body.data);
    return new Response(JSON.stringify(body), { status: response.status, headers: response.headers });
  };
}

/**
 * A JSON-RPC proxy on loopback to `upstream`: `intercept` sees every call (each call of a batch) and may answer a
 * single call itself (a result, not undefined); everything else is relayed as it is.
 */
async function relayRpc(
  upstream: string,
  intercept: (call: { id: number; method: string; params: unknown[] }) => unknown,
): Promise<{ url: string; close(): Promise<void> }> {
  const server = createHttpServer((request, response) => {
    let body = "";
    request.on("data", (chunk: Buffer) => (body += chunk.toString()));
    const relay = async () => {
      type Call = { id: number; method: string; params: unknown[] };
      const payload = JSON.parse(body) as Call | Call[];
      const answers = (Array.isArray(payload) ? payload : [payload]).map(intercept);
      response.setHeader("content-type", "application/json");
      if (!Array.isArray(payload) && answers[0] !== undefined) {
        response.end(JSON.stringify({ jsonrpc: "2.0", id: payload.id, result: answers[0] }));
        return;
      }
      const answer = await fetch(upstream, { method: "POST", headers: { "content-type": "application/json" }, body });
      response.end(await answer.text());
    };
    request.on("end", () => {
      relay().catch((error: unknown) => response.destroy(error as Error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  return {
    url: `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** A JSON-RPC proxy to `upstream` that answers every receipt lookup with null: transactions go through unseen. */
const receiptHidingRpc = (upstream: string) => relayRpc(upstream, (call) => (call.method === "eth_getTransactionReceipt" ? null : undefined));

/** A JSON-RPC proxy to `upstream` that shows `seen` every call it relays (each call of a batch). */
const countingRpc = (upstream: string, seen: (call: { method: string; params: unknown[] }) => void) =>
  relayRpc(upstream, (call) => {
    seen(call);
    return undefined;
  });

/** A fetch that answers the requests `fake` returns an answer for (`data` of a successful envelope); others pass to the API. */
function faking(fake: (method: string, path: string, body: Record<string, unknown> | undefined) => unknown): typeof fetch {
  return async (input: string | URL | Request, init?: RequestInit) => {
    const body = typeof init?.body === "string" ? (JSON.parse(init.body) as Record<string, unknown>) : undefined;
    const data = fake(init?.method ?? "GET", new URL(String(input)).pathname, body);
    if (data === undefined) return fetch(input, init);
    return new Response(JSON.stringify({ success: true, data }), { status: 200, headers: { "content-type": "application/json" } });
  };
}

async function refusal(promise: Promise<unknown>): Promise<ApiError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error, "expected a refusal").to.be.instanceOf(ApiError);
  return error as ApiError;
}

/** The poster's API key. */
const seededStack = stackFixture(async (s) => ({ posterKey: await s.apiKeyFor(s.poster) }));

describe("MarketClient", function () {
  this.timeout(60_000);
  let s: Stack;
  let base: MarketClientOptions & { executor: NonNullable<MarketClientOptions["executor"]> };
  const task: PostTaskInput = { instructions: "Translate a short greeting into French, please.", amountRaw: 1_000_000n, privacy: "public" };

  beforeEach(async function () {
    const { stack, seeded } = await seededStack();
    s = stack;
    base = await s.clientOptions(s.poster, seeded.posterKey);
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
      [
        "a funding transaction for another chain",
        "WRONG_CHAIN",
        (o) => ({ ...o, fetch: tampering(/^\/api\/v1\/tasks$/, (d) => ((d.unsignedTx as Record<string, unknown>).chainId = 1)) }),
      ],
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
      [
        "a funding transaction from another wallet",
        "TX_MISMATCH",
        (o) => ({ ...o, fetch: tampering(/^\/api\/v1\/tasks$/, (d) => ((d.unsignedTx as Record<string, unknown>).from = s.stranger.address)) }),
      ],
      [
        "a funding transaction carrying value",
        "TX_MISMATCH",
        (o) => ({ ...o, fetch: tampering(/^\/api\/v1\/tasks$/, (d) => ((d.unsignedTx as Record<string, unknown>).value = "1")) }),
      ],
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
      expect((await refusal(tampered.deliverResult({ taskHash: posted.taskHash!, output: "Bonjour, et bienvenue !" }))).code).to.equal("TX_MISMATCH");
      expect(await hre.ethers.provider.getTransactionCount(s.worker.address)).to.equal(nonce);
    });

    describe("a service that describes another task than the one asked for (TX_MISMATCH, nothing signed)", function () {
      const asked = `0x${"ab".repeat(32)}`;
      let other: string;
      let chainId: number;
      /** The API answers task `asked` with `other`'s hash, and builds each call for `other` (a consistent lie). */
      const lying = (o: typeof base) =>
        new MarketClient({
          ...o,
          fetch: faking((method, path) => {
            const tx = (data: string) => ({ chainId, from: s.poster.address, to: s.escrowAddress, data, value: "0" });
            if (method === "GET" && path === `/api/v1/tasks/${asked}`) {
              return { meta: { chain: "arc", taskHash: other }, state: { taskId: asked, status: "open", rounds: 0 } };
            }
            if (path === `/api/v1/a2a/tasks/${asked}/deliver`)
              return { round: 1, unsignedTx: tx(escrowInterface.encodeFunctionData("submitEvidence", [other, resultHash("the output")])) };
            if (path === `/api/v1/a2a/tasks/${asked}/verdict`)
              return { status: "verified", unsignedTx: tx(escrowInterface.encodeFunctionData("completeVerification", [other, true, 100])) };
            if (path === `/api/v1/a2a/tasks/${asked}/cancel`)
              return { outcome: "refund", unsignedTx: tx(escrowInterface.encodeFunctionData("cancelTask", [other])) };
            return undefined;
          }),
        });
      beforeEach(async function () {
        chainId = Number((await hre.ethers.provider.getNetwork()).chainId);
        other = (await new MarketClient(base).postTask({ ...task, instructions: "The poster's other task, still open." })).taskHash!;
        await s.sync();
      });

      it("cancelAndRefund (behind market cancel) and settle never cancel the other task", async function () {
        await nothingSent(async () => expect((await refusal(lying(base).cancelAndRefund(asked))).code).to.equal("TX_MISMATCH"));
        await nothingSent(async () =>
          expect((await refusal(lying(base).settle({ taskHash: asked, action: "cancel" }))).code).to.equal("TX_MISMATCH"),
        );
        expect((await new MarketClient(base).getTask(other)).state.status).to.equal("open");
      });

      it("deliverResult", async function () {
        await nothingSent(async () =>
          expect((await refusal(lying(base).deliverResult({ taskHash: asked, output: "the output" }))).code).to.equal("TX_MISMATCH"),
        );
      });

      it("reviewResult", async function () {
        await nothingSent(async () =>
          expect((await refusal(lying(base).reviewResult({ taskHash: asked, approve: true }))).code).to.equal("TX_MISMATCH"),
        );
      });

      it("signs for a task hash asked in another letter case", async function () {
        const client = new MarketClient(base);
        const outcome = await client.cancelAndRefund(other.toUpperCase().replace("0X", "0x"));
        expect(outcome.outcome).to.equal("refund");
      });
    });
  });

  describe("secrets", function () {
    it("printing or serialising a client or a runtime shows neither the private key nor the API key", async function () {
      const client = new MarketClient(base);
      await client.postTask(task); // the wallet is connected: its state is in the client too
      const runtime = new WorkerRuntime({
        apiKey: base.apiKey,
        privateKey: base.executor.privateKey,
        rpcUrls: base.executor.rpcUrls,
        executeTask: async () => ({ output: "x" }),
      });
      const secrets = [base.executor.privateKey.slice(2), base.apiKey];
      for (const shown of [
        inspect(client, { depth: Infinity, showHidden: true }),
        JSON.stringify(client),
        inspect(runtime, { depth: Infinity, showHidden: true }),
        JSON.stringify(runtime),
      ]) {
        for (const secret of secrets) expect(shown.toLowerCase()).not.to.include(secret.toLowerCase());
      }
    });
  });

  describe("createAgent", function () {
    it("refuses a key that is not the API key's wallet (OWNER_MISMATCH 409) and registers nothing", async function () {
      const client = new MarketClient(base);
      const error = await refusal(
        client.createAgent({ privateKey: (await s.clientOptions(s.stranger)).executor.privateKey, supportedChains: ["arc"] }),
      );
      expect(error.code).to.equal("OWNER_MISMATCH");
      expect(error.status).to.equal(409);
      expect(await s.db.selectFrom("agents").selectAll().execute()).to.deep.equal([]);
    });

    it("without a key, generates one, registers its public key and returns it once", async function () {
      const client = new MarketClient(base);
      const { profile, privateKey } = await client.createAgent({ supportedChains: ["arc"], capabilities: ["translation"] });
      expect(privateKey).to.match(/^0x[0-9a-f]{64}$/);
      expect(profile.address).to.equal(s.poster.address);
      const { publicKeyFromPrivateKey } = await import("@market/core/crypto");
      expect(profile.publicKey).to.equal(publicKeyFromPrivateKey(privateKey!));
    });
  });

  describe("postTasks row checks (INVALID_ROWS, nothing sent)", function () {
    const rows: Array<[string, PostTaskInput[], string]> = [
      ["reward and amount together", [{ instructions: "x", reward: "1", amountRaw: 1n }], "REWARD_AND_AMOUNT"],
      ["neither reward nor amount", [{ instructions: "x" }], "REWARD_REQUIRED"],
      ["a duration out of range", [{ instructions: "x", reward: "1", durationSeconds: 60 }], "DURATION_OUT_OF_RANGE"],
      ["a reward with 7 decimals", [{ instructions: "x", reward: "1.0000001" }], "AMOUNT_TOO_MANY_DECIMALS"],
      ["a malformed capability", [{ instructions: "x", reward: "1", capabilities: ["tele pathy"] }], "INVALID_CAPABILITY"],
      ["a bad target", [{ instructions: "x", reward: "1", targetExecutor: "0x1234" }], "INVALID_ADDRESS"],
      ["a zone over 128 characters", [{ instructions: "x", reward: "1", zone: "z".repeat(129) }], "ZONE_TOO_LONG"],
      [
        "agent verification in bulk",
        [{ instructions: "x", reward: "1", verificationMode: "agent", verifierAddress: "0x0000000000000000000000000000000000000001" }],
        "INVALID_VERIFICATION",
      ],
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
        expect(error.body.errors).to.deep.equal([
          {
            index: 0,
            column: "capabilities",
            code: "NO_EXECUTORS",
            message: "no agent with a public key and these capabilities is registered on the posting chain",
          },
        ]);
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
      const inputs = Array.from({ length: 7 }, (_, i) => ({
        instructions: `Chunked public brief ${i}`,
        amountRaw: 1_000n + BigInt(i),
        privacy: "public" as const,
      }));
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
      const result = await client.postTasks(
        [
          { ...task, instructions: "fresh brief one" },
          { ...task, instructions: "already listed brief" },
          { ...task, instructions: "fresh brief two" },
        ],
        { chunkSize: 1 },
      );
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
      const result = await client.postTasks(
        [
          { ...task, instructions: "listing fails for this one" },
          { ...task, instructions: "never reached" },
        ],
        { chunkSize: 1 },
      );
      expect(result).to.deep.include({ posted: 0, unlisted: 1, skipped: 1, stopped: true });
      const unlisted = result.results[0]!;
      expect(unlisted.indexParams?.taskHash).to.equal(publicTaskHash("listing fails for this one"));
      const balance = await s.usdc.balanceOf(s.poster.address);
      expect(await client.indexTask(unlisted.indexParams!)).to.deep.equal({ taskHash: unlisted.taskHash, status: "listed" });
      expect(await client.indexTask(unlisted.indexParams!)).to.deep.equal({ taskHash: unlisted.taskHash, status: "already_listed" });
      expect(await s.usdc.balanceOf(s.poster.address)).to.equal(balance);
      await s.sync();
      expect((await client.getTask(unlisted.taskHash!)).state.status).to.equal("open");
    });

    it("a listing that fails while the next funding is sent stops the run after that funding: it is listed, nothing more is funded", async function () {
      // The first chunk's listing is held until the second chunk's funding is mined, then refused: the second funding
      // was sent while the first listing ran (the pipeline), and the third must never be.
      let releaseListing!: () => void;
      const held = new Promise<void>((resolve) => (releaseListing = resolve));
      let listings = 0;
      const flaky = (async (input: string | URL | Request, init?: RequestInit) => {
        if (new URL(String(input)).pathname === "/api/v1/a2a/tasks/index" && ++listings === 1) {
          await held;
          return new Response(JSON.stringify({ success: false, error: { code: "INTERNAL_ERROR", message: "down" } }), { status: 503 });
        }
        return fetch(input, init);
      }) as typeof fetch;
      const before = await s.usdc.balanceOf(s.poster.address);
      const funded: string[] = [];
      const briefs = ["pipelined one, listing fails", "pipelined two, funded meanwhile", "pipelined three, never funded"];
      const result = await new MarketClient({ ...base, fetch: flaky }).postTasks(
        briefs.map((instructions) => ({ ...task, instructions })),
        {
          chunkSize: 1,
          onFunded: ({ txHash }) => {
            funded.push(txHash);
            if (funded.length === 2) releaseListing();
          },
        },
      );
      expect(result).to.deep.include({ posted: 1, unlisted: 1, failed: 0, skipped: 1, stopped: true });
      expect(result.results.map((r) => r.status)).to.deep.equal(["unlisted", "posted", "skipped"]);
      expect(result.results[0]!.error?.code).to.equal("INTERNAL_ERROR");
      expect(funded).to.have.length(2);
      expect(await s.usdc.balanceOf(s.poster.address)).to.equal(before - 2_000_000n);
      expect((await s.escrow.getTask(publicTaskHash(briefs[2]!))).poster).to.equal(hre.ethers.ZeroAddress);
    });

    it("signs each funding after the first with the gas of the one before (a quarter more, and the margin), running it once instead of estimating", async function () {
      const estimates: string[] = [];
      const rpc = await countingRpc(s.rpcUrl, (call) => {
        if (call.method === "eth_estimateGas") estimates.push(String((call.params[0] as { to?: string }).to).toLowerCase());
      });
      try {
        const inputs = Array.from({ length: 9 }, (_, i) => ({ ...task, instructions: `Gas brief ${i}`, amountRaw: 1_000n }));
        const funded: string[] = [];
        const options = { ...base, executor: { ...base.executor, rpcUrls: { arc: rpc.url } } };
        const result = await new MarketClient(options).postTasks(inputs, { chunkSize: 3, onFunded: ({ txHash }) => void funded.push(txHash) });
        expect(result).to.deep.include({ posted: 9, stopped: false });
        // The escrow's gas was estimated once, for the first funding.
        expect(estimates.filter((to) => to === s.escrowAddress.toLowerCase())).to.have.length(1);
        for (let i = 1; i < funded.length; i++) {
          const previous = await hre.ethers.provider.getTransactionReceipt(funded[i - 1]!);
          expect((await hre.ethers.provider.getTransaction(funded[i]!))!.gasLimit).to.equal((previous!.gasUsed * 5n) / 4n + STATE_GAS_MARGIN);
        }
      } finally {
        await rpc.close();
      }
    });

    it("ChainWallet.send with a gasLimit: signs with it (and the margin) once the call runs at it; estimates when too low; a refusal sends nothing", async function () {
      const wallet = await new MarketClient(base).wallet();
      const create = (brief: string) => ({
        to: s.escrowAddress,
        data: escrowInterface.encodeFunctionData("createTask", [publicTaskHash(brief), s.token, 1_000n, 86_400n, hre.ethers.ZeroAddress]),
      });
      const enough = await wallet.send(null, create("gas limit: enough"), { gasLimit: 400_000n });
      expect((await hre.ethers.provider.getTransaction(enough.hash))!.gasLimit).to.equal(400_000n + STATE_GAS_MARGIN);
      // Too little to run the call: estimated instead, and mined.
      const estimated = await wallet.send(null, create("gas limit: too little"), { gasLimit: 30_000n });
      expect(estimated.status).to.equal(1);
      expect((await hre.ethers.provider.getTransaction(estimated.hash))!.gasLimit > 30_000n).to.equal(true);
      // A hash funded already: the escrow's refusal, decoded, and nothing sent.
      await nothingSent(async () => {
        const error = await refusal(wallet.send(null, create("gas limit: enough"), { gasLimit: 400_000n }));
        expect(error.code).to.equal("TX_REVERTED");
        expect(error.body.revert).to.deep.equal({ name: "TaskHashUsed", args: [publicTaskHash("gas limit: enough")] });
      });
    });

    /** A fetch that answers the `nth` request (1-based) matching `method` and `path` with a refusal; others pass. */
    function failingNth(method: string, path: string, nth: number, status: number, code: string, details?: unknown[]): typeof fetch {
      let seen = 0;
      return async (input: string | URL | Request, init?: RequestInit) => {
        if ((init?.method ?? "GET") === method && new URL(String(input)).pathname === path && ++seen === nth) {
          return new Response(JSON.stringify({ success: false, error: { code, message: `${code} (test)`, ...(details ? { details } : {}) } }), {
            status,
          });
        }
        return fetch(input, init);
      };
    }

    it("a service failure after a funding stops the run and returns it (never throws away which rows were paid)", async function () {
      const before = await s.usdc.balanceOf(s.poster.address);
      const client = new MarketClient({ ...base, fetch: failingNth("POST", "/api/v1/tasks", 2, 503, "INTERNAL_ERROR") });
      const result = await client.postTasks(
        ["first brief, funded", "second brief, build fails", "third brief, never reached"].map((instructions) => ({ ...task, instructions })),
        { chunkSize: 1 },
      );
      expect(result).to.deep.include({ posted: 1, unlisted: 0, failed: 1, skipped: 1, stopped: true });
      expect(result.results.map((r) => r.status)).to.deep.equal(["posted", "failed", "skipped"]);
      expect(result.results[1]!.error?.code).to.equal("INTERNAL_ERROR");
      expect(await s.usdc.balanceOf(s.poster.address)).to.equal(before - 1_000_000n);
    });

    it("an upload failure while preparing a later chunk of private briefs stops the run and returns it", async function () {
      await s.registerAgent(s.worker, []);
      const before = await s.usdc.balanceOf(s.poster.address);
      const client = new MarketClient({ ...base, fetch: failingNth("POST", "/api/v1/storage/upload", 2, 503, "STORAGE_FAILED") });
      const result = await client.postTasks(
        ["private one", "private two", "private three"].map((instructions) => ({ instructions, amountRaw: 1_000_000n })),
        { chunkSize: 1 },
      );
      expect(result.results.map((r) => r.status)).to.deep.equal(["posted", "failed", "skipped"]);
      expect(result.results[1]!.error?.code).to.equal("STORAGE_FAILED");
      expect(result.stopped).to.equal(true);
      expect(await s.usdc.balanceOf(s.poster.address)).to.equal(before - 1_000_000n);
    });

    it("a private task hash is the client's own SHA-256 of the ciphertext, whatever rootHash the storage answers", async function () {
      await s.registerAgent(s.worker, []);
      const seen: { uploaded?: Buffer; built?: Record<string, unknown> } = {};
      const blobId = (async (input: string | URL | Request, init?: RequestInit) => {
        const path = new URL(String(input)).pathname;
        const body = typeof init?.body === "string" ? (JSON.parse(init.body) as Record<string, unknown>) : undefined;
        if (path === "/api/v1/storage/upload") {
          seen.uploaded = Buffer.from(String(body!.data), "base64");
          // A storage that names blobs by an ID of its own (the spec allows a blob ID as rootHash).
          return new Response(JSON.stringify({ success: true, data: { rootHash: "blob-7f3a", size: seen.uploaded.length } }), { status: 200 });
        }
        if (path === "/api/v1/tasks") seen.built = body;
        return fetch(input, init);
      }) as typeof fetch;
      await nothingSent(async () => {
        const result = await new MarketClient({ ...base, fetch: blobId }).postTask({
          instructions: "A private brief kept by ID.",
          amountRaw: 1_000_000n,
        });
        // This service cannot find the blob by that ID, so it refuses the build: the row fails, nothing paid.
        expect(result.status).to.equal("failed");
        expect(seen.built).to.deep.include({ taskHash: privateTaskHash(seen.uploaded!), rootHash: "blob-7f3a", privacy: "private" });
        expect(result.taskHash).to.equal(privateTaskHash(seen.uploaded!));
      });
    });

    it("refuses a private row whose upload answers another 64-hex rootHash than the ciphertext's SHA-256 (STORAGE_MISMATCH), nothing paid", async function () {
      await s.registerAgent(s.worker, []);
      const wrongHash = `0x${"11".repeat(32)}`;
      const lyingStorage = faking((method, path) => (path === "/api/v1/storage/upload" ? { rootHash: wrongHash, size: 1 } : undefined));
      await nothingSent(async () => {
        const result = await new MarketClient({ ...base, fetch: lyingStorage }).postTasks([
          { instructions: "A private brief.", amountRaw: 1_000_000n },
        ]);
        expect(result.results.map((r) => [r.status, r.error?.code])).to.deep.equal([["failed", "STORAGE_MISMATCH"]]);
        expect(result.results[0]!.error!.message).to.contain(wrongHash);
      });
    });

    it("a batch refusal that names no row fails the chunk and stops, instead of asking again forever", async function () {
      let batches = 0;
      const refusing = (async (input: string | URL | Request, init?: RequestInit) => {
        if (new URL(String(input)).pathname === "/api/v1/tasks/batch") {
          const answer =
            ++batches > 3 ? { code: "INTERNAL_ERROR", message: "asked again and again" } : { code: "INVALID_ROWS", message: "refused", details: [] };
          return new Response(JSON.stringify({ success: false, error: answer }), { status: batches > 3 ? 500 : 409 });
        }
        return fetch(input, init);
      }) as typeof fetch;
      await nothingSent(async () => {
        const result = await new MarketClient({ ...base, fetch: refusing }).postTasks([task, { ...task, instructions: "another public brief" }], {
          chunkSize: 2,
        });
        expect(result.results.map((r) => [r.status, r.error?.code])).to.deep.equal([
          ["failed", "INVALID_ROWS"],
          ["failed", "INVALID_ROWS"],
        ]);
        expect(result.stopped).to.equal(true);
        expect(batches).to.equal(1);
      });
    });

    it("reports a funding sent but never confirmed as unlisted (maybe paid), never as failed; indexTask finishes it", async function () {
      const rpc = await receiptHidingRpc(s.rpcUrl);
      try {
        const before = await s.usdc.balanceOf(s.poster.address);
        const blind = new MarketClient({ ...base, executor: { ...base.executor, rpcUrls: { arc: rpc.url }, confirmTimeoutMs: 500 } });
        const result = await blind.postTasks(
          [
            { ...task, instructions: "sent, receipt never seen" },
            { ...task, instructions: "not reached" },
          ],
          { chunkSize: 1 },
        );
        expect(result).to.deep.include({ posted: 0, unlisted: 1, failed: 0, skipped: 1, stopped: true });
        const row = result.results[0]!;
        expect(row.error?.code).to.equal("TX_UNCONFIRMED");
        expect(row.indexParams?.txHash).to.equal(row.txHash);
        // It was paid: the rerun must list it, not post it again.
        expect(await s.usdc.balanceOf(s.poster.address)).to.equal(before - 1_000_000n);
        expect((await new MarketClient(base).indexTask(row.indexParams!)).status).to.equal("listed");
        expect(await s.usdc.balanceOf(s.poster.address)).to.equal(before - 1_000_000n);
      } finally {
        await rpc.close();
      }
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
      // Neither listed nor ever funded: not found, rather than someone else's.
      expect((await refusal(new MarketClient(base).cancelAndRefund(hre.ethers.id("never funded")))).code).to.equal("TASK_NOT_FOUND");
    });
  });
});

describe("MarketClient.openBrief", function () {
  const worker = { privateKey: `0x${"42".repeat(32)}` };
  const sealed = (brief: string) => {
    const encrypted = encryptBrief(brief);
    return { ...encrypted, wrappedKey: wrapBriefKey(encrypted.key, publicKeyFromPrivateKey(worker.privateKey)) };
  };
  const funded = sealed("The brief the poster funded.");
  const assigned = (wrappedKey: string): AssignedTask => ({
    taskHash: asTaskHash(privateTaskHash(funded.ciphertext)),
    chain: "arc",
    escrowAddress: asAddress(`0x${"e".repeat(40)}`),
    worker: asAddress(`0x${"1".repeat(40)}`),
    status: "assigned",
    assignTx: null,
    deadline: 0,
    rounds: 0,
    brief: { privacy: "private", rootHash: "blob-1", wrappedKey },
    verification: { mode: "auto" },
  });
  /** A client whose service serves `ciphertext` as the brief's blob. */
  const serving = (ciphertext: Uint8Array) =>
    new MarketClient({
      apiKey: "sk_test",
      baseUrl: "http://127.0.0.1:9",
      escrows: {},
      executor: { privateKey: worker.privateKey, rpcUrls: {} },
      fetch: faking((method, path) => (path === "/api/v1/storage/blob-1" ? { data: Buffer.from(ciphertext).toString("base64") } : undefined)),
    });

  it("opens the brief whose SHA-256 is the task hash", async function () {
    expect(await serving(funded.ciphertext).openBrief(assigned(funded.wrappedKey))).to.equal("The brief the poster funded.");
  });

  it("refuses another brief than the one funded (BRIEF_MISMATCH), even one its key opens", async function () {
    const swapped = sealed("Another brief, swapped in by the service.");
    const error = await refusal(serving(swapped.ciphertext).openBrief(assigned(swapped.wrappedKey)));
    expect(error.code).to.equal("BRIEF_MISMATCH");
    expect(error.message).to.contain(privateTaskHash(funded.ciphertext));
  });
});

describe("MarketClient over HTTP", function () {
  it("never follows a redirect, so the API key is sent to the configured API only", async function () {
    const http = await import("node:http");
    const elsewhere: Array<string | undefined> = [];
    const listen = (handler: Parameters<typeof http.createServer>[1]) =>
      new Promise<import("node:http").Server>((resolve) => {
        const server = http.createServer(handler);
        server.listen(0, "127.0.0.1", () => resolve(server));
      });
    const portOf = (server: import("node:http").Server) => (server.address() as import("node:net").AddressInfo).port;
    const other = await listen((req, res) => {
      elsewhere.push(req.headers["x-api-key"] as string | undefined);
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ success: true, data: { addresses: [] } }));
    });
    const api = await listen((req, res) => res.writeHead(307, { location: `http://127.0.0.1:${portOf(other)}${req.url}` }).end());
    try {
      const client = new MarketClient({ apiKey: "sk_do_not_forward", baseUrl: `http://127.0.0.1:${portOf(api)}`, escrows: {} });
      const error = await refusal(client.whoami());
      expect(error.status).to.equal(307);
      expect(elsewhere).to.deep.equal([]);
    } finally {
      for (const server of [api, other]) await new Promise((resolve) => server.close(resolve));
    }
  });
});
