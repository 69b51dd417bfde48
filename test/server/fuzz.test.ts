/**
 * Property: whatever reaches any route the app registers (malformed bodies, wrong types, huge strings, deep nesting,
 * unicode, prototype keys, random query strings and credentials), the answer is never a 5xx, an error is always the
 * JSON envelope with a code of the table at that code's status (a JSON-RPC answer on /a2a/v1), and a refused request
 * changes no stored row.
 */
import { createHash } from "node:crypto";
import { expect } from "chai";
import fc from "fast-check";
import { Wallet } from "ethers";
import { sql } from "kysely";
import { startTestServer, privateKeyOf, type TestServer } from "./harness";
import { openApiPath, pathParams, registeredRoutes, type RegisteredRoute } from "./registered-routes";
import { ERROR_CODES } from "@market/core/errors";
import { CAPABILITY_TAGS } from "@market/core/capabilities";
import { publicKeyFromPrivateKey } from "@market/core/crypto";

/** The only 5xx a route may answer, and only when a chain or the indexer really is down (not here). */
const ALLOWED_5XX = new Set(["CHAIN_UNAVAILABLE", "NOT_READY"]);
const RUNS = Number(process.env.FUZZ_RUNS ?? 3000);

type Method = "GET" | "POST" | "DELETE" | "PATCH" | "PUT";
interface FuzzRequest {
  route: RegisteredRoute;
  url: string;
  headers: Record<string, string>;
  payload?: string | Buffer;
}

/** SHA-256 of every stored row, table by table, except columns that reads may legitimately touch. */
async function stateHash(s: TestServer, tables: string[]): Promise<Record<string, string>> {
  const hashes: Record<string, string> = {};
  for (const table of tables) {
    const { rows } = await sql<Record<string, unknown>>`select * from ${sql.table(table)}`.execute(s.db);
    const lines = rows
      .map((row) => {
        if (table === "api_keys") delete row.last_used_at;
        return JSON.stringify(row);
      })
      .sort();
    hashes[table] = createHash("sha256").update(lines.join("\n")).digest("hex");
  }
  return hashes;
}

/** Field and query names a route documents, so generated input gets past "unknown field" into the handlers. */
function documentedNames(doc: OpenApiDoc, route: RegisteredRoute): { body: string[]; query: string[] } {
  const operation = doc.paths[openApiPath(route.path)]?.[route.method.toLowerCase()];
  const body = new Set<string>();
  const walk = (schema: unknown, depth: number) => {
    if (!schema || typeof schema !== "object" || depth > 4) return;
    const node = schema as Record<string, unknown>;
    for (const name of Object.keys((node.properties as object | undefined) ?? {})) body.add(name);
    for (const key of ["properties", "anyOf", "oneOf", "allOf", "items"]) {
      const child = node[key];
      if (Array.isArray(child)) child.forEach((c) => walk(c, depth + 1));
      else if (child && typeof child === "object") Object.values(key === "properties" ? child : { child }).forEach((c) => walk(c, depth + 1));
    }
  };
  walk(operation?.requestBody?.content?.["application/json"]?.schema, 0);
  const query = (operation?.parameters ?? []).filter((p) => p.in === "query").map((p) => p.name);
  return { body: [...body], query };
}

interface OpenApiDoc {
  paths: Record<
    string,
    Record<string, { requestBody?: { content?: Record<string, { schema?: unknown }> }; parameters?: Array<{ in: string; name: string }> }>
  >;
}

describe("server: fuzzing every route", function () {
  this.timeout(120_000);
  let s: TestServer;
  let routes: RegisteredRoute[];
  let doc: OpenApiDoc;
  let key: string;
  let taskHash: string;
  let tables: string[];

  before(async function () {
    s = await startTestServer();
    await s.registerAgent(s.worker, ["web_research"]);
    key = await s.apiKeyFor(s.poster);
    taskHash = (await s.post(s.poster, key, s.publicTask("Fuzzing target: describe a sunset in one sentence."))).taskHash;
    routes = registeredRoutes(s.app);
    tables = (await s.db.introspection.getTables()).map((t) => t.name);
    doc = (await s.app.inject({ method: "GET", url: "/openapi.json" })).json<OpenApiDoc>();
  });
  after(async function () {
    await s?.close();
  });

  // ---- generators

  const printable = (max: number) =>
    fc
      .array(fc.oneof(fc.integer({ min: 0x20, max: 0x7e }), fc.integer({ min: 0xa0, max: 0xff })), { maxLength: max })
      .map((codes) => String.fromCharCode(...codes));
  const unicode = fc.string({ unit: "grapheme", maxLength: 40 });
  const huge = fc.integer({ min: 1_000, max: 200_000 }).map((n) => "\u00e9\u4e2d\u{1F600}x".repeat(Math.ceil(n / 4)));

  /** Values that look right to a schema: addresses, hashes, tags, amounts, and their near misses. */
  let pool: unknown[] | undefined;
  const plausible = () => fc.constantFrom<unknown>(...(pool ??= plausibleValues()));
  const plausibleValues = (): unknown[] => [
    s.worker.address,
    s.poster.address,
    s.worker.address.toLowerCase(),
    `0x${s.worker.address.slice(2).toUpperCase()}`,
    Wallet.createRandom().address,
    "0xAbCdef0000000000000000000000000000000001", // bad checksum
    taskHash,
    `0x${"00".repeat(32)}`,
    `0x${"ab".repeat(32)}`,
    "0x",
    "0x1234",
    ...CAPABILITY_TAGS.slice(0, 4),
    ["web_research"],
    ["web_research", "teleportation"],
    "web_research,translation",
    "arc",
    "base",
    "0g",
    "solana",
    "1000000",
    "0",
    "-1",
    "1e6",
    "1.5",
    (2n ** 256n).toString(),
    3600,
    "86400",
    1e12,
    -1,
    0.5,
    "auto",
    "manual",
    "agent",
    "oracle",
    "public",
    "private",
    { min_length: 10 },
    { regex_pattern: "(a+)+$" },
    "aGVsbG8=",
    "",
    publicKeyFromPrivateKey(privateKeyOf(s.worker)),
    `04${"00".repeat(64)}`,
    key,
    "sk_" + "A".repeat(43),
    "1",
    "999999999999",
    true,
    null,
    [],
    {},
  ];

  const value = () =>
    fc.oneof({ weight: 4, arbitrary: plausible() }, { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }) }, unicode, { weight: 1, arbitrary: huge });

  /** A deeply nested array or object, as text (a parser's stack is the target). */
  const deep = fc
    .tuple(fc.integer({ min: 50, max: 3_000 }), fc.boolean())
    .map(([n, arrays]) => (arrays ? "[".repeat(n) + "]".repeat(n) : '{"a":'.repeat(n) + "1" + "}".repeat(n)));

  const prototypeKeys = fc.constantFrom(
    '{"__proto__":{"admin":true}}',
    '{"constructor":{"prototype":{"admin":true}}}',
    '{"name":"k","__proto__":{"wallet":"0x0000000000000000000000000000000000000001"}}',
    '{"jsonrpc":"2.0","id":1,"method":"__proto__"}',
    '{"jsonrpc":"2.0","id":1,"method":"constructor","params":{"__proto__":{"x":1}}}',
    '[{"__proto__":null}]',
  );

  const bodyFor = (route: RegisteredRoute) => {
    const names = documentedNames(doc, route).body;
    const field =
      names.length > 0
        ? fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...names) }, unicode, fc.constantFrom("__proto__", "constructor", "prototype", "toString"))
        : unicode;
    const object = fc.dictionary(field, value(), { maxKeys: Math.max(3, names.length) });
    const jsonrpc = fc.record(
      {
        jsonrpc: fc.constantFrom<unknown>("2.0", "1.0", 2, null),
        id: fc.oneof(fc.integer(), unicode, fc.constant(null), fc.jsonValue({ maxDepth: 1 })),
        method: fc.oneof(
          fc.constantFrom(
            "tasks/list",
            "tasks/get",
            "message/send",
            "tasks/cancel",
            "ListTasks",
            "GetTask",
            "SendMessage",
            "CancelTask",
            "toString",
            "__proto__",
            "hasOwnProperty",
          ),
          unicode,
        ),
        params: fc.oneof(
          fc.dictionary(fc.constantFrom("id", "name", "message", "capabilities", "__proto__"), value()),
          fc.jsonValue({ maxDepth: 2 }),
        ),
      },
      { requiredKeys: [] },
    );
    type Payload = string | Buffer | undefined;
    const weighted = (weight: number, arbitrary: fc.Arbitrary<Payload>) => ({ weight, arbitrary });
    return fc.oneof(
      weighted(
        6,
        object.map((o) => JSON.stringify(o)),
      ),
      weighted(
        2,
        fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)),
      ),
      weighted(
        route.path === "/a2a/v1" ? 6 : 1,
        fc.oneof(jsonrpc, fc.array(jsonrpc, { maxLength: 4 })).map((v) => JSON.stringify(v)),
      ),
      weighted(1, printable(200)),
      weighted(1, unicode),
      weighted(
        1,
        fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(bytes)),
      ),
      weighted(1, deep),
      weighted(1, prototypeKeys),
      weighted(
        1,
        huge.map((text) => JSON.stringify({ [names[0] ?? "data"]: text })),
      ),
      weighted(1, fc.constant(undefined)),
    );
  };

  const pathValue = () =>
    fc.oneof(
      { weight: 3, arbitrary: plausible().map((v) => (typeof v === "string" ? v : JSON.stringify(v))) },
      {
        weight: 1,
        arbitrary: fc.constantFrom(`${s.worker.address}.json`, `${s.worker.address.toLowerCase()}.json`, "..", "%00", ".json", "a".repeat(300)),
      },
      { weight: 2, arbitrary: unicode },
    );

  const queryFor = (route: RegisteredRoute) => {
    const names = documentedNames(doc, route).query;
    const name = names.length > 0 ? fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...names) }, unicode) : unicode;
    const entry = fc.tuple(
      name,
      fc.oneof(
        plausible().map((v) => (typeof v === "string" ? v : JSON.stringify(v))),
        unicode,
        printable(50),
      ),
    );
    return fc.array(entry, { maxLength: 4 }).map((entries) => {
      const search = new URLSearchParams();
      for (const [k, v] of entries) search.append(k, v);
      const text = search.toString();
      return text === "" ? "" : `?${text}`;
    });
  };

  /** Mostly well-formed headers, so most requests reach the handlers; sometimes every kind of wrong one. */
  const sometimes = <T>(arbitrary: fc.Arbitrary<T>, weight: number) =>
    fc.oneof({ weight, arbitrary }, { weight: 10 - weight, arbitrary: fc.constant(undefined) });
  const headers = () =>
    fc
      .record({
        "x-api-key": sometimes(fc.oneof({ weight: 3, arbitrary: fc.constant(key) }, fc.constant("sk_wrong"), printable(80), fc.constant("")), 5),
        authorization: sometimes(
          fc.oneof(
            fc.constant(`Bearer ${key}`),
            printable(40).map((t) => `Bearer ${t}`),
            printable(60),
            fc.constant("Basic dXNlcjpwYXNz"),
          ),
          2,
        ),
        "content-type": fc.oneof(
          { weight: 12, arbitrary: fc.constant("application/json") },
          fc.constantFrom(
            "application/json; charset=utf-8",
            "application/json; charset=latin1",
            "application/json; charset=utf-16",
            'application/json;charset="UTF-8"',
            "text/plain",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "application/octet-stream",
            "APPLICATION/JSON",
          ),
          printable(40),
        ),
        "content-encoding": sometimes(fc.constantFrom("gzip", "identity", "br", "x"), 1),
        accept: sometimes(fc.constantFrom("application/json", "text/html", "*/*"), 3),
      })
      .map((h) => Object.fromEntries(Object.entries(h).filter(([, v]) => v !== undefined)) as Record<string, string>);

  /** One arbitrary per route, built once (building them is the slow part, not drawing from them). */
  const requestFor = (route: RegisteredRoute) =>
    fc.record({
      route: fc.constant(route),
      params: fc.tuple(...pathParams(route.path).map(() => pathValue())),
      query: queryFor(route),
      headers: headers(),
      payload: route.method === "GET" ? fc.constant(undefined) : bodyFor(route),
    });
  const request = (): fc.Arbitrary<FuzzRequest> =>
    fc.oneof(...routes.map(requestFor)).map(({ route, params, query, headers: h, payload }) => {
      let index = 0;
      const path = route.path.replace(/:([A-Za-z0-9_]+)/g, () => encodeURIComponent(params[index++] ?? ""));
      return { route, url: `${path}${query}`, headers: h, ...(payload === undefined ? {} : { payload }) };
    });

  // ---- the property

  let baseline: Record<string, string>;
  const stats = { requests: 0, byStatus: new Map<number, number>(), accepted: 0 };

  async function check(req: FuzzRequest) {
    const response = await s.app.inject({
      method: req.route.method as Method,
      url: req.url,
      headers: req.headers,
      ...(req.payload === undefined ? {} : { payload: req.payload }),
    });
    stats.requests++;
    stats.byStatus.set(response.statusCode, (stats.byStatus.get(response.statusCode) ?? 0) + 1);
    const where = `${req.route.method} ${req.url.slice(0, 200)} -> ${response.statusCode} ${response.body.slice(0, 300)}`;

    if (req.route.path === "/a2a/v1" && (response.statusCode === 200 || response.statusCode === 204)) {
      if (response.statusCode === 204) expect(response.body, where).to.equal("");
      else {
        const body = response.json<unknown>();
        for (const answer of Array.isArray(body) ? body : [body]) {
          expect(answer, where).to.have.property("jsonrpc", "2.0");
          expect(answer, where).to.have.property("id");
          const a = answer as { result?: unknown; error?: { code: unknown; message: unknown } };
          expect("result" in a !== "error" in a, where).to.equal(true);
          if (a.error) {
            expect(a.error.code, where).to.be.a("number");
            expect(a.error.code, where).to.not.equal(-32603);
            expect(a.error.message, where).to.be.a("string");
          }
        }
      }
    } else if (response.statusCode >= 400) {
      const body = response.json<{ success: boolean; error: { code: string; message: string } }>();
      expect(body.success, where).to.equal(false);
      const info = ERROR_CODES[body.error.code as keyof typeof ERROR_CODES];
      expect(info, where).to.not.equal(undefined);
      expect(info.status, where).to.equal(response.statusCode);
      expect(body.error.message, where).to.be.a("string");
      if (response.statusCode >= 500) expect(ALLOWED_5XX.has(body.error.code), where).to.equal(true);
    } else {
      expect(response.statusCode, where).to.be.within(200, 299);
      // The MCP endpoint accepts JSON-RPC notifications with 202 and no body (Streamable HTTP).
      if (req.route.path === "/mcp" && response.statusCode === 202) expect(response.body, where).to.equal("");
      else expect(() => response.json(), where).to.not.throw();
    }

    const after = await stateHash(s, tables);
    if (response.statusCode >= 300 || req.route.method === "GET") {
      expect(after, `${where}\nchanged stored rows`).to.deep.equal(baseline);
    } else if (JSON.stringify(after) !== JSON.stringify(baseline)) {
      // A request that really succeeded may change state (a nonce, a blob, a key); it becomes the new baseline.
      stats.accepted++;
      baseline = after;
    }
  }

  it("every route answers fixed nasty inputs without a 5xx or a state change", async function () {
    baseline = await stateHash(s, tables);
    const nasty: Array<string | Buffer | undefined> = [
      undefined,
      "",
      "{",
      "null",
      "[]",
      "0",
      '"x"',
      '{"__proto__":{"admin":true}}',
      '{"constructor":{"prototype":{"admin":true}}}',
      "[".repeat(5_000) + "]".repeat(5_000),
      '{"a":'.repeat(2_000) + "1" + "}".repeat(2_000),
      JSON.stringify({ data: "A".repeat(2 * 1024 * 1024) }),
      Buffer.from([0xff, 0xfe, 0x00, 0x7b, 0x22]),
      JSON.stringify({ "\u0000": "\ud800", "\u202e": "\u{1F600}".repeat(1000) }),
    ];
    const credentials: Array<Record<string, string>> = [{}, { "x-api-key": key }, { authorization: "Bearer \u00e9t\u00e9" }];
    for (const route of routes) {
      const paths = ["%E2%80%AE..%00", "1", "0xAbCdef0000000000000000000000000000000001", s.worker.address, taskHash].map((value) =>
        route.path.replace(/:([A-Za-z0-9_]+)/g, () => value),
      );
      const payloads = route.method === "GET" ? [undefined, undefined, undefined] : nasty;
      for (const [i, payload] of payloads.entries()) {
        for (const path of route.path.includes(":") ? paths : paths.slice(0, 1)) {
          const headers = { "content-type": "application/json", ...credentials[i % credentials.length] };
          await check({ route, url: `${path}?__proto__=1&constructor=x`, headers, ...(payload === undefined ? {} : { payload }) });
        }
      }
    }
  });

  it(`random requests to random routes (${RUNS} runs): never a 5xx, always a coded envelope, refusals change nothing`, async function () {
    baseline = await stateHash(s, tables);
    await fc.assert(fc.asyncProperty(request(), check), { numRuns: RUNS, endOnFailure: true });
    // Enough of the traffic reached handlers rather than stopping at the parser.
    const refusedByHandlers = [...stats.byStatus.entries()]
      .filter(([status]) => status === 401 || status === 403 || status === 404 || status === 409)
      .reduce((n, [, c]) => n + c, 0);
    expect(refusedByHandlers).to.be.above(RUNS / 20);
    expect(stats.byStatus.get(200) ?? 0).to.be.above(0);
    console.log(
      `      ${stats.requests} requests; statuses ${JSON.stringify(Object.fromEntries([...stats.byStatus].sort(([a], [b]) => a - b)))}; ${stats.accepted} accepted changes`,
    );
  });
});
