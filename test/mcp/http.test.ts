/**
 * The remote MCP endpoint (POST /mcp, Streamable HTTP) with the official MCP SDK client: the same tools with an `sk_`
 * key, refused without one; what needs a self-run wallet's signature answers USE_LOCAL_MCP and spends nothing; quotes
 * are shared with `market mcp`. And the quote store's routes: another wallet cannot use a quote, a used quote stays
 * used for a new store over the same database (a restart).
 */
import { expect } from "chai";
import { stackFixture, type Stack } from "../support/stack";
import { cliEnv, ensureCliBuilt, taskDir } from "../support/cli";
import { httpMcp, stdioMcp } from "./helpers";
import { createQuoteStore } from "../../server/mcp";
import { PUBLIC_URL } from "../server/harness";
import { MCP_SERVER_VERSION } from "../../sdk/src/mcp/tools";

const seededStack = stackFixture(async (s) => {
  const workerKey = await s.registerAgent(s.worker, ["web_research"]);
  await s.registerAgent(s.stranger, ["web_research"]);
  return { posterKey: await s.apiKeyFor(s.poster), workerKey };
});

const PUBLIC = { instructions: "Name three mountains of the Alps and their heights.", amount: "1250000", privacy: "public" };
/** A quote as the tools store it (McpQuote without its id). */
const QUOTE = {
  tasks: 1,
  alreadyPosted: 0,
  toPost: 1,
  escrow: "1250000",
  currency: "USDC",
  settlement: "arc",
  payFrom: "0x0000000000000000000000000000000000000001",
  walletBalance: "5000000",
  privacy: { public: 1, private: 0 },
  transactions: 2,
};
const INITIALIZE = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
};

describe("mcp: the remote /mcp endpoint", function () {
  this.timeout(120_000);
  let s: Stack;
  let posterKey: string;
  let workerKey: string;

  const balances = async () => ({ poster: await s.usdc.balanceOf(s.poster.address), escrow: await s.usdc.balanceOf(s.escrowAddress) });

  before(ensureCliBuilt);
  beforeEach(async function () {
    ({
      stack: s,
      seeded: { posterKey, workerKey },
    } = await seededStack());
  });
  afterEach(async function () {
    await s.close();
  });

  it("serves the same tools with an sk_ key; without one, with a wrong one or a session token: INVALID_TOKEN", async function () {
    const mcp = await httpMcp(s.apiUrl, posterKey);
    try {
      const { tools } = await mcp.client.listTools();
      expect(tools.map((t) => t.name).sort()).to.deep.equal([
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
    } finally {
      await mcp.close();
    }

    let refused: unknown;
    try {
      await httpMcp(s.apiUrl);
    } catch (error) {
      refused = error;
    }
    expect(String(refused)).to.match(/401|INVALID_TOKEN/);

    const attempts: Array<Record<string, string>> = [{}, { "x-api-key": "sk_wrong" }, { authorization: "Bearer not-a-session" }];
    for (const headers of attempts) {
      const answer = await s.call<unknown>("POST", "/mcp", { body: INITIALIZE, headers });
      expect(answer.status, JSON.stringify(headers)).to.equal(401);
      expect((answer.body as { error: { code: string } }).error.code).to.equal("INVALID_TOKEN");
    }
    const card = (await s.call("GET", "/.well-known/agent.json")).body as unknown as { market: { mcp: { available: boolean; url: string } } };
    expect(card.market.mcp).to.deep.include({ available: true, url: `${PUBLIC_URL}/mcp` });
  });

  it("GET and DELETE /mcp answer 405 (Allow: POST), as Streamable HTTP expects; stdio and remote servers report one version", async function () {
    for (const method of ["GET", "DELETE"] as const) {
      const answer = await s.call<unknown>(method, "/mcp", { key: posterKey, headers: { accept: "text/event-stream" } });
      expect(answer.status, method).to.equal(405);
      expect(answer.headers.allow).to.equal("POST");
      expect((answer.body as { error: { code: string } }).error.code).to.equal("METHOD_NOT_ALLOWED");
    }
    const remote = await httpMcp(s.apiUrl, posterKey);
    const local = await stdioMcp(await cliEnv(s, s.poster, { apiKey: posterKey }));
    try {
      expect(remote.client.getServerVersion()).to.deep.include({ name: "market", version: MCP_SERVER_VERSION });
      expect(local.client.getServerVersion()).to.deep.include({ name: "market", version: MCP_SERVER_VERSION });
    } finally {
      await remote.close();
      await local.close();
    }
  });

  it("quotes post_tasks from the service's view, refuses the confirm with USE_LOCAL_MCP, and market mcp confirms that same quote", async function () {
    const start = await balances();
    const remote = await httpMcp(s.apiUrl, posterKey);
    const args = { tasks: [PUBLIC], idempotencyKey: "shared" };
    let quoteId: string;
    try {
      const quote = await remote.call("post_tasks", args);
      expect(quote.isError, quote.text).to.equal(false);
      expect(quote.data).to.deep.include({
        tasks: 1,
        alreadyPosted: 0,
        toPost: 1,
        escrow: "1250000",
        payFrom: s.poster.address,
        walletBalance: start.poster.toString(),
        settlement: "arc",
      });
      quoteId = String(quote.data.quoteId);
      const confirm = await remote.call("post_tasks", { ...args, confirm: true, quoteId });
      expect(confirm.code, confirm.text).to.equal("USE_LOCAL_MCP");
      expect(confirm.text).to.contain("market mcp");
      expect(await balances()).to.deep.equal(start);
    } finally {
      await remote.close();
    }

    // The quote lives on the service: the local server redeems it (the remote refusal left it unused).
    const local = await stdioMcp(await cliEnv(s, s.poster, { apiKey: posterKey, extra: { MARKET_MCP_STATE_DIR: taskDir({}) } }));
    try {
      const done = await local.call("post_tasks", { ...args, confirm: true, quoteId });
      expect(done.isError, done.text).to.equal(false);
      expect(done.data).to.deep.include({ posted: 1, escrowPaid: "1250000" });
      expect(start.poster - (await balances()).poster).to.equal(1_250_000n);
    } finally {
      await local.close();
    }
  });

  it("polls a task (the poster sees the output), bids as a worker, and refuses cancel and claim with USE_LOCAL_MCP", async function () {
    const { fields } = await s.privateTask("Translate my letter into French, keep the tone formal.", [s.stranger], posterKey, {
      routingSummary: "A formal letter to translate",
    });
    const { taskHash } = await s.post(s.poster, posterKey, fields);

    const poster = await httpMcp(s.apiUrl, posterKey);
    const worker = await httpMcp(s.apiUrl, workerKey);
    try {
      const polled = await poster.call("poll_task_result", { taskHash });
      expect(polled.isError, polled.text).to.equal(false);
      expect(polled.data).to.deep.include({ taskHash, status: "open", reward: "5000000", privacy: "private" });
      // waitSeconds waits on the task's events (in-process here: server/events/watch.ts) and answers when time is up.
      const started = Date.now();
      const waited = await poster.call("poll_task_result", { taskHash, waitSeconds: 2 });
      expect(waited.isError, waited.text).to.equal(false);
      expect(waited.data).to.deep.include({ taskHash, status: "open" });
      expect(Date.now() - started).to.be.within(1_900, 10_000);
      const tooLong = await poster.call("poll_task_result", { taskHash, waitSeconds: 61 });
      expect(tooLong.code, tooLong.text).to.equal("VALIDATION_FAILED");

      const bid = await worker.call("bid_on_task", { taskHash, message: "I translate formal French daily." });
      expect(bid.isError, bid.text).to.equal(false);
      expect(bid.data).to.deep.include({ taskHash, agent: s.worker.address, wrapped: false });
      const ownBid = await poster.call("bid_on_task", { taskHash });
      expect(ownBid.isError).to.equal(true);
      expect(ownBid.code).to.be.oneOf(["OWN_TASK", "AGENT_NOT_REGISTERED"]);

      const before = await balances();
      for (const name of ["cancel_task", "claim_timeout"]) {
        const refused = await poster.call(name, { taskHash });
        expect(refused.code, `${name}: ${refused.text}`).to.equal("USE_LOCAL_MCP");
      }
      expect(await balances()).to.deep.equal(before);
      const missing = await poster.call("poll_task_result", { taskHash: `0x${"ab".repeat(32)}` });
      expect(missing.code).to.equal("TASK_NOT_FOUND");

      // A wait of 60 s ends as the task's cancellation is indexed (its event wakes it), not at the end of the 60 s.
      const waiting = poster.call("poll_task_result", { taskHash, waitSeconds: 60 });
      await new Promise((resolve) => setTimeout(resolve, 500));
      await (await s.escrow.connect(s.poster).cancelTask(taskHash)).wait();
      const cancelledAt = Date.now();
      const ended = await waiting;
      expect(ended.isError, ended.text).to.equal(false);
      expect(ended.data).to.deep.include({ taskHash, status: "cancelled" });
      expect(Date.now() - cancelledAt).to.be.below(4_000);
    } finally {
      await poster.close();
      await worker.close();
    }
  });

  it("quote routes: another wallet cannot use a quote (QUOTE_REQUIRED, left unused); a used quote stays used after a restart", async function () {
    const fingerprint = "ab".repeat(32);
    const created = await s.call<{ quoteId: string }>("POST", "/api/v1/mcp/quotes", {
      key: posterKey,
      body: { tool: "post_tasks", fingerprint, quote: QUOTE },
    });
    expect(created.status).to.equal(200);
    const { quoteId } = created.body.data;
    const redeem = (key: string, print = fingerprint) =>
      s.call<{ quoteId: string }>("POST", `/api/v1/mcp/quotes/${quoteId}/redeem`, { key, body: { tool: "post_tasks", fingerprint: print } });

    const foreign = await redeem(workerKey);
    expect([foreign.status, (foreign.body as unknown as { error: { code: string } }).error.code]).to.deep.equal([409, "QUOTE_REQUIRED"]);
    const unauthenticated = await s.call("POST", `/api/v1/mcp/quotes/${quoteId}/redeem`, { body: { tool: "post_tasks", fingerprint } });
    expect(unauthenticated.status).to.equal(401);
    const mismatch = await redeem(posterKey, "cd".repeat(32));
    expect((mismatch.body as unknown as { error: { code: string } }).error.code).to.equal("QUOTE_MISMATCH");
    const wrongTool = await s.call("POST", `/api/v1/mcp/quotes/${quoteId}/redeem`, { key: posterKey, body: { tool: "rent_service", fingerprint } });
    expect((wrongTool.body as { error: { code: string } }).error.code).to.equal("QUOTE_MISMATCH");

    const used = await redeem(posterKey);
    expect(used.status).to.equal(200);
    expect(used.body.data.quoteId).to.equal(quoteId);

    // A service restarted over the same database: the quote is still used.
    const restarted = createQuoteStore({ db: s.db, now: Date.now });
    let code: string | undefined;
    try {
      await restarted.redeem(s.poster.address, quoteId, "post_tasks", fingerprint);
    } catch (error) {
      code = (error as { code?: string }).code;
    }
    expect(code).to.equal("QUOTE_REQUIRED");
  });

  it("quote routes: a stored quote is the quote's fields only, and a wallet asks for at most 100 quotes per 10 minutes, used or not", async function () {
    const create = (quote: Record<string, unknown>, fingerprint = "ab".repeat(32)) =>
      s.call<{ quoteId: string }>("POST", "/api/v1/mcp/quotes", { key: posterKey, body: { tool: "post_tasks", fingerprint, quote } });
    const stored = async () => (await s.db.selectFrom("mcp_quotes").select("id").execute()).length;

    // Anything but the quote's own fields is refused: a quote row is never a free megabyte of storage.
    const padded = await create({ ...QUOTE, notes: "x".repeat(500_000) });
    expect([padded.status, (padded.body as { error: { code: string } }).error.code]).to.deep.equal([400, "VALIDATION_FAILED"]);
    expect(await stored()).to.equal(0);

    // Each quote is a row: using it at once does not make room for more.
    for (let i = 0; i < 100; i++) {
      const fingerprint = i.toString(16).padStart(64, "0");
      const created = await create(QUOTE, fingerprint);
      expect(created.status, `quote ${i}`).to.equal(200);
      const used = await s.call("POST", `/api/v1/mcp/quotes/${created.body.data.quoteId}/redeem`, {
        key: posterKey,
        body: { tool: "post_tasks", fingerprint },
      });
      expect(used.status, `redeem ${i}`).to.equal(200);
    }
    const refused = await create(QUOTE);
    expect([refused.status, (refused.body as { error: { code: string } }).error.code]).to.deep.equal([429, "RATE_LIMITED"]);
    expect(await stored()).to.equal(100);
    // Another wallet is not held back by this one.
    const other = await s.call("POST", "/api/v1/mcp/quotes", {
      key: workerKey,
      body: { tool: "post_tasks", fingerprint: "ab".repeat(32), quote: QUOTE },
    });
    expect(other.status).to.equal(200);
  });
});
