/**
 * The HTTP tool rules of the spec's "HTTP tool definition" (issue 25 item 8), each against a real server on loopback
 * that records every request as it arrived: the key name required unless the auth is `none` (bearer included), a
 * `header` mapping accepted and its input dropped, an unmapped input never sent, a free-form body for a POST/PUT/PATCH
 * tool without inputs, and `query_param` auth accepted and its secret never sent.
 */
import { expect } from "chai";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { checkToolDefinition } from "../../server/hosted/tools";
import { createRedactor } from "../../server/hosted/runner/bounds";
import { callHttpTool, httpToolSpec, type ToolRunContext } from "../../server/hosted/runner/tools";
import { MarketError } from "@market/core/errors";
import type { HttpTool } from "@market/core/api";
import { MarketClient } from "../../sdk/src/client";

const SECRET = "qp-secret-0123456789abcdef";

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

function context(): ToolRunContext {
  return {
    agentId: 1,
    taskHash: `0x${"ab".repeat(32)}`,
    client: new MarketClient({ apiKey: "ha_unused", baseUrl: "http://127.0.0.1:9", escrows: {} }),
    secret: (name) => (name === "api" ? SECRET : undefined),
    redact: createRedactor([SECRET]),
    allowPrivateNetworks: true,
    subtaskMaxReward: null,
    deadline: Date.now() + 60_000,
    now: Date.now,
    background: () => undefined,
    subtasks: { reserve: async () => ({ refused: "off" }), listed: async () => undefined, targetRefusal: async () => undefined },
  };
}

/** The refusal `checkToolDefinition` throws for `tool`, as code and field. */
function refusal(tool: HttpTool): { code: string; field: string | undefined } | undefined {
  try {
    checkToolDefinition(tool, "body.tools.0", true);
    return undefined;
  } catch (error) {
    expect(error).to.be.instanceOf(MarketError);
    const e = error as MarketError;
    return { code: e.code, field: e.details?.[0]?.field };
  }
}

describe("hosted agents: HTTP tool rules (spec, issue 25 item 8)", function () {
  let server: Server;
  let base: string;
  const seen: Seen[] = [];

  before(async function () {
    server = createServer((req, res) => {
      let body = "";
      req.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")));
      req.on("end", () => {
        seen.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body });
        res.setHeader("content-type", "application/json");
        res.end('{"ok":true}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async function () {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  beforeEach(function () {
    seen.length = 0;
  });

  const tool = (extra: Partial<HttpTool> = {}): HttpTool => ({
    name: "lookup",
    description: "Looks a word up.",
    parameters: { type: "object", properties: { word: { type: "string", description: "The word." } } },
    method: "GET",
    url: `${base}/lookup`,
    paramMapping: { word: "query" },
    ...extra,
  });
  const call = (t: HttpTool, args: Record<string, unknown>) => callHttpTool(t, args, context(), new AbortController().signal);
  /** Everything a request carried, as one text: the secret must appear nowhere in it. */
  const everything = (r: Seen) => `${r.method} ${r.url}\n${JSON.stringify(r.headers)}\n${r.body}`;

  it("requires the key name unless the auth type is none, bearer included (VALIDATION_FAILED naming auth.keyName)", function () {
    for (const type of ["bearer", "header", "query_param"] as const) {
      expect(refusal(tool({ auth: { type, secretRef: "api" } })), type).to.deep.equal({
        code: "VALIDATION_FAILED",
        field: "body.tools.0.auth.keyName",
      });
      expect(refusal(tool({ auth: { type, keyName: "X-Key" } })), type).to.deep.equal({
        code: "VALIDATION_FAILED",
        field: "body.tools.0.auth.secretRef",
      });
      expect(refusal(tool({ auth: { type, keyName: "Authorization", secretRef: "api" } })), type).to.equal(undefined);
    }
    expect(refusal(tool({ auth: { type: "none" } }))).to.equal(undefined);
    expect(refusal(tool())).to.equal(undefined);
  });

  it("sends a bearer secret as Authorization: Bearer, whatever the key name", async function () {
    const answer = await call(tool({ auth: { type: "bearer", keyName: "X-Key", secretRef: "api" } }), { word: "tea" });
    expect(answer).to.equal('HTTP 200\n{"ok":true}');
    expect(seen).to.have.length(1);
    expect(seen[0]!.headers.authorization).to.equal(`Bearer ${SECRET}`);
    expect(seen[0]!.headers).not.to.have.property("x-key");
    expect(seen[0]!.url).to.equal("/lookup?word=tea");
  });

  it("accepts a header mapping and drops its input: neither a header, nor the URL, nor the body carries it", async function () {
    const t = tool({
      method: "POST",
      parameters: {
        type: "object",
        properties: { word: { type: "string", description: "The word." }, trace: { type: "string", description: "A trace id." } },
      },
      paramMapping: { word: "body", trace: "header" },
    });
    expect(refusal(t)).to.equal(undefined);
    await call(t, { word: "tea", trace: "trace-value-77" });
    expect(seen).to.have.length(1);
    expect(seen[0]!.body).to.equal('{"word":"tea"}');
    expect(everything(seen[0]!)).not.to.include("trace-value-77");
    expect(seen[0]!.headers).not.to.have.property("trace");
  });

  it("never sends an input without a saved mapping, nor an argument the tool does not declare", async function () {
    const t = tool({
      parameters: {
        type: "object",
        properties: { word: { type: "string", description: "The word." }, lang: { type: "string", description: "A language." } },
      },
      paramMapping: { word: "query" },
    });
    await call(t, { word: "tea", lang: "unmapped-lang-value", extra: "undeclared-value" });
    expect(seen).to.have.length(1);
    expect(seen[0]!.url).to.equal("/lookup?word=tea");
    expect(seen[0]!.body).to.equal("");
    expect(everything(seen[0]!)).not.to.include("unmapped-lang-value");
    expect(everything(seen[0]!)).not.to.include("undeclared-value");
  });

  it("gives a POST, PUT or PATCH tool without inputs a free-form body input, sent as the request body; GET and DELETE get none", async function () {
    for (const method of ["POST", "PUT", "PATCH"] as const) {
      const t = tool({ method, parameters: { type: "object", properties: {} }, paramMapping: {} });
      const spec = httpToolSpec(t).function;
      expect(spec.parameters, method).to.deep.equal({
        type: "object",
        properties: { input: { type: "string", description: "The request body (JSON or text)." } },
        required: [],
        additionalProperties: false,
      });
      seen.length = 0;
      await call(t, { input: '{"free":"form"}' });
      expect(seen, method).to.have.length(1);
      expect(seen[0]!.method).to.equal(method);
      expect(seen[0]!.body).to.equal('{"free":"form"}');
      expect(seen[0]!.headers["content-type"]).to.equal("application/json");
    }
    for (const method of ["GET", "DELETE"] as const) {
      const t = tool({ method, parameters: { type: "object", properties: {} }, paramMapping: {} });
      expect(httpToolSpec(t).function.parameters, method).to.deep.include({ properties: {} });
      seen.length = 0;
      await call(t, { input: "never-sent-body" });
      expect(seen[0]!.body, method).to.equal("");
    }
    // A tool with inputs gets no free-form one: an `input` argument it does not declare is never sent.
    seen.length = 0;
    await call(tool({ method: "POST", paramMapping: { word: "body" } }), { word: "tea", input: "never-sent-input" });
    expect(seen[0]!.body).to.equal('{"word":"tea"}');
  });

  it("accepts query_param auth and never sends its secret: not in the URL, a header or the body", async function () {
    const t = tool({ method: "POST", auth: { type: "query_param", keyName: "api_key", secretRef: "api" }, paramMapping: { word: "body" } });
    expect(refusal(t)).to.equal(undefined);
    const answer = await call(t, { word: "tea" });
    expect(answer).to.equal('HTTP 200\n{"ok":true}');
    expect(seen).to.have.length(1);
    expect(seen[0]!.url).to.equal("/lookup");
    expect(seen[0]!.headers).not.to.have.property("authorization");
    expect(seen[0]!.headers).not.to.have.property("api_key");
    expect(everything(seen[0]!)).not.to.include(SECRET);
  });
});
