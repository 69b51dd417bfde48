/**
 * How the API's server serves the web app (issue 28, item 1; server/web): content types, immutable caching of hashed
 * assets and no caching of index.html, the Content-Security-Policy on every page response, the app's own paths
 * answered with index.html for a browser, and the API's paths still answering the JSON envelope.
 */
import { expect } from "chai";
import { readdirSync } from "node:fs";
import path from "node:path";
import { startTestServer, type TestServer } from "../server/harness";
import { CONTENT_SECURITY_POLICY, WEB_DIST, webBuilt } from "../../server/web";

describe("web: the server serves the built app", function () {
  let s: TestServer;
  before(async function () {
    if (!webBuilt()) throw new Error(`the web app is not built (${WEB_DIST}): run npm run build`);
    s = await startTestServer({ web: true });
  });
  after(async function () {
    await s?.close();
  });

  const html = { accept: "text/html,application/xhtml+xml" };

  it("serves index.html at / and at the app's own paths, never cached, with the strict CSP", async function () {
    for (const url of ["/", "/tasks", "/tasks/0xabc?x=1", "/agents/0x0000000000000000000000000000000000000001", "/post/bulk"]) {
      const response = await s.app.inject({ method: "GET", url, headers: html });
      expect(response.statusCode, url).to.equal(200);
      expect(response.headers["content-type"]).to.equal("text/html; charset=utf-8");
      expect(response.headers["cache-control"]).to.equal("no-cache");
      expect(response.headers["content-security-policy"]).to.equal(CONTENT_SECURITY_POLICY);
      expect(response.headers["x-content-type-options"]).to.equal("nosniff");
      expect(response.body).to.contain('<div id="root"></div>');
      // No inline script: the only script is the hashed module under /assets.
      expect(response.body).to.not.match(/<script(?![^>]*\bsrc="\/assets\/)[^>]*>/);
    }
    expect(CONTENT_SECURITY_POLICY).to.contain("script-src 'self'").and.contain("connect-src 'self'").and.contain("object-src 'none'");
  });

  it("serves the hashed assets with their content type, cached for good", async function () {
    const assets = readdirSync(path.join(WEB_DIST, "assets"));
    const js = assets.find((f) => f.endsWith(".js"))!;
    const css = assets.find((f) => f.endsWith(".css"))!;
    for (const [file, type] of [
      [js, /^(text|application)\/javascript; charset=utf-8$/],
      [css, /^text\/css; charset=utf-8$/],
    ] as const) {
      const response = await s.app.inject({ method: "GET", url: `/assets/${file}` });
      expect(response.statusCode, file).to.equal(200);
      expect(response.headers["content-type"]).to.match(type);
      expect(response.headers["cache-control"]).to.equal("public, max-age=31536000, immutable");
      expect(response.headers["content-security-policy"]).to.equal(CONTENT_SECURITY_POLICY);
      expect(response.headers.etag).to.be.a("string");
    }
  });

  it("keeps the API's answers: unknown API paths, other methods and non-browser asks get the JSON NOT_FOUND", async function () {
    for (const [method, url, headers] of [
      ["GET", "/api/v1/nope", html],
      ["GET", "/health/nope", html],
      ["GET", "/.well-known/nope", html],
      ["GET", "/tasks", {}],
      ["POST", "/tasks", html],
      ["GET", "/assets/missing-0000.js", {}],
    ] as const) {
      const response = await s.app.inject({ method, url, headers });
      expect(response.statusCode, `${method} ${url}`).to.equal(404);
      expect(response.json<{ error: { code: string } }>().error.code).to.equal("NOT_FOUND");
    }
    const health = await s.app.inject({ method: "GET", url: "/health", headers: html });
    expect(health.statusCode).to.equal(200);
    expect(health.headers["content-type"]).to.match(/^application\/json/);
  });

  it("is off when the server is not given the app: the API alone", async function () {
    const api = await startTestServer();
    try {
      const response = await api.app.inject({ method: "GET", url: "/tasks", headers: html });
      expect(response.statusCode).to.equal(404);
      expect(response.json<{ error: { code: string } }>().error.code).to.equal("NOT_FOUND");
    } finally {
      await api.close();
    }
  });
});
