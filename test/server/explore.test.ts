/**
 * GET /api/v1/tasks (issue 28, the web app's task browser): every listed task whatever its status, newest first, by
 * keyset cursor, filtered by status, chain, a required capability and a reward range; refusals of bad filters.
 */
import { expect } from "chai";
import { serverFixture, type TestServer } from "./harness";
import type { ExploreAnswer, SettlementTx } from "@market/core/api";

const seeded = serverFixture(async (s) => {
  const key = await s.apiKeyFor(s.poster);
  const post = async (brief: string, capabilities: string[], amount: bigint) =>
    (await s.post(s.poster, key, s.publicTask(brief, { requiredCapabilities: capabilities }), amount)).taskHash;
  const a = await post("Explore A: summarise the report", ["summarization"], 1_000_000n);
  const b = await post("Explore B: translate the letter", ["translation"], 5_000_000n);
  const c = await post("Explore C: anything at all", [], 12_000_000n);
  const d = await post("Explore D: cancelled before anyone took it", [], 2_000_000n);
  const cancel = await s.call<SettlementTx>("POST", `/api/v1/a2a/tasks/${d}/cancel`, { key });
  if (cancel.status !== 200) throw new Error(JSON.stringify(cancel.body));
  await s.sendAll(s.poster, [cancel.body.data.unsignedTx]);
  await s.sync();
  return { a, b, c, d };
});

describe("server: GET /api/v1/tasks, the task browser", function () {
  let s: TestServer;
  let t: { a: string; b: string; c: string; d: string };
  before(async function () {
    ({ server: s, seeded: t } = await seeded());
  });
  after(async function () {
    await s?.close();
  });

  const hashes = async (query: string) => {
    const answer = await s.call<ExploreAnswer>("GET", `/api/v1/tasks${query}`);
    expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
    return answer.body.data.tasks.map((task) => task.meta.taskHash);
  };

  it("lists every task, whatever its status, newest first, to anyone", async function () {
    expect(await hashes("")).to.deep.equal([t.d, t.c, t.b, t.a]);
    const answer = await s.call<ExploreAnswer>("GET", "/api/v1/tasks?status=cancelled");
    expect(answer.body.data.tasks.map((task) => [task.meta.taskHash, task.state.status])).to.deep.equal([[t.d, "cancelled"]]);
    expect(answer.body.data.tasks[0]!.state.resultData?.output).to.equal(undefined);
  });

  it("filters by status, chain, required capability and reward range", async function () {
    expect(await hashes("?status=open")).to.deep.equal([t.c, t.b, t.a]);
    expect(await hashes("?status=completed")).to.deep.equal([]);
    expect(await hashes("?chain=arc&capability=translation")).to.deep.equal([t.b]);
    expect(await hashes("?chain=base")).to.deep.equal([]);
    expect(await hashes("?minReward=5000000")).to.deep.equal([t.c, t.b]);
    expect(await hashes("?maxReward=4999999")).to.deep.equal([t.d, t.a]);
    expect(await hashes("?minReward=2000000&maxReward=12000000&status=open")).to.deep.equal([t.c, t.b]);
    expect(await hashes("?minReward=100000000")).to.deep.equal([]);
    expect(await hashes(`?worker=${s.worker.address}`)).to.deep.equal([]);
  });

  it("pages by cursor until the last page answers no cursor", async function () {
    const first = await s.call<ExploreAnswer>("GET", "/api/v1/tasks?limit=3");
    expect(first.body.data.tasks.map((x) => x.meta.taskHash)).to.deep.equal([t.d, t.c, t.b]);
    const cursor = first.body.data.nextCursor!;
    expect(cursor).to.match(/^[0-9]+_0x[0-9a-f]{64}$/);
    const second = await s.call<ExploreAnswer>("GET", `/api/v1/tasks?limit=3&cursor=${cursor}`);
    expect(second.body.data.tasks.map((x) => x.meta.taskHash)).to.deep.equal([t.a]);
    expect(second.body.data.nextCursor).to.equal(null);
  });

  it("refuses bad filters with VALIDATION_FAILED", async function () {
    for (const query of ["?status=lost", "?minReward=01", "?maxReward=-1", "?cursor=abc", "?limit=5000", "?colour=blue", "?worker=0xabc"]) {
      const answer = await s.call("GET", `/api/v1/tasks${query}`);
      expect(answer.status, query).to.equal(400);
      expect(answer.body.error.code, query).to.equal("VALIDATION_FAILED");
    }
  });
});
