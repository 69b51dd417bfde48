/**
 * Authentication as a hook, over every route (issue 24, item 5): each route whose OpenAPI entry asks for a credential
 * refuses a request without one (`AUTH_REQUIRED`) or with a wrong one (`INVALID_TOKEN`), and an admin route a request
 * without the admin key (`ADMIN_REQUIRED`), before its parameters and body are read: the refusal is the same whatever
 * garbage they hold, which only an `onRequest` hook gives (a check in the handler comes after validation). The routes
 * are read from the OpenAPI document, itself checked against the routes Fastify serves (test/server/http.test.ts).
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { expect } from "chai";
import { startTestServer, type TestServer } from "./harness";
import { registeredRoutes } from "./registered-routes";
import { expectOk } from "./expect";
import { SETTLEMENT_ACTIONS } from "@market/core/api";

type Security = Array<Record<string, string[]>>;
interface OpenApiDoc {
  paths: Record<string, Record<string, { security?: Security; requestBody?: unknown }>>;
}

/**
 * `POST /mcp` takes an API key only and hands that very key to the tools it runs, so it reads the credential itself
 * (`INVALID_TOKEN` for anything else, test/mcp/http.test.ts).
 */
const CHECKED_IN_HANDLER = new Set(["POST /mcp"]);

describe("server: routes that need a credential refuse before reading the request", function () {
  this.timeout(120_000);
  let s: TestServer;
  let doc: OpenApiDoc;

  before(async function () {
    s = await startTestServer();
    doc = (await s.app.inject({ method: "GET", url: "/openapi.json" })).json<OpenApiDoc>();
  });
  after(async function () {
    await s?.close();
  });

  /** Every documented operation, its path parameters filled with values no route accepts. */
  function operations(kind: (security: Security) => boolean) {
    return Object.entries(doc.paths).flatMap(([path, methods]) =>
      Object.entries(methods)
        .filter(([method, operation]) => operation.security && kind(operation.security) && !CHECKED_IN_HANDLER.has(`${method.toUpperCase()} ${path}`))
        .map(([method, operation]) => ({
          name: `${method.toUpperCase()} ${path}`,
          method: method.toUpperCase() as "GET" | "POST" | "PATCH" | "DELETE",
          url: path.replace(/\{[A-Za-z0-9_]+\}/g, "not-a-valid-value"),
          hasBody: operation.requestBody !== undefined,
        })),
    );
  }
  const needsCredential = (security: Security) => security.length > 0 && security.every((s) => "apiKey" in s || "session" in s);
  const needsAdmin = (security: Security) => security.some((s) => "adminKey" in s);

  async function refusal(op: ReturnType<typeof operations>[number], headers: Record<string, string>) {
    const answer = await s.app.inject({
      method: op.method,
      url: op.url,
      headers: { ...headers, ...(op.hasBody ? { "content-type": "application/json" } : {}) },
      ...(op.hasBody ? { payload: JSON.stringify({ notAField: ["garbage"] }) } : {}),
    });
    return `${answer.statusCode} ${answer.json<{ error?: { code?: string } }>().error?.code}`;
  }

  it("each route asking for a credential: AUTH_REQUIRED without one, INVALID_TOKEN with a wrong one, whatever its params and body", async function () {
    const ops = operations(needsCredential);
    expect(ops.length).to.be.at.least(50);
    const missing: string[] = [];
    const wrong: string[] = [];
    for (const op of ops) {
      missing.push(`${op.name}: ${await refusal(op, {})}`);
      wrong.push(`${op.name}: ${await refusal(op, { "x-api-key": "sk_not-a-key-of-this-service" })}`);
    }
    expect(missing).to.deep.equal(ops.map((op) => `${op.name}: 401 AUTH_REQUIRED`));
    expect(wrong).to.deep.equal(ops.map((op) => `${op.name}: 401 INVALID_TOKEN`));
  });

  it("each admin route: ADMIN_REQUIRED without the admin key or with a wrong one, whatever its params and body", async function () {
    const ops = operations(needsAdmin);
    expect(ops.map((op) => op.name).sort()).to.deep.equal([
      "DELETE /api/v1/admin/badges/{address}/{kind}/{name}",
      "GET /api/v1/admin/disputes",
      "POST /api/v1/admin/badges",
    ]);
    for (const op of ops) {
      expect(await refusal(op, {}), op.name).to.equal("403 ADMIN_REQUIRED");
      expect(await refusal(op, { "x-admin-key": "not-the-admin-key" }), op.name).to.equal("403 ADMIN_REQUIRED");
    }
  });

  it("a hosted agent's own token is refused by the account's routes before their body is read (HOSTED_AGENT_TOKEN_REFUSED)", async function () {
    const ownerKey = await s.apiKeyFor(s.stranger);
    const agent = await s.deployHostedAgent(s.stranger, ownerKey, { displayName: "Token holder", instructions: "Answer briefly." });
    expectOk(await s.call("POST", `/api/v1/agents/${agent.id}/start`, { key: ownerKey }));
    const token = await s.agentToken(agent.id);
    const accountRoutes = [
      { method: "POST", url: "/api/v1/api-keys" },
      { method: "POST", url: "/api/v1/agents" },
      { method: "PATCH", url: "/api/v1/agents/not-a-valid-value" },
      { method: "POST", url: "/api/v1/skills" },
      { method: "POST", url: "/api/v1/agents/not-a-valid-value/services" },
    ] as const;
    for (const route of accountRoutes) {
      const answer = await s.app.inject({
        ...route,
        headers: { "x-api-key": token, "content-type": "application/json" },
        payload: JSON.stringify({ notAField: ["garbage"] }),
      });
      expect(`${answer.statusCode} ${answer.json<{ error: { code: string } }>().error.code}`, `${route.method} ${route.url}`).to.equal(
        "403 HOSTED_AGENT_TOKEN_REFUSED",
      );
    }
  });

  it("every settlement action of core/api is served under the marketplace's prefix, the SDK's `settle` names", function () {
    const served = new Set(registeredRoutes(s.app).map((r) => `${r.method} ${r.path}`));
    for (const action of SETTLEMENT_ACTIONS) expect(served, action).to.include(`POST /api/v1/a2a/tasks/:taskHash/${action}`);
  });
});

describe("server: route plugins take a prefix", function () {
  /** The server's TypeScript files, the indexer's included. */
  const sources = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
      const full = path.join(dir, entry.name);
      return entry.isDirectory() ? sources(full) : entry.name.endsWith(".ts") ? [full] : [];
    });

  it("no route definition spells the API's version prefix: each plugin is registered under its prefix (app.ts)", function () {
    const root = path.resolve(__dirname, "../../server");
    const definition = /\b(?:app|scope)\.(?:get|post|put|patch|delete|head|all)\(\s*["'`]\/api\/v1|\burl:\s*["'`]\/api\/v1/g;
    const found = sources(root).flatMap((file) => {
      const text = readFileSync(file, "utf8");
      return [...text.matchAll(definition)].map((m) => `${path.relative(root, file)}:${text.slice(0, m.index).split("\n").length}`);
    });
    expect(found).to.deep.equal([]);
    // The check reads what it means to: a definition spelled with the prefix is found.
    expect('app.post(\n    "/api/v1/tasks",'.match(definition)).to.have.length(1);
  });
});
