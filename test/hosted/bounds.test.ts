/**
 * The runner's bounds against real servers on loopback: a hosted agent's model or HTTP tool never reaches a private
 * address, however its URL spells one, and no part of a secret reaches the model through an HTTP tool's answer.
 */
import { expect } from "chai";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import {
  boundedFetch,
  createRedactor,
  FetchRefused,
  isPrivateAddress,
  privateUrlReason,
  redactFields,
  type LookupFunction,
} from "../../server/hosted/runner/bounds";
import { modelClient } from "../../server/hosted/runner/model";
import { startModelServer } from "../support/model-server";
import { callHttpTool, type ToolRunContext } from "../../server/hosted/runner/tools";
import { MarketClient } from "../../sdk/src/client";

/** What an HTTP tool runs with, outside a runner: one secret, redacted, and `secretOf` to look secrets up. */
function toolContext(secret: string, secretOf: ToolRunContext["secret"]): ToolRunContext {
  return {
    agentId: 1,
    taskHash: `0x${"ab".repeat(32)}`,
    client: new MarketClient({ apiKey: "ha_unused", baseUrl: "http://127.0.0.1:9", escrows: {} }),
    secret: secretOf,
    redact: createRedactor([secret]),
    allowPrivateNetworks: true,
    subtaskMaxReward: null,
    deadline: Date.now() + 60_000,
    now: Date.now,
    background: () => undefined,
    subtasks: { reserve: async () => ({ refused: "off" }), listed: async () => undefined, targetRefusal: async () => undefined },
  };
}

describe("hosted agents: runner bounds", function () {
  let server: Server;
  let port: number;
  let hits: string[];
  /** What the server answers before echoing the request's Authorization header (an echo endpoint, say). */
  let echoPadding: number;

  beforeEach(async function () {
    hits = [];
    echoPadding = 0;
    server = createServer((req, res) => {
      hits.push(req.url ?? "/");
      if (req.url === "/echo") res.end(`${"x".repeat(echoPadding)}${req.headers.authorization ?? ""}`);
      else if (req.url === "/redirect") {
        res.writeHead(302, { location: `http://127.0.0.1:${port}/internal` });
        res.end();
      } else res.end("internal secret page");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterEach(async function () {
    await new Promise((resolve) => server.close(resolve));
  });

  it("refuses private IPv4 addresses written as IPv6 (IPv4-mapped, IPv4-compatible, NAT64, 6to4), by their text and at call time", async function () {
    // The same loopback server, spelled as IPv6: the kernel connects [::ffff:127.0.0.1] to 127.0.0.1.
    const mapped = `http://[::ffff:127.0.0.1]:${port}/internal`;
    const urls = [
      mapped,
      `http://[::ffff:7f00:1]:${port}/`,
      "http://[::ffff:169.254.169.254]/latest/meta-data",
      "http://[0:0:0:0:0:ffff:a00:1]/v1",
      "http://[::127.0.0.1]/v1",
      "http://[64:ff9b::10.0.0.1]/v1",
      "http://[2002:c0a8:101::1]/v1",
      "http://[fe90::1]/v1",
      "http://[fec0::1]/v1",
    ];
    for (const url of urls) expect(privateUrlReason(url), url).to.equal("points at a private or loopback address");
    for (const address of ["::ffff:7f00:1", "::ffff:10.1.2.3", "::ffff:192.168.0.1", "64:ff9b::a9fe:a9fe", "2002:0a00:0001::", "febf::1"])
      expect(isPrivateAddress(address), address).to.equal(true);
    // Public addresses stay reachable, however written.
    for (const address of ["::ffff:8.8.8.8", "2606:4700:4700::1111", "64:ff9b::808:808", "2002:0808:0808::", "8.8.8.8"])
      expect(isPrivateAddress(address), address).to.equal(false);

    const fetchBounded = boundedFetch({ maxBytes: 1024, allowPrivateNetworks: false });
    let refused: unknown;
    try {
      await fetchBounded(mapped);
    } catch (error) {
      refused = error;
    }
    expect(refused).to.be.instanceOf(FetchRefused);
    expect(hits).to.deep.equal([]);
    // Allowed private networks (a local model server), the same URL goes through.
    const allowed = await boundedFetch({ maxBytes: 1024, allowPrivateNetworks: true })(mapped);
    expect(await allowed.text()).to.equal("internal secret page");
  });

  it("redacts a tool secret an HTTP tool's answer echoes before cutting the answer, so no prefix of it reaches the model", async function () {
    const secret = "tool-secret-0123456789abcdef";
    const ctx = toolContext(secret, (name) => (name === "echo_key" ? secret : undefined));
    const tool = {
      name: "echo",
      description: "Echoes the request.",
      parameters: { type: "object" as const, properties: {} },
      method: "GET" as const,
      url: `http://127.0.0.1:${port}/echo`,
      auth: { type: "bearer" as const, keyName: "Authorization", secretRef: "echo_key" },
    };
    // The answer is cut at 6,000 characters; the padding puts the cut inside the secret ("Bearer " comes first).
    for (const padding of [5_980, 5_990, 100]) {
      echoPadding = padding;
      const answer = await callHttpTool(tool, {}, ctx, new AbortController().signal);
      expect(answer, `padding ${padding}`).not.to.include(secret.slice(0, 8));
      expect(answer).to.match(/^HTTP 200\n/);
    }
    echoPadding = 100;
    expect(await callHttpTool(tool, {}, ctx, new AbortController().signal)).to.include("Bearer [redacted]");
  });

  it("refuses a path input that is a dot segment (. or ..), which would move an HTTP tool's request, secret attached, up its URL's path", async function () {
    const secret = "tool-secret-0123456789abcdef";
    const ctx = toolContext(secret, () => secret);
    const tool = {
      name: "profile",
      description: "A user's profile.",
      parameters: { type: "object" as const, properties: { id: { type: "string" as const, description: "The user id." } } },
      method: "GET" as const,
      url: `http://127.0.0.1:${port}/v1/users/{id}/profile`,
      paramMapping: { id: "path" as const },
      auth: { type: "bearer" as const, keyName: "Authorization", secretRef: "api" },
    };
    for (const id of ["..", "."]) {
      const answer = await callHttpTool(tool, { id }, ctx, new AbortController().signal);
      expect(answer, id).to.match(/^Error: /);
    }
    expect(hits).to.deep.equal([]);
    // Anything else is encoded into one segment, dots and slashes included.
    await callHttpTool(tool, { id: "../admin" }, ctx, new AbortController().signal);
    await callHttpTool(tool, { id: "a.b" }, ctx, new AbortController().signal);
    await callHttpTool(tool, { id: "%2e%2e" }, ctx, new AbortController().signal);
    expect(hits).to.deep.equal(["/v1/users/..%2Fadmin/profile", "/v1/users/a.b/profile", "/v1/users/%252e%252e/profile"]);
  });

  it("redacts a secret with a quote, a backslash or a control character in JSON text and in log fields, not only in plain text", async function () {
    const secrets = ['tool"secret\\0123456789', "line\nbreak-secret-abcdef", '0xab"cd\\ef0123456789'];
    const redact = createRedactor(secrets);
    for (const secret of secrets) {
      const escaped = JSON.stringify(secret).slice(1, -1);
      // JSON text, as the inbox and sub-task results (and the runner's log lines until now) are redacted.
      const text = JSON.stringify({ error: `the call failed: ${secret}`, [secret]: [secret] });
      const redacted = redact(text);
      expect(redacted, secret).not.to.include(escaped);
      expect(redacted, secret).not.to.include(secret);
      expect(JSON.parse(redacted)).to.deep.equal({ error: "the call failed: [redacted]", "[redacted]": ["[redacted]"] });
      // Log fields are redacted value by value before the logger serialises them.
      const fields = redactFields({ hostedAgent: 1, error: new Error(`boom ${secret}`), nested: { list: [secret, 3n] } }, redact);
      const line = JSON.stringify(fields);
      expect(line, secret).not.to.include(escaped);
      expect(line, secret).not.to.include(secret);
      expect(fields).to.deep.equal({ hostedAgent: 1, error: { name: "Error", message: "boom [redacted]" }, nested: { list: ["[redacted]", "3"] } });
    }
    // The 0x secret without its prefix, escaped, too.
    expect(redact(JSON.stringify('ab"cd\\ef0123456789'))).to.equal('"[redacted]"');
  });

  /** The resolver of the test's own host names: every name is loopback (as a rebinding host answers the second time). */
  function loopbackResolver(asked: string[]): LookupFunction {
    return (hostname, options, callback) => {
      asked.push(hostname);
      if (options.all) callback(null, [{ address: "127.0.0.1", family: 4 }]);
      else callback(null, "127.0.0.1", 4);
    };
  }

  it("checks the address each connection is made to, at connect time: a name that resolves to a private address is refused (no DNS rebinding)", async function () {
    const asked: string[] = [];
    const lookup = loopbackResolver(asked);
    const url = `http://rebind.test:${port}/internal`;
    // With private networks allowed the name connects where the resolver says: the loopback server.
    const allowed = await boundedFetch({ maxBytes: 1024, allowPrivateNetworks: true, lookup })(url);
    expect(await allowed.text()).to.equal("internal secret page");
    expect(hits).to.deep.equal(["/internal"]);
    // Refused, the same answer fails the connection itself: the check is on the address the socket would use.
    for (let attempt = 0; attempt < 2; attempt++) {
      const refused = await boundedFetch({ maxBytes: 1024, allowPrivateNetworks: false, lookup })(url).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(refused).to.be.instanceOf(FetchRefused);
      expect((refused as Error).message).to.equal("the host rebind.test resolves to a private address");
    }
    expect(hits).to.deep.equal(["/internal"]);
    // Asked once per connection: nothing resolved earlier is trusted later.
    expect(asked).to.deep.equal(["rebind.test", "rebind.test", "rebind.test"]);
  });

  it("never follows a redirect: a 3xx is answered as it is, so no redirect reaches a host nobody checked", async function () {
    const answer = await boundedFetch({ maxBytes: 1024, allowPrivateNetworks: true })(`http://127.0.0.1:${port}/redirect`);
    expect(answer.status).to.equal(302);
    expect(answer.headers.get("location")).to.equal(`http://127.0.0.1:${port}/internal`);
    expect(hits).to.deep.equal(["/redirect"]);
  });

  it("the model client (openai) connects through the same check, for each call", async function () {
    const model = await startModelServer();
    try {
      model.setScript(() => ({ content: "a checked answer" }));
      const asked: string[] = [];
      const lookup = loopbackResolver(asked);
      const baseUrl = model.baseUrl.replace("127.0.0.1", "model.test");
      const call = (allowPrivateNetworks: boolean) =>
        modelClient({ baseUrl, name: "m" }, { timeoutMs: 10_000, allowPrivateNetworks, lookup }).chat.completions.create({
          model: "m",
          messages: [{ role: "user", content: "hello" }],
        });
      const failure = await call(false).then(
        () => undefined,
        (error: unknown) => error as Error,
      );
      expect(failure?.cause).to.be.instanceOf(FetchRefused);
      expect(model.requests).to.have.length(0);
      const completion = await call(true);
      expect(completion.choices[0]?.message.content).to.equal("a checked answer");
      expect(model.requests).to.have.length(1);
      expect(asked.every((h) => h === "model.test")).to.equal(true);
      expect(asked.length).to.be.at.least(2);
    } finally {
      await model.close();
    }
  });
});
