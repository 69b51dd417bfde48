/**
 * The HTTP edge: body and envelope errors (each its own code, never a 500), the OpenAPI document, health routes and
 * the upload route. Length mismatches and aborted requests go over a real socket, where Node's parser sees them.
 */
import { createHash } from "node:crypto";
import net from "node:net";
import { expect } from "chai";
import type { Provider } from "ethers";
import { mine } from "@nomicfoundation/hardhat-network-helpers";
import { startTestServer, type Answer, type TestServer } from "./harness";
import { openApiPath, registeredRoutes } from "./registered-routes";
import { DEFAULT_BODY_LIMIT } from "../../server/app";
import { READY_LAG_BLOCKS } from "../../server/health";
import { createChains } from "../../server/chains";
import type { BlobStore } from "../../server/storage/blob-store";
import { ERROR_CODES } from "@market/core/errors";
import { MAX_UPLOAD_BYTES } from "@market/core/limits";

function expectError(answer: Answer, status: number, code: string) {
  expect(answer.body.error?.code, JSON.stringify(answer.body).slice(0, 500)).to.equal(code);
  expect(answer.status).to.equal(status);
  expect(answer.body.success).to.equal(false);
  expect(answer.body.error.message).to.be.a("string");
}

interface RawAnswer {
  status?: number;
  headers: Record<string, string>;
  body?: { success: boolean; error: { code: string } };
  raw: string;
}

/** Writes bytes to the server as they are, optionally half-closes or drops the connection, and reads the answer. */
function rawRequest(port: number, text: string, options: { end?: boolean; destroyAfterMs?: number } = {}): Promise<RawAnswer> {
  return new Promise((resolve) => {
    let raw = "";
    const socket = net.connect(port, "127.0.0.1", () => {
      socket.write(text);
      if (options.end) socket.end();
      if (options.destroyAfterMs !== undefined) setTimeout(() => socket.destroy(), options.destroyAfterMs);
    });
    const timer = setTimeout(() => socket.destroy(), 5_000);
    socket.on("data", (chunk) => (raw += chunk.toString("utf8")));
    socket.on("error", () => undefined);
    socket.on("close", () => {
      clearTimeout(timer);
      const [head = "", ...rest] = raw.split("\r\n\r\n");
      const [statusLine = "", ...headerLines] = head.split("\r\n");
      const headers = Object.fromEntries(
        headerLines.map((line) => [line.slice(0, line.indexOf(":")).toLowerCase(), line.slice(line.indexOf(":") + 1).trim()]),
      );
      const status = /^HTTP\/1\.1 (\d{3})/.exec(statusLine)?.[1];
      let body: RawAnswer["body"];
      try {
        body = JSON.parse(rest.join("\r\n\r\n"));
      } catch {
        body = undefined;
      }
      resolve({ status: status === undefined ? undefined : Number(status), headers, body, raw });
    });
  });
}

const NONCE_BODY = JSON.stringify({ address: "0x000000000000000000000000000000000000dEaD" });

describe("server: HTTP edge", function () {
  let s: TestServer;
  beforeEach(async function () {
    s = await startTestServer();
  });
  afterEach(async function () {
    await s.close();
  });

  /** A POST to a public route whose body is validated (a nonce): the route does nothing else of note. */
  async function postNonce(payload: string | Buffer, headers: Record<string, string> = {}): Promise<Answer> {
    const response = await s.app.inject({
      method: "POST",
      url: "/api/v1/auth/nonce",
      headers: { "content-type": "application/json", ...headers },
      payload,
    });
    return { status: response.statusCode, body: response.json(), headers: response.headers };
  }

  describe("bodies and envelopes", function () {
    it("accepts a well-formed body (the control case)", async function () {
      const answer = await postNonce(NONCE_BODY);
      expect(answer.status).to.equal(200);
      expect(answer.body.success).to.equal(true);
    });

    it("INVALID_JSON for a body that is not JSON, and for an empty JSON body", async function () {
      for (const payload of ["{", '{"address":', "{'address':'x'}", "undefined", "[1,]", '{"a":1}{"b":2}', "\u0000"]) {
        expectError(await postNonce(payload), 400, "INVALID_JSON");
      }
      expectError(await postNonce(""), 400, "INVALID_JSON");
      expect(await s.db.selectFrom("auth_nonces").selectAll().execute()).to.have.length(0);
    });

    it("VALIDATION_FAILED for JSON of the wrong shape, naming the field", async function () {
      for (const payload of ["null", "[]", "42", '"text"', "true"]) {
        const answer = await postNonce(payload);
        expectError(answer, 400, "VALIDATION_FAILED");
        expect(answer.body.error.details?.[0]?.field).to.match(/^body/);
      }
      const wrongType = await postNonce(JSON.stringify({ address: 12345 }));
      expectError(wrongType, 400, "VALIDATION_FAILED");
      expect(wrongType.body.error.details?.[0]?.field).to.equal("body.address");
      const unknown = await postNonce(JSON.stringify({ address: "0x000000000000000000000000000000000000dEaD", role: "admin" }));
      expectError(unknown, 400, "VALIDATION_FAILED");
      expect(unknown.body.error.details?.[0]).to.deep.include({ field: "body.role", message: "is not a known field" });
      const nested = await s.call("POST", "/api/v1/a2a/register", { body: { capabilities: ["web_research", 7] }, key: await s.apiKeyFor(s.worker) });
      expectError(nested, 400, "VALIDATION_FAILED");
      expect(nested.body.error.details?.[0]?.field).to.equal("body.capabilities.1");
    });

    it("VALIDATION_FAILED naming the field for U+0000 in any string (PostgreSQL text cannot store it), nothing stored", async function () {
      const key = await s.apiKeyFor(s.worker);
      const answer = await s.call("POST", "/api/v1/a2a/register", { key, body: { displayName: "agent\u0000one", capabilities: ["web_research"] } });
      expectError(answer, 400, "VALIDATION_FAILED");
      expect(answer.body.error.details?.[0]?.field).to.equal("body.displayName");
      const nested = await s.call("POST", "/api/v1/tasks/batch", { key, body: { tasks: [{ verificationMode: "auto", publicBrief: "a\u0000" }] } });
      expect(nested.body.error.details?.[0]?.field).to.equal("body.tasks.0.publicBrief");
      expect(await s.db.selectFrom("agents").selectAll().execute()).to.have.length(0);
      // An escaped backslash followed by "u0000" is ordinary text.
      expect((await s.call("POST", "/api/v1/a2a/register", { key, body: { displayName: "agent\\u0000one" } })).status).to.equal(200);
    });

    it("BODY_TOO_LARGE (413) above 1 MB, whatever the body says", async function () {
      const justOver = `{"address":"${"a".repeat(DEFAULT_BODY_LIMIT)}"}`;
      expectError(await postNonce(justOver), 413, "BODY_TOO_LARGE");
      // At the limit the body is read and then refused for its content.
      const atLimit = `{"address":"${"a".repeat(DEFAULT_BODY_LIMIT - 14)}"}`;
      expect(Buffer.byteLength(atLimit)).to.equal(DEFAULT_BODY_LIMIT);
      expectError(await postNonce(atLimit), 400, "VALIDATION_FAILED");
      // A Content-Length over the limit is refused before reading.
      expectError(await postNonce(NONCE_BODY, { "content-length": String(DEFAULT_BODY_LIMIT + 1) }), 413, "BODY_TOO_LARGE");
    });

    it("UNSUPPORTED_MEDIA_TYPE (415) for bodies that are not JSON", async function () {
      for (const type of [
        "text/plain",
        "application/xml",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/jsonx",
        "*/*",
      ]) {
        expectError(await postNonce(NONCE_BODY, { "content-type": type }), 415, "UNSUPPORTED_MEDIA_TYPE");
      }
      const untyped = await s.app.inject({ method: "POST", url: "/api/v1/auth/nonce", payload: NONCE_BODY });
      expect(untyped.statusCode).to.equal(415);
      expect(untyped.json().error.code).to.equal("UNSUPPORTED_MEDIA_TYPE");
    });

    it("UNSUPPORTED_CHARSET (415) for a charset other than UTF-8", async function () {
      for (const charset of ["latin1", "iso-8859-1", "utf-16", '"windows-1252"', "ascii"]) {
        expectError(await postNonce(NONCE_BODY, { "content-type": `application/json; charset=${charset}` }), 415, "UNSUPPORTED_CHARSET");
      }
      for (const charset of ["utf-8", "UTF-8", "utf8", '"utf-8"']) {
        expect((await postNonce(NONCE_BODY, { "content-type": `application/json; charset=${charset}` })).status).to.equal(200);
      }
    });

    it("UNSUPPORTED_ENCODING (415) for a compressed body", async function () {
      for (const encoding of ["gzip", "deflate", "br", "gzip, identity", "x-unknown"]) {
        expectError(await postNonce(NONCE_BODY, { "content-encoding": encoding }), 415, "UNSUPPORTED_ENCODING");
      }
      expect((await postNonce(NONCE_BODY, { "content-encoding": "identity" })).status).to.equal(200);
      expect(await s.db.selectFrom("auth_nonces").selectAll().execute()).to.have.length(1);
    });

    it("BODY_LENGTH_MISMATCH when Content-Length disagrees with the body (in process)", async function () {
      const length = Buffer.byteLength(NONCE_BODY);
      for (const declared of [length + 5, length - 5]) {
        expectError(await postNonce(NONCE_BODY, { "content-length": String(declared) }), 400, "BODY_LENGTH_MISMATCH");
      }
    });

    it("NOT_FOUND (404) for unknown routes and unknown methods of known paths", async function () {
      for (const [method, url] of [
        ["GET", "/nope"],
        ["GET", "/api/v2/a2a/tasks"],
        ["DELETE", "/api/v1/a2a/tasks"],
        ["PUT", "/api/v1/auth/nonce"],
        ["GET", "/api/v1/auth/nonce"],
        ["GET", "/.well-known/agents/"],
        ["POST", "/health"],
      ] as const) {
        const response = await s.app.inject({ method, url });
        expect(response.statusCode, `${method} ${url}`).to.equal(404);
        expect(response.json()).to.deep.include({ success: false });
        expect(response.json().error.code).to.equal("NOT_FOUND");
      }
    });

    it("VALIDATION_FAILED (not the router's own 414/400 body) for an over-long or badly encoded path parameter", async function () {
      for (const url of [
        `/api/v1/a2a/executors/${"a".repeat(300)}`,
        `/.well-known/agents/${"0x".padEnd(500, "f")}.json`,
        "/api/v1/a2a/executors/%E0%A4%A",
        "/api/v1/tasks/%zz",
      ]) {
        const response = await s.app.inject({ method: "GET", url });
        expect(response.statusCode, url).to.equal(400);
        expect(response.json().error.code, url).to.equal("VALIDATION_FAILED");
        expect(response.json().error.details[0].field).to.equal("params");
      }
    });

    it("every error code the API answers is in the table with the status it was answered with", async function () {
      const answers = [
        await postNonce("{"),
        await postNonce(NONCE_BODY, { "content-type": "text/plain" }),
        await postNonce(NONCE_BODY, { "content-encoding": "gzip" }),
        await s.call("GET", "/nope"),
        await s.call("GET", "/api/v1/api-keys/whoami"),
      ];
      for (const answer of answers) {
        const code = answer.body.error.code as keyof typeof ERROR_CODES;
        expect(ERROR_CODES[code], code).to.not.equal(undefined);
        expect(ERROR_CODES[code].status).to.equal(answer.status);
      }
    });
  });

  describe("over a socket", function () {
    let port: number;
    let lines: string[];
    let logged: TestServer;

    beforeEach(async function () {
      lines = [];
      logged = await startTestServer({ logger: { level: "info", stream: { write: (line: string) => void lines.push(line) } } });
      await logged.app.listen({ host: "127.0.0.1", port: 0 });
      port = (logged.app.server.address() as net.AddressInfo).port;
    });
    afterEach(async function () {
      await logged.close();
    });

    const request = (declaredLength: number, body: string) =>
      `POST /api/v1/auth/nonce HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${declaredLength}\r\n\r\n${body}`;
    const loggedErrors = () =>
      lines
        .map((l) => JSON.parse(l) as { level: number; res?: { statusCode: number } })
        .filter((l) => l.level >= 50 || (l.res?.statusCode ?? 0) >= 500);

    it("BODY_LENGTH_MISMATCH when the body ends before Content-Length (the client closes its side)", async function () {
      const answer = await rawRequest(port, request(Buffer.byteLength(NONCE_BODY) + 10, NONCE_BODY), { end: true });
      expect(answer.status).to.equal(400);
      expect(answer.body?.error.code).to.equal("BODY_LENGTH_MISMATCH");
      expect(answer.headers["content-type"]).to.match(/^application\/json/);
      expect(await logged.db.selectFrom("auth_nonces").selectAll().execute()).to.have.length(0);
      expect(loggedErrors()).to.deep.equal([]);
    });

    it("BODY_LENGTH_MISMATCH when more bytes follow than Content-Length announced", async function () {
      const answer = await rawRequest(port, request(Buffer.byteLength(NONCE_BODY) - 5, NONCE_BODY), { end: true });
      expect(answer.status).to.equal(400);
      expect(answer.body?.error.code).to.equal("BODY_LENGTH_MISMATCH");
      expect(await logged.db.selectFrom("auth_nonces").selectAll().execute()).to.have.length(0);
      expect(loggedErrors()).to.deep.equal([]);
    });

    it("an aborted request changes nothing, logs no failure, and the server keeps answering", async function () {
      const answer = await rawRequest(port, request(Buffer.byteLength(NONCE_BODY), NONCE_BODY.slice(0, 20)), { destroyAfterMs: 50 });
      expect(answer.raw).to.equal(""); // nobody left to answer
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(await logged.db.selectFrom("auth_nonces").selectAll().execute()).to.have.length(0);
      expect(loggedErrors()).to.deep.equal([]);
      const completed = lines.map((l) => JSON.parse(l) as { msg: string; res?: { statusCode: number } }).filter((l) => l.res);
      for (const entry of completed) expect(entry.res!.statusCode).to.be.below(500);
      const health = await rawRequest(port, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
      expect(health.status).to.equal(200);
    });

    it("a body over the limit is refused while it streams in (413, connection closed)", async function () {
      const big = `{"address":"${"a".repeat(DEFAULT_BODY_LIMIT + 100)}"}`;
      const answer = await rawRequest(
        port,
        `POST /api/v1/auth/nonce HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n${big.length.toString(16)}\r\n${big}\r\n0\r\n\r\n`,
      );
      expect(answer.status).to.equal(413);
      expect(answer.body?.error.code).to.equal("BODY_TOO_LARGE");
      expect(answer.headers.connection).to.equal("close");
    });

    it("malformed HTTP gets the error envelope too", async function () {
      const answer = await rawRequest(port, "HELLO\r\n\r\n");
      expect(answer.status).to.equal(400);
      expect(answer.body?.success).to.equal(false);
      expect(answer.body?.error.code).to.be.a("string");
    });
  });

  describe("OpenAPI document", function () {
    it("is OpenAPI 3.0.x, lists every registered route and nothing else, and references ErrorEnvelope", async function () {
      const response = await s.app.inject({ method: "GET", url: "/openapi.json" });
      expect(response.statusCode).to.equal(200);
      const doc = response.json<{
        openapi: string;
        paths: Record<string, Record<string, { responses?: Record<string, unknown> }>>;
        components: { schemas: Record<string, unknown>; securitySchemes: Record<string, unknown> };
      }>();
      expect(doc.openapi).to.match(/^3\.0\.\d+$/);

      const served = registeredRoutes(s.app)
        .filter((r) => r.path !== "/openapi.json")
        .map((r) => `${r.method} ${openApiPath(r.path)}`)
        .sort();
      const documented = Object.entries(doc.paths)
        .flatMap(([path, operations]) => Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`))
        .sort();
      expect(documented).to.deep.equal(served);
      expect(served.length).to.be.at.least(20);

      expect(doc.components.schemas).to.have.property("ErrorEnvelope");
      // The service admin's key (X-Admin-Key) opens the admin routes only.
      expect(doc.components.securitySchemes).to.have.keys(["apiKey", "session", "adminKey"]);
      // Every documented error answer is the envelope.
      let errorAnswers = 0;
      for (const [path, operations] of Object.entries(doc.paths)) {
        for (const [method, operation] of Object.entries(operations)) {
          for (const [status, answer] of Object.entries(operation.responses ?? {})) {
            if (Number(status) < 400) continue;
            errorAnswers++;
            expect(JSON.stringify(answer), `${method} ${path} ${status}`).to.include("#/components/schemas/ErrorEnvelope");
          }
        }
      }
      expect(errorAnswers).to.be.at.least(20);
      const envelope = JSON.stringify(doc.components.schemas.ErrorEnvelope);
      for (const code of ["INVALID_JSON", "RATE_LIMITED", "NOT_READY"]) expect(envelope).to.include(code);
    });
  });

  describe("health", function () {
    it("GET /health answers liveness", async function () {
      const answer = await s.call<{ status: string; time: number; leases: string[] }>("GET", "/health");
      expect(answer.status).to.equal(200);
      expect(answer.body.data.status).to.equal("ok");
      // The harness runs its indexer and outbox itself, holding no lease.
      expect(answer.body.data.leases).to.deep.equal([]);
      expect(answer.body.data.time).to.be.closeTo(Date.now(), 60_000);
    });

    it("GET /health/ready reports lag per chain, and 503 NOT_READY while the indexer is behind", async function () {
      const never = await s.call("GET", "/health/ready");
      expectError(never, 503, "NOT_READY");

      await s.sync();
      const ready = await s.call<{
        ready: boolean;
        chains: Array<{ chain: string; lagBlocks: number; headBlock: number; indexedBlock: number; ready: boolean }>;
      }>("GET", "/health/ready");
      expect(ready.status).to.equal(200);
      expect(ready.body.data.ready).to.equal(true);
      expect(ready.body.data.chains).to.have.length(1);
      expect(ready.body.data.chains[0]).to.include({ chain: "arc", lagBlocks: 0, ready: true });
      expect(ready.body.data.chains[0]!.indexedBlock).to.equal(ready.body.data.chains[0]!.headBlock);

      await mine(READY_LAG_BLOCKS); // within the allowance
      expect((await s.call("GET", "/health/ready")).status).to.equal(200);
      await mine(5);
      const behind = await s.call("GET", "/health/ready");
      expectError(behind, 503, "NOT_READY");
      expect(behind.body.error.details?.[0]).to.include({ chain: "arc", lagBlocks: READY_LAG_BLOCKS + 5, ready: false });

      await s.sync();
      expect((await s.call("GET", "/health/ready")).status).to.equal(200);
    });

    it("GET /api/v1/health/settlement describes the posting chain", async function () {
      const answer = await s.call<{ chains: Array<Record<string, unknown>> }>("GET", "/api/v1/health/settlement");
      expect(answer.status).to.equal(200);
      expect(answer.body.data.chains).to.deep.equal([
        {
          chain: "arc",
          chainId: s.chainConfig.chainId,
          escrowAddress: s.escrowAddress,
          token: s.token,
          postable: true,
          batchCreate: { supported: true, maxBatch: 20 },
        },
      ]);
      // No custody key on this server: nothing to wrap a custody copy to.
      expect(answer.body.data).to.have.property("custodyPublicKey", null);
    });

    it("an escrow without batch creation (the arc deployment) reports it unsupported, read from the chain once", async function () {
      // A node answering maxBatch() as ethers reports a revert (the deployed arc escrow has no such function).
      let calls = 0;
      const node = {
        call: async () => {
          calls += 1;
          throw Object.assign(new Error("execution reverted"), { code: "CALL_EXCEPTION" });
        },
      } as unknown as Provider;
      const chain = createChains([s.chainConfig], { provider: () => node }).require("arc");
      expect(await chain.batchCreate()).to.deep.equal({ supported: false, maxBatch: 1 });
      // The public settlement route asks on every call: it must not reach the node each time.
      expect(await chain.batchCreate()).to.deep.equal({ supported: false, maxBatch: 1 });
      expect(calls).to.equal(1);
    });

    it("a node that does not answer maxBatch() is CHAIN_UNAVAILABLE, and asked again next time", async function () {
      let calls = 0;
      const node = {
        call: async () => {
          calls += 1;
          if (calls === 1) throw Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:8545"), { code: "NETWORK_ERROR" });
          return "0x" + (20).toString(16).padStart(64, "0");
        },
      } as unknown as Provider;
      const chain = createChains([s.chainConfig], { provider: () => node }).require("arc");
      const refused = await chain.batchCreate().catch((e: unknown) => e);
      expect((refused as { code?: string }).code).to.equal("CHAIN_UNAVAILABLE");
      expect(await chain.batchCreate()).to.deep.equal({ supported: true, maxBatch: 20 });
      expect(calls).to.equal(2);
    });
  });

  describe("upload", function () {
    let key: string;
    beforeEach(async function () {
      key = await s.apiKeyFor(s.poster);
    });
    const upload = (data: unknown, credential: string | undefined = key) =>
      s.call<{ rootHash: string; size: number }>("POST", "/api/v1/storage/upload", { body: { data }, key: credential });
    const sha256 = (bytes: Buffer) => `0x${createHash("sha256").update(bytes).digest("hex")}`;

    it("stores bytes under 0x + SHA-256; the same content twice gives the same rootHash and one row", async function () {
      const bytes = Buffer.from("ciphertext \u00e9\u4e2d\u{1F600} bytes \u0000\u00ff");
      const first = await upload(bytes.toString("base64"));
      expect(first.status).to.equal(200);
      expect(first.body.data).to.deep.equal({ rootHash: sha256(bytes), size: bytes.length });
      const second = await upload(bytes.toString("base64"));
      expect(second.body.data.rootHash).to.equal(first.body.data.rootHash);
      expect(await s.db.selectFrom("blobs").selectAll().execute()).to.have.length(1);
      const other = await upload(Buffer.from("other").toString("base64"));
      expect(other.body.data.rootHash).to.equal(sha256(Buffer.from("other")));
      expect(await s.db.selectFrom("blobs").selectAll().execute()).to.have.length(2);
    });

    it("the same content uploaded many times at once: every upload answers its rootHash, one blob and one row", async function () {
      const bytes = Buffer.alloc(2_000_000, 7);
      const answers = await Promise.all(Array.from({ length: 8 }, () => upload(bytes.toString("base64"))));
      expect(answers.map((a) => [a.status, a.body.data?.rootHash])).to.deep.equal(Array.from({ length: 8 }, () => [200, sha256(bytes)]));
      expect(await s.db.selectFrom("blobs").selectAll().execute()).to.have.length(1);
      const stored = await s.call<{ data: string }>("GET", `/api/v1/storage/${sha256(bytes)}`);
      expect(Buffer.from(stored.body.data.data, "base64").equals(bytes)).to.equal(true);
    });

    it("a store that fails answers 503 STORAGE_FAILED (retryable) and records nothing", async function () {
      await s.close();
      const failing: BlobStore = {
        put: async () => {
          throw new Error("disk full");
        },
        get: async () => undefined,
        has: async () => false,
        delete: async () => undefined,
      };
      s = await startTestServer({ blobs: failing });
      const answer = await upload(Buffer.from("brief").toString("base64"), await s.apiKeyFor(s.poster));
      expectError(answer, 503, "STORAGE_FAILED");
      expect(answer.body.error.message).to.not.include("disk full");
      expect(await s.db.selectFrom("blobs").selectAll().execute()).to.have.length(0);
    });

    it("UPLOAD_EMPTY, INVALID_BASE64, AUTH_REQUIRED", async function () {
      expectError(await upload(""), 400, "UPLOAD_EMPTY");
      for (const data of ["abc", "aGVsbG8", "@@@@", "aGVs bG8=", "aGVsbG8=\n", "a-_b", "====", "A===", "aGVsbG8=aGVs"]) {
        expectError(await upload(data), 400, "INVALID_BASE64");
      }
      expectError(await upload("aGVsbG8=", ""), 401, "AUTH_REQUIRED");
      const wrongType = await upload(42);
      expectError(wrongType, 400, "VALIDATION_FAILED");
      expect(wrongType.body.error.details?.[0]?.field).to.equal("body.data");
      expect(await s.db.selectFrom("blobs").selectAll().execute()).to.have.length(0);
    });

    it("accepts exactly 10 MB and refuses one byte more (UPLOAD_TOO_LARGE 413)", async function () {
      const atLimit = Buffer.alloc(MAX_UPLOAD_BYTES, 7);
      const accepted = await upload(atLimit.toString("base64"));
      expect(accepted.status).to.equal(200);
      expect(accepted.body.data).to.deep.equal({ rootHash: sha256(atLimit), size: MAX_UPLOAD_BYTES });
      const over = await upload(Buffer.alloc(MAX_UPLOAD_BYTES + 1, 7).toString("base64"));
      expectError(over, 413, "UPLOAD_TOO_LARGE");
      expect(await s.db.selectFrom("blobs").selectAll().execute()).to.have.length(1);
    });
  });
});
