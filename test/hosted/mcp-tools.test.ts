/**
 * MCP tools of hosted agents: a real MCP server (the official SDK, on loopback) answering plain JSON and, once, over
 * SSE. The service lists its tools at deploy; during a paid task the scripted model asks for a call, the agent calls
 * `tools/call` with the stored auth header, the answer reaches the delivered output, and no secret reaches the model.
 * The manual MCP type posts `{ tool, input }`. Refusals: an unreachable or empty server, a tool name over 64.
 */
import { expect } from "chai";
import type { Stack } from "../support/stack";
import type { ModelRequest, ModelServer } from "../support/model-server";
import { startMcpToolServer } from "../support/mcp-tool-server";
import { publicKeyFromPrivateKey } from "@market/core/crypto";
import { privateKeyOf } from "../server/harness";
import { expectError } from "../server/expect";
import { agentOptions, clientOf, keyedClientOf, startedAgent, statusOf, until, sharedStackAndModel } from "./helpers";

const toolResults = (request: ModelRequest) => request.messages.filter((m) => m.role === "tool").map((m) => m.content ?? "");
const SECRET = "wx-secret-7f3a9c";
const MANUAL_SECRET = "manual-key-51be";

describe("hosted agents: MCP tools", function () {
  this.timeout(180_000);
  let s: Stack;
  let model: ModelServer;

  sharedStackAndModel((stack, server) => ((s = stack), (model = server)));

  for (const mode of ["json", "sse"] as const) {
    it(`lists an MCP server's tools at deploy and calls one during a paid task (${mode === "json" ? "plain JSON" : "SSE"} answers)`, async function () {
      const mcp = await startMcpToolServer({ mode });
      try {
        model.setTool((request) => ({ body: JSON.stringify({ echoed: JSON.parse(request.body) as unknown }) }));
        model.setScript((request) => {
          if (request.model !== `mcp-${mode}`) return { content: "wrong model" };
          const results = toolResults(request);
          if (results.length === 0) return { toolCalls: [{ name: "get_forecast", arguments: { city: "Lisbon" } }] };
          if (results.length === 1) return { toolCalls: [{ name: "almanac", arguments: { input: "sunrise Lisbon" } }] };
          return { content: `Weather report. ${results[0]} Almanac: ${results[1]!.split("\n")[0]}.` };
        });
        const { client, agent } = await startedAgent(
          s,
          s.stranger,
          agentOptions(model, {
            model: { baseUrl: model.baseUrl, name: `mcp-${mode}` },
            tools: [
              { type: "mcp", name: "weather", url: mcp.url, auth: { type: "bearer", keyName: "Authorization", secretRef: "weather" } },
              {
                type: "mcp_manual",
                name: "almanac",
                description: "Sunrise and sunset times.",
                url: `${model.origin}/tools/almanac`,
                toolName: "sun-times",
                auth: { type: "header", keyName: "X-Almanac-Key", secretRef: "almanac" },
              },
            ],
            toolSecrets: { weather: SECRET, almanac: MANUAL_SECRET },
          }),
        );
        // Listed once at deploy, with the stored auth header; shown publicly with the header masked.
        const listings = mcp.requests.filter((r) => r.body.includes('"tools/list"'));
        expect(listings).to.have.length(1);
        expect(listings[0]!.headers.authorization).to.equal(`Bearer ${SECRET}`);
        const shown = (await client.myAgents()).agents.find((a) => a.id === agent.id)!.tools.find((t) => t.name === "weather")!;
        expect(shown).to.deep.include({ type: "mcp", method: "MCP", url: mcp.url, headers: { Authorization: "Bearer ****" } });
        expect(shown.tools).to.deep.equal(["get_forecast", "ping"]);

        const { client: poster, key: posterKey } = await keyedClientOf(s, s.poster);
        const { taskHash } = await poster.postTask({
          instructions: `What is the weather in Lisbon today? (${mode})`,
          amountRaw: 1_000_000n,
          privacy: "public",
          capabilities: ["summarization"],
          targetExecutor: agent.address,
        });
        await until(async () => (await statusOf(s, posterKey, taskHash!)).status === "verified", 60_000, "the task verified");
        const output = (await statusOf(s, posterKey, taskHash!)).output!;
        expect(output).to.include("Forecast for Lisbon: sunny, 21 degrees");
        expect(output).to.include("HTTP 200");

        // The MCP server got tools/call with the stored auth header; the manual tool got { tool, input } and its header.
        expect(mcp.calls).to.deep.equal([{ name: "get-forecast", args: { city: "Lisbon" } }]);
        const call = mcp.requests.find((r) => r.body.includes('"tools/call"'))!;
        expect(call.headers.authorization).to.equal(`Bearer ${SECRET}`);
        const manual = model.toolRequests.find((r) => r.path === "/tools/almanac")!;
        expect(JSON.parse(manual.body)).to.deep.equal({ tool: "sun-times", input: "sunrise Lisbon" });
        expect(manual.headers["x-almanac-key"]).to.equal(MANUAL_SECRET);

        // The model saw the MCP tools' names and schemas, never a secret.
        const mine = model.requests.filter((r) => r.model === `mcp-${mode}`);
        expect(mine[0]!.tools!.map((t) => t.function.name)).to.include.members(["get_forecast", "ping", "almanac"]);
        const seen = JSON.stringify(mine);
        expect(seen).not.to.include(SECRET);
        expect(seen).not.to.include(MANUAL_SECRET);
        if (process.env.MCP_TRANSCRIPT) console.log(JSON.stringify(mine.at(-1)!.messages, null, 2));
      } finally {
        await mcp.close();
      }
    });
  }

  it("refuses an MCP server that cannot be reached or lists nothing, and a tool name over 64 characters: nothing stored", async function () {
    const { key } = await keyedClientOf(s, s.worker);
    const empty = await startMcpToolServer({ mode: "json", empty: true });
    const closed = await startMcpToolServer({ mode: "json" });
    const closedUrl = closed.url;
    await closed.close();
    const before = await s.db.selectFrom("hosted_agents").select("id").execute();
    const deploy = (tools: unknown[]) =>
      s.call("POST", "/api/v1/agents", {
        key,
        body: {
          displayName: "MCP agent",
          instructions: "Answer.",
          model: { baseUrl: model.baseUrl, name: "m" },
          ownerPublicKey: publicKeyFromPrivateKey(privateKeyOf(s.worker)),
          start: false,
          tools,
        },
      });
    try {
      expectError(await deploy([{ type: "mcp", name: "gone", url: closedUrl }]), "MCP_SERVER_UNREACHABLE");
      expectError(await deploy([{ type: "mcp", name: "empty", url: empty.url }]), "MCP_SERVER_EMPTY");
      const long = "t".repeat(65);
      expectError(
        await deploy([
          { name: long, description: "Too long a name.", parameters: { type: "object", properties: {} }, method: "GET", url: "https://example.com/" },
        ]),
        "TOOL_NAME_TOO_LONG",
      );
      expectError(
        await deploy([{ type: "mcp_manual", name: "send_message", description: "Clash.", url: "https://example.com/" }]),
        "VALIDATION_FAILED",
      );
      expect(await s.db.selectFrom("hosted_agents").select("id").execute()).to.deep.equal(before);
      // The one listing request of the empty server carried no secret it was not given.
      expect(empty.requests.every((r) => r.headers.authorization === undefined)).to.equal(true);
    } finally {
      await empty.close();
    }
  });

  it("refuses an MCP tool whose auth names a secret the deploy does not give (before any request)", async function () {
    const mcp = await startMcpToolServer({ mode: "json" });
    try {
      const client = await clientOf(s, s.worker);
      // The auth names a secret the deploy did not give: the listing cannot be authenticated, the deploy is refused.
      const refused = await client
        .deployAgent(
          agentOptions(model, {
            tools: [{ type: "mcp", name: "weather", url: mcp.url, auth: { type: "bearer", keyName: "Authorization", secretRef: "nope" } }],
          }),
        )
        .catch((e: { code: string }) => e.code);
      expect(refused).to.equal("VALIDATION_FAILED");
      expect(mcp.requests).to.have.length(0);
    } finally {
      await mcp.close();
    }
  });
});
