/**
 * `market skills`: import a SKILL.md (refusals with their code, nothing stored), list the registry (--json), install
 * into and remove from the caller's hosted agent through the SDK's skills module; the SDK's updateAgent too. The OpenAPI
 * import helpers: `market tools import-openapi <file|url>` and `client.importOpenApi(...)`, with their refusals.
 */
import { expect } from "chai";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { readFileSync } from "node:fs";
import path from "node:path";
import { ApiError } from "../../sdk/src/errors";
import { startStack, type Stack } from "../support/stack";
import { cliEnv, ensureCliBuilt, runCli, taskDir } from "../support/cli";
import { MarketClient } from "../../sdk/src/client";

const SKILL_MD = `---
name: Invoice Reader
description: Reads invoices.
version: 1.2.0
---
Read every line item and total them.
`;

describe("CLI: market skills", function () {
  this.timeout(180_000);
  let s: Stack;

  before(async function () {
    ensureCliBuilt();
    s = await startStack();
  });
  after(async function () {
    await s.close();
  });

  it("imports a SKILL.md, lists the registry, installs into and removes from a hosted agent", async function () {
    const env = await cliEnv(s, s.stranger);
    const cwd = taskDir({ "SKILL.md": SKILL_MD, "broken/SKILL.md": "---\ndescription: no name\n---\nBody\n" });
    const refused = await runCli(["skills", "import", "broken/SKILL.md"], { env, cwd });
    expect(refused.status).to.not.equal(0);
    expect(refused.stderr).to.contain("SKILL_NAME_MISSING");
    expect(await s.db.selectFrom("skills").select("id").execute()).to.deep.equal([]);

    const imported = await runCli(["skills", "import", "SKILL.md", "--public", "--tag", "finance", "--json"], { env, cwd });
    expect(imported.status, imported.stderr).to.equal(0);
    const { skill } = JSON.parse(imported.stdout) as { skill: { slug: string; version: string; capabilities: string[]; instructions: string } };
    expect(skill).to.deep.include({
      slug: "invoice-reader",
      version: "1.2.0",
      capabilities: ["finance"],
      instructions: "Read every line item and total them.",
    });

    const listed = await runCli(["skills", "list", "--tag", "finance"], { env, cwd });
    expect(listed.status, listed.stderr).to.equal(0);
    expect(listed.stdout).to.contain("invoice-reader\tInvoice Reader 1.2.0\tinstalls 0\ttags finance\ttools 0");

    const client = new MarketClient(await s.clientOptions(s.stranger, env.MARKET_API_KEY));
    const { agent } = await client.deployAgent({
      displayName: "Invoice agent",
      instructions: "Answer.",
      model: { baseUrl: "http://127.0.0.1:9/v1", name: "m" },
      start: false,
    });
    const installed = await runCli(["skills", "install", "invoice-reader", "--agent", String(agent.id)], { env, cwd });
    expect(installed.status, installed.stderr).to.equal(0);
    expect(installed.stdout).to.contain(`installed invoice-reader 1.2.0 into agent ${agent.id}`);
    expect((await client.skills.installed({ agentId: agent.id })).map((k) => k.slug)).to.deep.equal(["invoice-reader"]);
    const twice = await runCli(["skills", "install", "invoice-reader", "--agent", String(agent.id)], { env, cwd });
    expect(twice.stderr).to.contain("SKILL_ALREADY_INSTALLED");
    expect((await client.skills.get("invoice-reader")).installs).to.equal(1);

    const removed = await runCli(["skills", "remove", "invoice-reader", "--agent", String(agent.id)], { env, cwd });
    expect(removed.status, removed.stderr).to.equal(0);
    expect(await client.skills.installed({ agentId: agent.id })).to.deep.equal([]);

    // The SDK's update of the agent (applied at its next start).
    const updated = await client.skills.updateAgent({ agentId: agent.id, instructions: "Answer in French.", capabilities: ["finance"] });
    expect(updated).to.deep.include({ instructions: "Answer in French.", capabilities: ["finance"] });
  });

  const OPENAPI = {
    openapi: "3.0.3",
    info: { title: "Quotes", version: "1.0.0" },
    servers: [{ url: "https://quotes.example.com" }],
    components: { securitySchemes: { quoteKey: { type: "apiKey", in: "header", name: "X-Quote-Key" } } },
    security: [{ quoteKey: [] }],
    paths: {
      "/quotes/{symbol}": {
        get: {
          operationId: "getQuote",
          summary: "The latest quote of a symbol.",
          parameters: [{ name: "symbol", in: "path", required: true, schema: { type: "string" }, description: "The ticker." }],
        },
      },
    },
  };

  it("market tools import-openapi <file|url> and client.importOpenApi draft tools (nothing stored); YAML and over 10 MB refused with their codes", async function () {
    const env = await cliEnv(s, s.stranger);
    const cwd = taskDir({ "quotes.json": JSON.stringify(OPENAPI), "quotes.yaml": "openapi: 3.0.3\ninfo:\n  title: Quotes\n" });
    const expected = {
      name: "getQuote",
      description: "The latest quote of a symbol.",
      method: "GET",
      url: "/quotes/{symbol}",
      paramMapping: { symbol: "path" },
      auth: { type: "header", keyName: "X-Quote-Key", secretRef: "quoteKey" },
    };
    // From a file, the drafts written with --out and printed with --json.
    const fromFile = await runCli(["tools", "import-openapi", "quotes.json", "--out", "drafts.json", "--json"], { env, cwd });
    expect(fromFile.status, fromFile.stderr).to.equal(0);
    const answer = JSON.parse(fromFile.stdout) as { drafts: Array<{ tool: Record<string, unknown>; review: string[] }>; servers: string[] };
    expect(answer.servers).to.deep.equal(["https://quotes.example.com"]);
    expect(answer.drafts).to.have.length(1);
    expect(answer.drafts[0]!.tool).to.deep.include(expected);
    const written = JSON.parse(readFileSync(path.join(cwd, "drafts.json"), "utf8")) as Array<Record<string, unknown>>;
    expect(written).to.deep.equal([answer.drafts[0]!.tool]);
    const human = await runCli(["tools", "import-openapi", "quotes.json"], { env, cwd });
    expect(human.stdout).to.contain("getQuote\tGET /quotes/{symbol}");
    expect(human.stdout).to.contain("review: ");

    // From a URL (served on loopback), through the CLI and the SDK; the SDK from the document itself too.
    let served = 0;
    const server: Server = createServer((_req, res) => {
      served++;
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify(OPENAPI));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/openapi.json`;
      const fromUrl = await runCli(["tools", "import-openapi", url, "--json"], { env, cwd });
      expect(fromUrl.status, fromUrl.stderr).to.equal(0);
      expect((JSON.parse(fromUrl.stdout) as typeof answer).drafts[0]!.tool).to.deep.include(expected);
      const client = new MarketClient(await s.clientOptions(s.stranger, env.MARKET_API_KEY));
      expect((await client.importOpenApi({ url })).drafts[0]!.tool).to.deep.include(expected);
      expect((await client.importOpenApi({ document: OPENAPI })).drafts[0]!.tool).to.deep.include(expected);
      expect(served).to.equal(2);

      // Refusals: YAML (the API's TOOL_IMPORT_INVALID), over 10 MB (refused by the client before anything is sent).
      const yaml = await runCli(["tools", "import-openapi", "quotes.yaml"], { env, cwd });
      expect(yaml.status).to.not.equal(0);
      expect(yaml.stderr).to.contain("TOOL_IMPORT_INVALID");
      const huge = JSON.stringify({ ...OPENAPI, "x-padding": "x".repeat(10 * 1024 * 1024) });
      const refused = await client.importOpenApi({ document: huge }).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(refused).to.be.instanceOf(ApiError);
      expect((refused as ApiError).code).to.equal("TOOL_IMPORT_TOO_LARGE");
      const refusedFile = await runCli(["tools", "import-openapi", "big.json"], { env, cwd: taskDir({ "big.json": huge }) });
      expect(refusedFile.stderr).to.contain("TOOL_IMPORT_TOO_LARGE");
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
