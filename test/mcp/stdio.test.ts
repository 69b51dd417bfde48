/**
 * `market mcp` over stdio with the official MCP SDK client, against the product on loopback: the two-step spend
 * (quote, then confirm), a worker delivering, the poster polling the output, with exact balances; every quote refusal;
 * the row limits and NO_EXECUTORS; idempotent resume after the server is killed between funding and listing; and the
 * tools' argument names.
 */
import path from "node:path";
import { expect } from "chai";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import hre from "hardhat";
import { stackFixture, type Stack } from "../support/stack";
import { cliEnv, ensureCliBuilt, readJournalEntries, runCli, taskDir, until } from "../support/cli";
import { journalsUnder, stdioMcp, type Mcp } from "./helpers";
import { MarketClient } from "../../sdk/src/client";
import type { TaskView } from "../../sdk/src/client";

const seededStack = stackFixture(async (s) => {
  await s.registerAgent(s.worker, ["web_research"]);
  return { posterKey: await s.apiKeyFor(s.poster) };
});

const PUBLIC = { instructions: "List three rivers of Europe with their lengths.", amount: "1500000", privacy: "public" };
const PRIVATE = { instructions: "Summarise my meeting notes in five bullet points.", amount: "2000000", capabilities: ["web_research"] };

describe("mcp: market mcp over stdio", function () {
  this.timeout(180_000);
  let s: Stack;
  let posterKey: string;
  let stateDir: string;
  let env: NodeJS.ProcessEnv;
  let mcp: Mcp & { stderr(): string };

  const balances = async () => ({
    poster: await s.usdc.balanceOf(s.poster.address),
    worker: await s.usdc.balanceOf(s.worker.address),
    escrow: await s.usdc.balanceOf(s.escrowAddress),
  });

  before(ensureCliBuilt);
  beforeEach(async function () {
    ({
      stack: s,
      seeded: { posterKey },
    } = await seededStack());
    stateDir = taskDir({});
    env = await cliEnv(s, s.poster, { apiKey: posterKey, extra: { MARKET_MCP_STATE_DIR: stateDir } });
    mcp = await stdioMcp(env);
  });
  afterEach(async function () {
    await mcp?.close();
    await hre.network.provider.send("evm_setAutomine", [true]);
    await s.close();
  });

  it("tools/list: exactly the spec's tool and argument names, with the row limit and no target, zone or verification fields", async function () {
    const { tools } = await mcp.client.listTools();
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    expect(Object.keys(byName).sort()).to.deep.equal([
      "bid_on_task",
      "browse_services",
      "cancel_task",
      "claim_timeout",
      "get_service",
      "get_skill",
      "install_skill",
      "list_skills",
      "poll_task_result",
      "post_tasks",
      "remove_skill",
      "rent_service",
    ]);
    const post = byName.post_tasks!.inputSchema as {
      properties: Record<string, { items?: { properties: Record<string, unknown>; required: string[] }; maxItems?: number }>;
      required: string[];
    };
    expect(Object.keys(post.properties).sort()).to.deep.equal(["confirm", "idempotencyKey", "quoteId", "tasks"]);
    expect(post.properties.tasks!.maxItems).to.equal(200);
    expect(Object.keys(post.properties.tasks!.items!.properties).sort()).to.deep.equal(
      ["amount", "capabilities", "durationSeconds", "instructions", "privacy", "routingSummary"].sort(),
    );
    expect(post.properties.tasks!.items!.required.sort()).to.deep.equal(["amount", "instructions"]);
    for (const name of ["cancel_task", "claim_timeout"]) {
      expect(Object.keys((byName[name]!.inputSchema as { properties: object }).properties)).to.deep.equal(["taskHash"]);
    }
    const poll = byName.poll_task_result!.inputSchema as { properties: Record<string, { maximum?: number }>; required: string[] };
    expect(Object.keys(poll.properties).sort()).to.deep.equal(["taskHash", "waitSeconds"]);
    expect(poll.required).to.deep.equal(["taskHash"]);
    expect(poll.properties.waitSeconds!.maximum).to.equal(60);
    expect(Object.keys((byName.bid_on_task!.inputSchema as { properties: object }).properties).sort()).to.deep.equal(["message", "taskHash"]);
    // rent_service: the spec's arguments exactly; waitSeconds at most 60.
    const rent = byName.rent_service!.inputSchema as { properties: Record<string, { maximum?: number; enum?: string[] }>; required: string[] };
    expect(Object.keys(rent.properties).sort()).to.deep.equal(
      ["confirm", "idempotencyKey", "privacy", "prompt", "quoteId", "serviceId", "waitSeconds"].sort(),
    );
    expect(rent.required.sort()).to.deep.equal(["idempotencyKey", "prompt", "serviceId"]);
    expect(rent.properties.waitSeconds!.maximum).to.equal(60);
    expect(rent.properties.privacy!.enum).to.deep.equal(["public", "private"]);
    expect(Object.keys((byName.get_service!.inputSchema as { properties: object }).properties)).to.deep.equal(["serviceId"]);
    expect(Object.keys((byName.browse_services!.inputSchema as { properties: object }).properties)).to.deep.equal(["agent"]);
    for (const t of tools) expect(t.description!.length, t.name).to.be.above(80);
  });

  it("quote, confirm, listed, a worker delivers, poll_task_result shows the output; balances exact", async function () {
    const before = await balances();
    const args = { tasks: [PUBLIC, PRIVATE], idempotencyKey: "run-1" };
    const quote = await mcp.call("post_tasks", args);
    expect(quote.isError, quote.text).to.equal(false);
    expect(Object.keys(quote.data).sort()).to.deep.equal(
      [
        "alreadyPosted",
        "currency",
        "escrow",
        "payFrom",
        "privacy",
        "quoteId",
        "settlement",
        "tasks",
        "toPost",
        "transactions",
        "walletBalance",
      ].sort(),
    );
    expect(quote.data).to.deep.include({
      tasks: 2,
      alreadyPosted: 0,
      toPost: 2,
      escrow: "3500000",
      currency: "USDC",
      settlement: "arc",
      payFrom: s.poster.address,
      walletBalance: before.poster.toString(),
      privacy: { public: 1, private: 1 },
      // One batch funding, and an approval unless the allowance already covers the escrow.
      transactions: 1 + ((await s.usdc.allowance(s.poster.address, s.escrowAddress)) < 3_500_000n ? 1 : 0),
    });
    expect(quote.text).to.contain("Nothing was spent");
    expect(await balances()).to.deep.equal(before, "a quote spends nothing");

    const done = await mcp.call("post_tasks", { ...args, confirm: true, quoteId: quote.data.quoteId });
    expect(done.isError, done.text).to.equal(false);
    expect(done.data).to.deep.include({ tasks: 2, posted: 2, alreadyPosted: 0, unlisted: 0, failed: 0, notStarted: 0, escrowPaid: "3500000" });
    const results = done.data.results as Array<{ status: string; taskHash: string }>;
    const after = await balances();
    expect(before.poster - after.poster).to.equal(3_500_000n);
    expect(after.escrow - before.escrow).to.equal(3_500_000n);

    await s.sync();
    const { tasks } = (await s.call<{ tasks: TaskView[] }>("GET", "/api/v1/a2a/tasks/posted", { key: posterKey })).body.data;
    expect(tasks.map((t) => t.meta.taskHash).sort()).to.deep.equal(results.map((r) => r.taskHash).sort());
    const privateHash = results[1]!.taskHash;
    expect(tasks.find((t) => t.meta.taskHash === privateHash)!.meta.privacy).to.equal("private");

    // The poster waits (poll_task_result's waitSeconds, woken by the task's events) while the worker takes the private
    // task (its brief was wrapped to it), delivers, and is paid.
    const waitStarted = Date.now();
    const waiting = mcp.call("poll_task_result", { taskHash: privateHash, waitSeconds: 60 });
    const worker = new MarketClient(await s.clientOptions(s.worker));
    const assigned = await worker.acceptTask(privateHash);
    expect(await worker.openBrief(assigned)).to.equal(PRIVATE.instructions);
    const output =
      "- Budget approved for the new office.\n- Launch moved to May.\n- Hiring two engineers.\n- Weekly syncs on Monday.\n- Next review in June.";
    const finalized = await worker.deliverResult({ taskHash: privateHash, output });
    expect(finalized.status).to.equal("verified");
    const finalizedAt = Date.now();
    const waited = await waiting;
    expect(waited.isError, waited.text).to.equal(false);
    expect(waited.data).to.deep.include({ taskHash: privateHash, status: "verified", output });
    // Answered as the verdict was recorded, not at the end of the 60 s.
    expect(Date.now() - finalizedAt).to.be.below(3_000);
    expect(Date.now() - waitStarted).to.be.below(60_000);
    await s.sync();

    const polled = await mcp.call("poll_task_result", { taskHash: privateHash });
    expect(polled.isError, polled.text).to.equal(false);
    expect(polled.data).to.deep.include({ taskHash: privateHash, status: "verified", output, reward: "2000000" });
    expect(polled.text).to.contain("verified");
    const paid = await balances();
    expect(paid.worker - before.worker).to.equal(1_800_000n, "the reward less the 10% fee");
    expect(before.poster - paid.poster).to.equal(3_500_000n);
  });

  it("refuses a confirm without a quote, a reused quote, an expired quote and changed arguments, spending nothing", async function () {
    const args = { tasks: [PUBLIC], idempotencyKey: "quotes" };
    const start = await balances();

    const missing = await mcp.call("post_tasks", { ...args, confirm: true });
    expect(missing.code, missing.text).to.equal("QUOTE_REQUIRED");
    const unknown = await mcp.call("post_tasks", { ...args, confirm: true, quoteId: "q_nosuchquote" });
    expect(unknown.code, unknown.text).to.equal("QUOTE_REQUIRED");

    const quote = await mcp.call("post_tasks", args);
    const changed = await mcp.call("post_tasks", {
      tasks: [{ ...PUBLIC, amount: "1" }],
      idempotencyKey: "quotes",
      confirm: true,
      quoteId: quote.data.quoteId,
    });
    expect(changed.code, changed.text).to.equal("QUOTE_MISMATCH");
    expect(await balances()).to.deep.equal(start);

    s.advanceClock(10 * 60_000 + 1_000);
    const expired = await mcp.call("post_tasks", { ...args, confirm: true, quoteId: quote.data.quoteId });
    expect(expired.code, expired.text).to.equal("QUOTE_REQUIRED");
    expect(expired.text).to.contain("expired");
    expect(await balances()).to.deep.equal(start);

    const fresh = await mcp.call("post_tasks", args);
    const used = await mcp.call("post_tasks", { ...args, confirm: true, quoteId: fresh.data.quoteId });
    expect(used.isError, used.text).to.equal(false);
    const spent = await balances();
    expect(start.poster - spent.poster).to.equal(1_500_000n);
    const reused = await mcp.call("post_tasks", { ...args, confirm: true, quoteId: fresh.data.quoteId });
    expect(reused.code, reused.text).to.equal("QUOTE_REQUIRED");
    expect(await balances()).to.deep.equal(spent, "a reused quote spends nothing");

    // The key is used: another payload under it is refused; the same one reports what is posted.
    const other = await mcp.call("post_tasks", { tasks: [PRIVATE], idempotencyKey: "quotes" });
    expect(other.code, other.text).to.equal("IDEMPOTENCY_KEY_REUSED");
    const again = await mcp.call("post_tasks", args);
    expect(again.data).to.deep.include({ tasks: 1, alreadyPosted: 1, toPost: 0, escrow: "0", transactions: 0 });
  });

  it("refuses 201 tasks and bad rows (INVALID_ROWS), and a private task no agent can open (NO_EXECUTORS), before anything is sent", async function () {
    const start = await balances();
    const tasks = Array.from({ length: 201 }, (_, i) => ({
      instructions: `Public task number ${i}: name a colour.`,
      amount: "1000",
      privacy: "public",
    }));
    const tooMany = await mcp.call("post_tasks", { tasks, idempotencyKey: "many" });
    expect(tooMany.code, tooMany.text).to.equal("INVALID_ROWS");
    const twoHundred = await mcp.call("post_tasks", { tasks: tasks.slice(0, 200), idempotencyKey: "two-hundred" });
    expect(twoHundred.isError, twoHundred.text).to.equal(false);
    expect(twoHundred.data).to.deep.include({ tasks: 200, toPost: 200, escrow: "200000" });

    const bad = await mcp.call("post_tasks", { tasks: [PUBLIC, { instructions: "", amount: "0" }], idempotencyKey: "bad" });
    expect(bad.code, bad.text).to.equal("INVALID_ROWS");
    expect((bad.data.error as { errors: Array<{ index: number }> }).errors.every((e) => e.index === 1)).to.equal(true);

    const nobody = await mcp.call("post_tasks", { tasks: [{ ...PRIVATE, capabilities: ["translation"] }], idempotencyKey: "nobody" });
    expect(nobody.code, nobody.text).to.equal("NO_EXECUTORS");
    const extra = await mcp.call("post_tasks", { tasks: [{ ...PUBLIC, target: s.worker.address }], idempotencyKey: "target" });
    expect(extra.code, extra.text).to.equal("VALIDATION_FAILED");
    expect(await balances()).to.deep.equal(start);
  });

  it("killed between funding and listing, the same call with the same idempotencyKey lists the rows without paying again", async function () {
    await mcp.close();
    const start = await balances();
    const args = { tasks: [PUBLIC, PRIVATE], idempotencyKey: "resume" };
    const paused = await stdioMcp(env, { pauseAfter: { step: "funded", ms: 60_000 } });
    const quote = await paused.call("post_tasks", args);
    const confirming = paused.call("post_tasks", { ...args, confirm: true, quoteId: quote.data.quoteId });
    confirming.catch(() => undefined);
    await until(() => journalsUnder(stateDir).some((j) => readJournalEntries(j).some((e) => e.t === "funded")), "the funding", 60_000);
    const pid = paused.transport.pid;
    if (pid === null) throw new Error("market mcp is not running");
    process.kill(pid, "SIGKILL");
    await paused.close().catch(() => undefined);
    expect((await balances()).escrow - start.escrow).to.equal(3_500_000n, "paid, not listed");
    await s.sync();
    const listed = (await s.call<{ tasks: TaskView[] }>("GET", "/api/v1/a2a/tasks/posted", { key: posterKey })).body.data.tasks;
    expect(listed).to.have.length(0);

    mcp = await stdioMcp(env);
    const requote = await mcp.call("post_tasks", args);
    expect(requote.data).to.deep.include({ tasks: 2, alreadyPosted: 0, toPost: 0, escrow: "0", transactions: 0 });
    expect(requote.text).to.contain("2 paid earlier and only to be listed");
    const finished = await mcp.call("post_tasks", { ...args, confirm: true, quoteId: requote.data.quoteId });
    expect(finished.data).to.deep.include({ tasks: 2, posted: 2, escrowPaid: "0" });
    const end = await balances();
    expect(start.poster - end.poster).to.equal(3_500_000n, "paid once");
    expect(end.escrow - start.escrow).to.equal(3_500_000n);
    await s.sync();
    const now = (await s.call<{ tasks: TaskView[] }>("GET", "/api/v1/a2a/tasks/posted", { key: posterKey })).body.data.tasks;
    expect(now).to.have.length(2);

    const last = await mcp.call("post_tasks", args);
    expect(last.data).to.deep.include({ tasks: 2, alreadyPosted: 2, toPost: 0 });
  });

  it("market mcp --print-config: the official MCP client starts the printed config from a folder outside the repository", async function () {
    const outside = taskDir({});
    const printed = await runCli(["mcp", "--print-config", "--include-keys", "--state-dir", stateDir], { env, cwd: outside });
    expect(printed.status, printed.stderr).to.equal(0);
    const config = JSON.parse(printed.stdout) as { mcpServers: { market: { command: string; args: string[]; env: Record<string, string> } } };
    const server = config.mcpServers.market;
    expect(path.isAbsolute(server.command)).to.equal(true);
    expect(server.args.every((a) => a === "mcp" || path.isAbsolute(a))).to.equal(true);
    expect(server.env).to.deep.include({ MARKET_API_KEY: posterKey, MARKET_API_URL: env.MARKET_API_URL, MARKET_MCP_STATE_DIR: stateDir });
    // Without --include-keys the keys are placeholders.
    const masked = await runCli(["mcp", "--print-config"], { env, cwd: outside });
    expect(masked.stdout).to.not.contain(posterKey).and.not.contain(env.MARKET_PRIVATE_KEY!);

    // As an MCP client runs it: the config's command, arguments and variables only, in a folder outside the repository.
    const transport = new StdioClientTransport({ command: server.command, args: server.args, env: server.env, cwd: outside, stderr: "pipe" });
    const client = new Client({ name: "desktop-like", version: "1.0.0" });
    await client.connect(transport);
    try {
      expect(client.getServerVersion()).to.deep.include({ name: "market" });
      const quote = (await client.callTool({ name: "post_tasks", arguments: { tasks: [PUBLIC], idempotencyKey: "from-outside" } })) as {
        isError?: boolean;
        structuredContent?: { toPost?: number };
      };
      expect(quote.isError ?? false).to.equal(false);
      expect(quote.structuredContent?.toPost).to.equal(1);
    } finally {
      await client.close();
    }
  });

  it("cancel_task refunds an open task; claim_timeout before the deadline is refused with its code", async function () {
    const args = { tasks: [PUBLIC], idempotencyKey: "cancel" };
    const quote = await mcp.call("post_tasks", args);
    const done = await mcp.call("post_tasks", { ...args, confirm: true, quoteId: quote.data.quoteId });
    const taskHash = (done.data.results as Array<{ taskHash: string }>)[0]!.taskHash;
    await s.sync();
    const early = await mcp.call("claim_timeout", { taskHash });
    expect(early.isError).to.equal(true);
    expect(early.code, early.text).to.equal("DEADLINE_NOT_REACHED");
    const before = await balances();
    const cancelled = await mcp.call("cancel_task", { taskHash });
    expect(cancelled.isError, cancelled.text).to.equal(false);
    expect(cancelled.data).to.include({ taskHash, outcome: "refund" });
    expect((await balances()).poster - before.poster).to.equal(1_500_000n);
    const bad = await mcp.call("poll_task_result", { taskHash: "0x1234" });
    expect(bad.code).to.equal("VALIDATION_FAILED");
  });
});

describe("mcp: market mcp refuses a private key that is not the API key's wallet, and a wrong or revoked key", function () {
  this.timeout(60_000);
  const plain = stackFixture(async (s) => ({ posterKey: await s.apiKeyFor(s.poster) }));
  before(ensureCliBuilt);

  it("exits with OWNER_MISMATCH before serving anything", async function () {
    const { stack: s, seeded } = await plain();
    try {
      const workerEnv = await cliEnv(s, s.worker);
      const env = { ...workerEnv, MARKET_API_KEY: seeded.posterKey };
      const run = await runCli(["mcp"], { env, cwd: taskDir({}) });
      expect(run.status).to.equal(1);
      expect(run.stderr).to.contain("error OWNER_MISMATCH");
      expect(run.stdout).to.equal("", "nothing on the protocol channel");
    } finally {
      await s.close();
    }
  });

  it("exits with INVALID_TOKEN for a wrong or revoked API key, before serving anything", async function () {
    const { stack: s, seeded } = await plain();
    try {
      const env = await cliEnv(s, s.poster, { apiKey: seeded.posterKey });
      const wrong = await runCli(["mcp"], { env: { ...env, MARKET_API_KEY: `sk_${"0".repeat(43)}` }, cwd: taskDir({}) });
      expect(wrong.status).to.equal(1);
      expect(wrong.stderr).to.contain("error INVALID_TOKEN");
      expect(wrong.stdout).to.equal("");
      const revoked = await s.call("POST", "/api/v1/api-keys/revoke-all", { key: seeded.posterKey });
      expect(revoked.status, JSON.stringify(revoked.body)).to.equal(200);
      const run = await runCli(["mcp"], { env, cwd: taskDir({}) });
      expect(run.status).to.equal(1);
      expect(run.stderr).to.contain("error INVALID_TOKEN");
      expect(run.stdout).to.equal("", "nothing on the protocol channel");
    } finally {
      await s.close();
    }
  });
});
