/**
 * A chain's RPC that fails: the answer is `CHAIN_UNAVAILABLE` with a fixed message (a provider's message may name its
 * URL, and many providers put the key in it), the server's log has the detail with URLs cut to their host, and an MCP
 * tool error that is no API refusal carries no provider text either.
 */
import { expect } from "chai";
import Fastify from "fastify";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { chainCall, createChains } from "../../server/chains";
import { sendError } from "../../server/http/errors";
import { MarketError } from "@market/core/errors";
import { redactUrls } from "@market/core/text";
import { toolError, UNEXPECTED_TOOL_ERROR } from "../../sdk/src/mcp/tools";

const KEY = "k3y-0123456789abcdef";
const ADDRESS = "0x0000000000000000000000000000000000000001";

describe("chain unavailable: no provider detail in answers, URLs redacted in logs", function () {
  this.timeout(30_000);
  let node: Server;
  let rpcUrl: string;

  beforeEach(async function () {
    // A gateway that fails and names the URL it was called on, key included (as many error pages do).
    node = createServer((req, res) => {
      res.statusCode = 502;
      res.end(`Bad gateway: upstream ${rpcUrl}?apikey=${KEY} did not answer`);
    });
    await new Promise<void>((resolve) => node.listen(0, "127.0.0.1", resolve));
    rpcUrl = `http://127.0.0.1:${(node.address() as AddressInfo).port}/v3/${KEY}`;
  });
  afterEach(async function () {
    await new Promise((resolve) => node.close(resolve));
  });

  const chainsOf = () =>
    createChains([{ name: "arc", chainId: 31337, rpcUrl, escrow: ADDRESS, token: ADDRESS, startBlock: 0, confirmations: 0, postable: true }]);

  async function refusal(work: () => Promise<unknown>): Promise<MarketError> {
    try {
      await work();
    } catch (error) {
      return error as MarketError;
    }
    throw new Error("expected a refusal");
  }

  it("answers CHAIN_UNAVAILABLE with a fixed message, whatever the provider said", async function () {
    const chain = chainsOf().require("arc");
    try {
      for (const error of [await refusal(() => chainCall(() => chain.provider.getBalance(ADDRESS))), await refusal(() => chain.batchCreate())]) {
        expect(error).to.be.instanceOf(MarketError);
        expect(error.code).to.equal("CHAIN_UNAVAILABLE");
        expect(error.message).not.to.include(KEY);
        expect(error.message).not.to.include("127.0.0.1");
        expect(error.message).to.match(/RPC did not answer/);
        // The detail stays with the error, for the server's log.
        expect(String((error.cause as Error).message)).to.include(KEY);
      }
    } finally {
      chain.provider.destroy?.();
    }
  });

  it("logs the detail of a 5xx with URLs cut to their host, and answers the client without it", async function () {
    const lines: string[] = [];
    const app = Fastify({ logger: { level: "info", stream: { write: (line: string) => void lines.push(line) } } });
    app.setErrorHandler((error, request, reply) => sendError(request, reply, error));
    const chain = chainsOf().require("arc");
    app.get("/balance", async () => chainCall(() => chain.provider.getBalance(ADDRESS)));
    try {
      const answer = await app.inject({ method: "GET", url: "/balance" });
      expect(answer.statusCode).to.equal(503);
      expect(answer.json().error.code).to.equal("CHAIN_UNAVAILABLE");
      expect(answer.body).not.to.include(KEY);
      const logged = lines.join("\n");
      expect(logged).to.include("request failed");
      expect(logged).to.include("Bad gateway: upstream http://127.0.0.1:");
      expect(logged).to.include("/[redacted]");
      expect(logged).not.to.include(KEY);
    } finally {
      await app.close();
      chain.provider.destroy?.();
    }
  });

  it("answers an MCP tool failure that is no API refusal with its code or INTERNAL_ERROR and a fixed message", async function () {
    const chain = chainsOf().require("arc");
    try {
      const unexpected: unknown[] = [];
      const coded = toolError(await refusal(() => chainCall(() => chain.provider.getBalance(ADDRESS))), (e) => unexpected.push(e));
      expect(coded.isError).to.equal(true);
      expect(JSON.stringify(coded)).not.to.include(KEY);
      expect((coded.structuredContent as { error: { code: string } }).error.code).to.equal("CHAIN_UNAVAILABLE");
      const raw = await refusal(() => chain.provider.getBalance(ADDRESS));
      expect(String(raw.message)).to.include(KEY);
      const plain = toolError(raw, (e) => unexpected.push(e));
      expect(plain.content).to.deep.equal([{ type: "text", text: `INTERNAL_ERROR: ${UNEXPECTED_TOOL_ERROR}` }]);
      expect(JSON.stringify(plain)).not.to.include(KEY);
      // Handed to the server's log instead.
      expect(unexpected).to.have.length(2);
    } finally {
      chain.provider.destroy?.();
    }
  });

  it("cuts URLs to scheme and host, user part, path and query included", function () {
    expect(redactUrls(`failed: https://user:${KEY}@rpc.example.com:8545/v2/${KEY}?key=${KEY} (retry)`)).to.equal(
      "failed: https://rpc.example.com:8545/[redacted] (retry)",
    );
    expect(redactUrls("wss://node.example.org/ws/abc and http://127.0.0.1:8545")).to.equal(
      "wss://node.example.org/[redacted] and http://127.0.0.1:8545",
    );
  });
});
