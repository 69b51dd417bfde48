/**
 * Issue 23 item 7: a keyed RPC URL leaked in answers. When the provider failed, a custodied /mcp answer said
 * `WRONG_RPC: The RPC for arc (https://…/v2/<key>)`, and the same text reached the model through `delegate_to_agent`.
 * URLs are now cut to their host wherever the server's log already cut them: MCP tool errors, the runner's tool
 * errors and its failed-run records.
 */
import { expect } from "chai";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { toolError } from "../../sdk/src/mcp/tools";
import { clientError } from "../../sdk/src/errors";
import { MarketClient } from "../../sdk/src/client";
import { createRedactor } from "../../server/hosted/runner/bounds";
import { builtinTools, type ToolRunContext } from "../../server/hosted/runner/tools";

const KEY = "k3yInTh3Url0123456789";
const RPC = `https://arc-mainnet.provider.example/v2/${KEY}`;

describe("keyed RPC URLs never reach an answer or a model (issue 23 item 7)", function () {
  it("an MCP tool error names the RPC's host, not its key", function () {
    const answer = toolError(clientError("WRONG_RPC", `The RPC for arc (${RPC}) does not answer: connect ECONNREFUSED`));
    const text = JSON.stringify(answer);
    expect(text).not.to.include(KEY);
    expect((answer.content[0] as { text: string }).text).to.match(
      /^WRONG_RPC: The RPC for arc \(https:\/\/arc-mainnet\.provider\.example\/\[redacted\]/,
    );
  });

  it("delegate_to_agent's error names the RPC's host, not its key", async function () {
    // An API that refuses with a message naming a keyed RPC URL (as a provider failure is reported).
    const server: Server = createServer((_req, res) => {
      res.writeHead(503, { "content-type": "application/json" });
      res.end(JSON.stringify({ success: false, error: { code: "CHAIN_UNAVAILABLE", message: `The RPC for arc (${RPC}) does not answer.` } }));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const ctx: ToolRunContext = {
        agentId: 1,
        taskHash: `0x${"ab".repeat(32)}`,
        client: new MarketClient({ apiKey: "ha_unused", baseUrl, escrows: {}, timeoutMs: 5_000 }),
        secret: () => undefined,
        redact: createRedactor([]),
        allowPrivateNetworks: true,
        subtaskMaxReward: 1_000_000n,
        deadline: Date.now() + 60_000,
        now: Date.now,
        background: () => undefined,
        subtasks: { reserve: async () => ({ id: 1 }), listed: async () => undefined, targetRefusal: async () => undefined },
      };
      const answer = await builtinTools(ctx).call(
        "delegate_to_agent",
        { instructions: "Translate hello.", amountRaw: "1000", waitSeconds: 0 },
        new AbortController().signal,
      );
      expect(answer).to.match(/^Error: /);
      expect(answer).to.include("https://arc-mainnet.provider.example/[redacted]");
      expect(answer).not.to.include(KEY);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
