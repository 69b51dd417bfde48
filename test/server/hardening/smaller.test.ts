/**
 * The smaller findings of the security review (docs/security.md, issue 14 item 12): the browse caches are bounded, money
 * and poster are read from the escrow rather than the listing's copy, and a lone surrogate in a brief is refused instead
 * of hashing alike U+FFFD.
 */
import { expect } from "chai";
import hre from "hardhat";
import { startTestServer, type TestServer } from "../harness";
import { expectError, expectOk } from "../expect";
import { brief } from "../lifecycle/helpers";
import { createTaskQueries, MAX_CACHED_TOTALS } from "../../../server/tasks/queries";
import { createLru } from "../../../server/http/lru";
import { publicTaskHash } from "@market/core/crypto";
import { checkRows } from "../../../sdk/src/posting";
import type { TaskView } from "@market/core/api";

describe("hardening: smaller findings", function () {
  let s: TestServer | undefined;
  afterEach(async function () {
    await s?.close();
    s = undefined;
  });

  it("an LRU keeps at most its bound, forgetting the least recently used first", function () {
    const lru = createLru<string, number>(2);
    lru.set("a", 1);
    lru.set("b", 2);
    expect(lru.get("a")).to.equal(1);
    lru.set("c", 3);
    expect([lru.get("a"), lru.get("b"), lru.get("c"), lru.size]).to.deep.equal([1, undefined, 3, 2]);
  });

  it("browse totals stay bounded however many capability sets callers ask for", async function () {
    s = await startTestServer();
    const posterKey = await s.apiKeyFor(s.poster);
    await s.post(s.poster, posterKey, s.publicTask(brief()));
    expect(MAX_CACHED_TOTALS).to.equal(1_000);
    const queries = createTaskQueries({ db: s.db, now: Date.now, maxCached: { pages: 40, totals: 50 } });
    // A page of one is full, so each distinct set counts its total (and keeps it).
    for (let i = 0; i < 120; i++) {
      const page = await queries.browse({ capabilities: [`tag_${i}`], limit: 1 });
      expect(page.total).to.equal(1);
    }
    const cached = queries.cached();
    expect(cached.totals).to.equal(50);
    // Pages are kept on both databases (SQLite's data_version, PostgreSQL's snapshot tell when they are stale).
    expect(cached.pages).to.equal(40);
  });

  it("a task view shows the poster and amount the escrow holds, not the listing's copy (a reorg funded the hash otherwise)", async function () {
    s = await startTestServer();
    const server = s;
    const posterKey = await server.apiKeyFor(server.poster);
    const text = brief();
    const fork = (await hre.network.provider.send("evm_snapshot", [])) as string;
    const { taskHash } = await server.post(server.poster, posterKey, server.publicTask(text), 5_000_000n);
    const listed = expectOk(await server.call<TaskView>("GET", `/api/v1/tasks/${taskHash}`));
    expect(listed.meta.reward.amount).to.equal("5000000");
    expect(listed.meta.poster).to.equal(server.poster.address);

    // The funding is reorganised away; on the new branch a stranger funds the same public hash with 1 raw unit.
    await hre.network.provider.send("evm_revert", [fork]);
    await server.usdc.mint(server.stranger.address, 1n);
    await server.usdc.connect(server.stranger).approve(server.escrowAddress, 1n);
    await server.escrow.connect(server.stranger).createTask(taskHash, server.usdc, 1n, 86_400, hre.ethers.ZeroAddress);
    for (let i = 0; i < 5; i++) await hre.network.provider.send("evm_mine", []);
    await server.sync();
    const row = await server.db.selectFrom("escrow_tasks").select(["poster", "amount"]).where("task_hash", "=", taskHash).executeTakeFirstOrThrow();
    expect(row).to.deep.equal({ poster: server.stranger.address, amount: "1" });

    const shown = expectOk(await server.call<TaskView>("GET", `/api/v1/tasks/${taskHash}`));
    expect(shown.meta.reward.amount).to.equal("1");
    expect(shown.meta.poster).to.equal(server.stranger.address);
    const browsed = expectOk(await server.call<{ tasks: TaskView[] }>("GET", "/api/v1/a2a/tasks"));
    expect(browsed.tasks.find((t) => t.state.taskId === taskHash)?.meta.reward.amount).to.equal("1");
    // The listing's poster no longer sees it among its posted tasks: the escrow says someone else funded it.
    const posted = expectOk(await server.call<{ tasks: TaskView[] }>("GET", "/api/v1/a2a/tasks/posted", { key: posterKey }));
    expect(posted.tasks.map((t) => t.state.taskId)).to.not.include(taskHash);
  });

  it("a lone surrogate in a brief is refused (LONE_SURROGATE), where it would have hashed as U+FFFD", async function () {
    s = await startTestServer();
    const posterKey = await s.apiKeyFor(s.poster);
    const lone = `${brief()} \ud800`;
    const replaced = lone.replace("\ud800", "\ufffd");
    // The collision being closed: UTF-8 encodes the lone half as U+FFFD.
    expect(publicTaskHash(lone)).to.equal(publicTaskHash(replaced));

    const refused = await s.call("POST", "/api/v1/tasks", {
      key: posterKey,
      body: { ...s.publicTask(lone), amount: "5000000", duration: 86_400 },
    });
    expectError(refused, "LONE_SURROGATE", 400);
    expect(refused.body.error.details?.[0]).to.deep.include({ field: "body.publicBrief" });
    // A lone low half, and in any field, the same.
    expectError(
      await s.call("POST", "/api/v1/tasks", {
        key: posterKey,
        body: { ...s.publicTask(brief()), routingSummary: "summary \udc00", amount: "5000000", duration: 86_400 },
      }),
      "LONE_SURROGATE",
      400,
    );
    // A well-formed pair (an emoji) is text like any other.
    const emoji = `${brief()} \ud83d\ude00`;
    expectOk(await s.call("POST", "/api/v1/tasks", { key: posterKey, body: { ...s.publicTask(emoji), amount: "5000000", duration: 86_400 } }));

    // Clients refuse the row before anything is sent.
    let caught: { code?: string; body?: { errors?: Array<Record<string, unknown>> } } | undefined;
    try {
      checkRows([{ instructions: lone, reward: "1", privacy: "public" }], { allowAgentMode: false });
    } catch (error) {
      caught = error as typeof caught;
    }
    expect(caught?.code).to.equal("INVALID_ROWS");
    expect(caught?.body?.errors?.[0]).to.deep.include({ index: 0, column: "instructions", code: "LONE_SURROGATE" });
  });
});
