/**
 * Public discovery: the platform card (where the API, its OpenAPI document, MCP and agent cards are) and each
 * registered agent's card.
 */
import { expect } from "chai";
import { Wallet } from "ethers";
import { PUBLIC_URL, startTestServer, type Answer, type TestServer } from "./harness";

function expectError(answer: Answer, status: number, code: string) {
  expect(answer.body.error?.code, JSON.stringify(answer.body)).to.equal(code);
  expect(answer.status).to.equal(status);
}

interface PlatformCard {
  name: string;
  url: string;
  skills: unknown[];
  market: {
    api: { baseUrl: string };
    openapi: string;
    agentCardUrlTemplate: string;
    mcp: { url: string; auth: string; available: boolean };
  };
}

interface AgentCard {
  name: string;
  url: string;
  publicKey: string | null;
  capabilityTags: string[];
  supportedChains: string[] | null;
  reputation: number;
  tasksCompleted: number;
  skills: unknown[];
  market: { address: string; hire: Record<string, string> };
}

/** A URL the platform card names, as a path this app serves. */
const localPath = (url: string) => {
  expect(url.startsWith(PUBLIC_URL), url).to.equal(true);
  return url.slice(PUBLIC_URL.length);
};

describe("server: discovery", function () {
  let s: TestServer;
  beforeEach(async function () {
    s = await startTestServer();
  });
  afterEach(async function () {
    await s.close();
  });

  const raw = async <T>(url: string): Promise<Answer<T> & { json: T }> => {
    const answer = await s.call<T>("GET", url);
    return { ...answer, json: answer.body as unknown as T };
  };

  describe("platform card", function () {
    it("is served at /.well-known/agent.json and /.well-known/agent-card.json alike", async function () {
      const legacy = await raw<PlatformCard>("/.well-known/agent.json");
      const current = await raw<PlatformCard>("/.well-known/agent-card.json");
      expect(legacy.status).to.equal(200);
      expect(current.status).to.equal(200);
      expect(current.json).to.deep.equal(legacy.json);
      expect(legacy.headers["content-type"]).to.match(/^application\/json/);
    });

    it("names the A2A endpoint, the API, the OpenAPI document, the MCP endpoint and the agent-card template", async function () {
      const card = (await raw<PlatformCard>("/.well-known/agent.json")).json;
      expect(card.name).to.be.a("string").and.not.equal("");
      expect(card.url).to.equal(`${PUBLIC_URL}/a2a/v1`);
      // Both generations of A2A clients read it: v1.0's supportedInterfaces beside v0.3's url, transport and version.
      const v1 = card as unknown as { supportedInterfaces: unknown[]; preferredTransport: string; protocolVersion: string };
      expect(v1.supportedInterfaces).to.deep.equal([
        { url: `${PUBLIC_URL}/a2a/v1`, protocolBinding: "JSONRPC", protocolVersion: "1.0" },
        { url: `${PUBLIC_URL}/a2a/v1`, protocolBinding: "JSONRPC", protocolVersion: "0.3.0" },
      ]);
      expect([v1.preferredTransport, v1.protocolVersion]).to.deep.equal(["JSONRPC", "0.3.0"]);
      expect(card.skills).to.be.an("array").with.length.above(0);
      expect(card.market.api.baseUrl).to.equal(`${PUBLIC_URL}/api/v1`);

      expect(card.market.mcp.url).to.match(/^https?:\/\/.+\/mcp$/);
      expect(card.market.mcp.auth).to.include("X-API-Key");
      expect(card.market.mcp.available).to.be.a("boolean");

      const openapi = await s.app.inject({ method: "GET", url: localPath(card.market.openapi) });
      expect(openapi.statusCode).to.equal(200);
      expect(openapi.json().openapi).to.match(/^3\.0\./);

      expect(card.market.agentCardUrlTemplate).to.include("{address}");
      expect(localPath(card.market.agentCardUrlTemplate)).to.equal("/.well-known/agents/{address}.json");

      // The A2A endpoint it names answers JSON-RPC.
      const rpc = await s.app.inject({ method: "POST", url: localPath(card.url), payload: { jsonrpc: "2.0", id: 1, method: "tasks/list" } });
      expect(rpc.json()).to.include({ jsonrpc: "2.0", id: 1 });
    });
  });

  describe("agent cards", function () {
    it("describes a registered agent: key, tags, chains, reputation, skills and how to hire it", async function () {
      await s.registerAgent(s.worker, ["web_research", "translation"], { displayName: "Researcher" });
      const template = (await raw<PlatformCard>("/.well-known/agent.json")).json.market.agentCardUrlTemplate;
      const answer = await raw<AgentCard>(localPath(template.replace("{address}", s.worker.address)));
      expect(answer.status).to.equal(200);
      const card = answer.json;
      expect(card.name).to.equal("Researcher");
      expect(card.url).to.equal(`${PUBLIC_URL}/a2a/v1`);
      // Both generations of A2A clients read it: v1.0's supportedInterfaces beside v0.3's url, transport and version.
      const v1 = card as unknown as { supportedInterfaces: unknown[]; preferredTransport: string; protocolVersion: string };
      expect(v1.supportedInterfaces).to.deep.equal([
        { url: `${PUBLIC_URL}/a2a/v1`, protocolBinding: "JSONRPC", protocolVersion: "1.0" },
        { url: `${PUBLIC_URL}/a2a/v1`, protocolBinding: "JSONRPC", protocolVersion: "0.3.0" },
      ]);
      expect([v1.preferredTransport, v1.protocolVersion]).to.deep.equal(["JSONRPC", "0.3.0"]);
      expect(card.publicKey).to.match(/^04[0-9a-f]{128}$/);
      expect(card.publicKey).to.have.length(130);
      expect(card.capabilityTags).to.deep.equal(["translation", "web_research"]);
      expect(card.supportedChains).to.deep.equal(["arc"]);
      expect(card.reputation).to.equal(50);
      expect(card.tasksCompleted).to.equal(0);
      expect(card.skills).to.be.an("array");
      expect(card.market.address).to.equal(s.worker.address);
      expect(card.market.hire.api).to.include(`targetExecutor=${s.worker.address}`);
      expect(card.market.hire.api).to.include("/api/v1/tasks");
    });

    it("finds the agent by a lowercase address, and shows a null key for an agent registered without one", async function () {
      const key = await s.apiKeyFor(s.stranger);
      expect((await s.call("POST", "/api/v1/a2a/register", { key, body: { capabilities: ["testing"] } })).status).to.equal(200);
      const card = await raw<AgentCard>(`/.well-known/agents/${s.stranger.address.toLowerCase()}.json`);
      expect(card.status).to.equal(200);
      expect(card.json.market.address).to.equal(s.stranger.address);
      expect(card.json.name).to.equal(s.stranger.address);
      expect(card.json.publicKey).to.equal(null);
      expect(card.json.supportedChains).to.equal(null);
    });

    it("EXECUTOR_NOT_FOUND (404) for an address nobody registered", async function () {
      await s.registerAgent(s.worker);
      expectError(await s.call("GET", `/.well-known/agents/${s.poster.address}.json`), 404, "EXECUTOR_NOT_FOUND");
      expectError(await s.call("GET", `/.well-known/agents/${Wallet.createRandom().address}.json`), 404, "EXECUTOR_NOT_FOUND");
    });

    it("INVALID_ADDRESS (400) for <not an address>.json; NOT_FOUND (404) for a path that is not <address>.json", async function () {
      const flipped = `0x${[...s.worker.address.slice(2)].map((c) => (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase())).join("")}`;
      for (const file of ["foo.json", "0x123.json", `${s.worker.address}.json.json`, `${flipped}.json`, "%2e%2e.json", ".json"]) {
        expectError(await s.call("GET", `/.well-known/agents/${file}`), 400, "INVALID_ADDRESS");
      }
      for (const file of [s.worker.address, `${s.worker.address}.xml`]) {
        expectError(await s.call("GET", `/.well-known/agents/${file}`), 404, "NOT_FOUND");
      }
    });

    it("is in the OpenAPI document as /.well-known/agents/{address}.json", async function () {
      const { paths } = (await s.app.inject({ method: "GET", url: "/openapi.json" })).json<{
        paths: Record<string, { get: { parameters: Array<{ name: string; in: string }> } }>;
      }>();
      const card = paths["/.well-known/agents/{address}.json"];
      expect(card?.get.parameters.map((p) => [p.name, p.in])).to.deep.equal([["address", "path"]]);
    });
  });
});
