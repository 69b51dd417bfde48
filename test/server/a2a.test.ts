/**
 * `POST /a2a/v1`: JSON-RPC 2.0 in the legacy (`tasks/list`) and the A2A v1.0 (`ListTasks`) method names, its error
 * codes, batches and notifications. Public, and it never changes anything.
 */
import { expect } from "chai";
import { sql } from "kysely";
import { startTestServer, type TestServer } from "./harness";
import { MAX_BATCH } from "../../server/a2a";

interface RpcAnswer {
  jsonrpc: "2.0";
  id: string | number | null;
  result?: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- shapes differ per method; each test reads its own
  error?: { code: number; message: string; data?: Record<string, unknown> };
}

const LEGACY = { list: "tasks/list", get: "tasks/get", send: "message/send", cancel: "tasks/cancel" };
const V1 = { list: "ListTasks", get: "GetTask", send: "SendMessage", cancel: "CancelTask" };
const UNKNOWN_TASK = `0x${"ab".repeat(32)}`;

/** Rows per table: the whole stored state, to show a call changed nothing. */
async function rowCounts(s: TestServer): Promise<Record<string, number>> {
  const tables = await s.db.introspection.getTables();
  const counts: Record<string, number> = {};
  for (const table of tables) {
    const row = await sql<{ n: number }>`select count(*) as n from ${sql.table(table.name)}`.execute(s.db);
    counts[table.name] = Number(row.rows[0]!.n);
  }
  return counts;
}

describe("server: A2A JSON-RPC", function () {
  let s: TestServer;
  let open: string[];
  let researchTask: string;
  let pinnedTask: string;

  before(async function () {
    s = await startTestServer();
    const key = await s.apiKeyFor(s.poster);
    await s.registerAgent(s.worker, ["web_research"]);
    open = [];
    for (const brief of ["Write a limerick about escrow contracts.", "List five prime numbers above one hundred.", "Name three rivers in Europe."]) {
      open.push((await s.post(s.poster, key, s.publicTask(brief))).taskHash);
    }
    researchTask = (await s.post(s.poster, key, s.publicTask("Research the history of the abacus.", { requiredCapabilities: ["web_research"] })))
      .taskHash;
    pinnedTask = (await s.post(s.poster, key, s.publicTask("Only the worker may take this one.", { targetExecutor: s.worker.address }))).taskHash;
  });
  after(async function () {
    await s.close();
  });

  async function rpc(payload: unknown, headers: Record<string, string> = {}) {
    const response = await s.app.inject({
      method: "POST",
      url: "/a2a/v1",
      headers: { "content-type": "application/json", ...headers },
      payload: typeof payload === "string" ? payload : JSON.stringify(payload),
    });
    return { status: response.statusCode, body: response.body === "" ? undefined : response.json<RpcAnswer | RpcAnswer[]>() };
  }
  async function call(method: string, params?: unknown, id: string | number = 1): Promise<RpcAnswer> {
    const answer = await rpc({ jsonrpc: "2.0", id, method, ...(params === undefined ? {} : { params }) });
    expect(answer.status).to.equal(200);
    const body = answer.body as RpcAnswer;
    expect(body.jsonrpc).to.equal("2.0");
    expect(body.id).to.equal(id);
    return body;
  }

  for (const [dialect, names, v1] of [
    ["legacy", LEGACY, false],
    ["v1.0", V1, true],
  ] as const) {
    describe(`${dialect} names`, function () {
      it(`${names.list}: the open public tasks, with the same metadata as GET /api/v1/a2a/tasks`, async function () {
        const answer = await call(names.list);
        expect(answer.error).to.equal(undefined);
        const tasks = answer.result.tasks as Array<{
          id: string;
          contextId: string;
          status: { state: string };
          kind?: string;
          metadata: { market: unknown };
        }>;
        expect(tasks.map((t) => t.id)).to.have.members(open);
        for (const task of tasks) {
          expect(task.contextId).to.equal(task.id);
          expect(task.status.state).to.equal(v1 ? "TASK_STATE_SUBMITTED" : "submitted");
          expect(task.kind).to.equal(v1 ? undefined : "task");
        }
        if (v1) expect(answer.result).to.include({ totalSize: 3, pageSize: 3, nextPageToken: "" });
        else expect(answer.result.total).to.equal(3);

        const browse = await s.call<{ tasks: unknown[] }>("GET", "/api/v1/a2a/tasks");
        expect(tasks.map((t) => t.metadata.market)).to.deep.equal(browse.body.data.tasks);

        const withTag = await call(names.list, { capabilities: ["web_research"] });
        expect((withTag.result.tasks as Array<{ id: string }>).map((t) => t.id)).to.have.members([...open, researchTask]);
        const asText = await call(names.list, { capabilities: "web_research" });
        expect(asText.result.tasks).to.have.length(4);
        expect((answer.result.tasks as Array<{ id: string }>).map((t) => t.id)).to.not.include(pinnedTask);
      });

      it(`${names.get}: one task by id; -32001 for an unknown one; -32602 for a malformed one`, async function () {
        const answer = await call(names.get, { id: open[0] });
        expect(answer.result.id).to.equal(open[0]);
        expect(answer.result.metadata.market.state).to.include({ taskId: open[0], status: "open" });
        expect(answer.result.metadata.market.meta.privacy).to.equal("public");
        if (v1) {
          const byName = await call(names.get, { name: `tasks/${open[1]}` });
          expect(byName.result.id).to.equal(open[1]);
        }
        const unknown = await call(names.get, { id: UNKNOWN_TASK });
        expect(unknown.error?.code).to.equal(-32001);
        for (const params of [{}, { id: "0x1234" }, { id: 7 }, { id: `${open[0]}00` }]) {
          expect((await call(names.get, params)).error?.code, JSON.stringify(params)).to.equal(-32602);
        }
      });

      it(`${names.send}: acknowledges and changes nothing`, async function () {
        const before = await rowCounts(s);
        const message = v1
          ? { messageId: "m1", role: "ROLE_USER", parts: [{ text: "Please post a task for me and pay 5 USDC." }] }
          : { kind: "message", messageId: "m1", role: "user", parts: [{ kind: "text", text: "Please cancel every task." }] };
        const answer = await call(names.send, { message });
        expect(answer.error).to.equal(undefined);
        const reply = v1 ? answer.result.message : answer.result;
        expect(reply.role).to.equal(v1 ? "ROLE_AGENT" : "agent");
        expect(reply.parts[0].text).to.match(/acknowledges/);
        expect(await rowCounts(s)).to.deep.equal(before);
        expect(Object.values(before).reduce((a, b) => a + b, 0)).to.be.above(0);
        expect((await call(names.send, {})).error?.code).to.equal(-32602);
      });

      it(`${names.cancel}: refused with -32004 (cancel on chain), -32001 for an unknown task`, async function () {
        const before = await rowCounts(s);
        const answer = await call(names.cancel, { id: open[0] });
        expect(answer.error?.code).to.equal(-32004);
        expect(answer.error?.data).to.deep.equal({ id: open[0], status: "open" });
        expect((await call(names.cancel, { id: UNKNOWN_TASK })).error?.code).to.equal(-32001);
        expect(await rowCounts(s)).to.deep.equal(before);
        const still = await call(names.get, { id: open[0] });
        expect(still.result.metadata.market.state.status).to.equal("open");
      });
    });
  }

  describe("JSON-RPC errors", function () {
    it("-32700 for a body that is not JSON (id null)", async function () {
      for (const payload of ["{", "not json", '{"jsonrpc":"2.0",}', ""]) {
        const answer = await rpc(payload);
        expect(answer.status).to.equal(200);
        expect(answer.body).to.deep.equal({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } });
      }
    });

    it("-32600 for requests that are not JSON-RPC 2.0", async function () {
      const invalid: unknown[] = [
        { id: 1, method: "tasks/list" },
        { jsonrpc: "1.0", id: 1, method: "tasks/list" },
        { jsonrpc: "2.0", id: 1 },
        { jsonrpc: "2.0", id: 1, method: 42 },
        { jsonrpc: "2.0", id: { a: 1 }, method: "tasks/list" },
        { jsonrpc: "2.0", id: [1], method: "tasks/list" },
        [],
        null,
        42,
        '"tasks/list"', // a JSON string (rpc() sends strings as they are)
      ];
      for (const payload of invalid) {
        const answer = await rpc(payload);
        expect(answer.status).to.equal(200);
        const body = answer.body as RpcAnswer;
        expect(body.error?.code, JSON.stringify(payload)).to.equal(-32600);
      }
      // The id is echoed when it is usable.
      expect(((await rpc({ jsonrpc: "1.0", id: 9, method: "tasks/list" })).body as RpcAnswer).id).to.equal(9);
    });

    it("-32601 for unknown methods, including names of Object's own properties", async function () {
      for (const method of [
        "tasks/delete",
        "tasks/List",
        "listtasks",
        "",
        "constructor",
        "toString",
        "__proto__",
        "hasOwnProperty",
        "tasks/resubscribe",
      ]) {
        const answer = await call(method);
        expect(answer.error?.code, method).to.equal(-32601);
      }
    });

    it("-32602 for params that are not an object, or bad capability lists", async function () {
      for (const params of [[], "x", 5, null, true]) {
        expect((await call("tasks/list", params)).error?.code, JSON.stringify(params)).to.equal(-32602);
      }
      expect((await call("tasks/list", { capabilities: ["tele portation"] })).error?.code).to.equal(-32602);
      expect((await call("tasks/list", { capabilities: [1, 2] })).error?.code).to.equal(-32602);
    });
  });

  describe("batches and notifications", function () {
    it("answers a batch with an array, in order, leaving out notifications", async function () {
      const answer = await rpc([
        { jsonrpc: "2.0", id: "a", method: "tasks/get", params: { id: open[0] } },
        { jsonrpc: "2.0", method: "tasks/list" },
        { jsonrpc: "2.0", id: "b", method: "GetTask", params: { id: UNKNOWN_TASK } },
        { jsonrpc: "2.0", id: "c", method: "nope" },
        1,
        { jsonrpc: "2.0", id: 4, method: "ListTasks" },
      ]);
      expect(answer.status).to.equal(200);
      const answers = answer.body as RpcAnswer[];
      expect(answers).to.be.an("array");
      expect(answers.map((a) => a.id)).to.deep.equal(["a", "b", "c", null, 4]);
      expect(answers[0]!.result.id).to.equal(open[0]);
      expect(answers[1]!.error?.code).to.equal(-32001);
      expect(answers[2]!.error?.code).to.equal(-32601);
      expect(answers[3]!.error?.code).to.equal(-32600);
      expect(answers[4]!.result.tasks).to.have.length(3);
    });

    it("gives no answer to notifications, alone or in an all-notification batch (204)", async function () {
      const before = await rowCounts(s);
      for (const payload of [
        { jsonrpc: "2.0", method: "tasks/list" },
        { jsonrpc: "2.0", method: "message/send", params: { message: { role: "user", parts: [] } } },
        { jsonrpc: "2.0", method: "tasks/cancel", params: { id: open[0] } },
        { jsonrpc: "2.0", method: "no/such/method" },
        { jsonrpc: "2.0", method: "tasks/get", params: { id: "bad" } },
        { jsonrpc: "2.0", method: "tasks/get", params: [1] },
        [{ jsonrpc: "2.0", method: "tasks/get", params: 5 }],
        [
          { jsonrpc: "2.0", method: "tasks/list" },
          { jsonrpc: "2.0", method: "GetTask", params: { id: open[0] } },
        ],
      ]) {
        const answer = await rpc(payload);
        expect(answer.status, JSON.stringify(payload)).to.equal(204);
        expect(answer.body).to.equal(undefined);
      }
      expect(await rowCounts(s)).to.deep.equal(before);
    });

    it(`-32600 for a batch of more than ${MAX_BATCH} requests, answering none of them (one request buys bounded work)`, async function () {
      const request = (id: number) => ({ jsonrpc: "2.0", id, method: "tasks/list" });
      const full = await rpc(Array.from({ length: MAX_BATCH }, (_, i) => request(i)));
      expect(full.body).to.have.length(MAX_BATCH);
      const over = await rpc(Array.from({ length: MAX_BATCH + 1 }, (_, i) => request(i)));
      expect(over.status).to.equal(200);
      expect(over.body).to.deep.include({ jsonrpc: "2.0", id: null });
      expect((over.body as RpcAnswer).error?.code).to.equal(-32600);
    });

    it("a null id is a request, not a notification", async function () {
      const answer = await rpc({ jsonrpc: "2.0", id: null, method: "tasks/list" });
      expect(answer.status).to.equal(200);
      expect((answer.body as RpcAnswer).id).to.equal(null);
      expect((answer.body as RpcAnswer).result.tasks).to.have.length(3);
    });
  });

  it("needs no credentials, and ignores none: a wrong key is not used for anything", async function () {
    const answer = await rpc({ jsonrpc: "2.0", id: 1, method: "tasks/list" }, { "x-api-key": "sk_wrong" });
    expect(answer.status).to.equal(200);
    expect((answer.body as RpcAnswer).result.tasks).to.have.length(3);
  });
});
