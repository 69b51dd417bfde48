import { expect } from "chai";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createBlockRange, isRangeRefusal } from "../../server/indexer";
import { ChainRpcProvider } from "../../server/chains/rpc";

/** A loopback JSON-RPC endpoint answering every request with `reply`. */
async function fakeNode(reply: (body: { id: number; method: string }) => { status: number; body: string }) {
  const server: Server = createServer((req, res) => {
    let text = "";
    req.on("data", (chunk: Buffer) => (text += chunk.toString()));
    req.on("end", () => {
      const { status, body } = reply(JSON.parse(text) as { id: number; method: string });
      res.writeHead(status, { "content-type": "application/json" }).end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const provider = new ChainRpcProvider({ rpcUrl: `http://127.0.0.1:${port}`, chainId: 31337 });
  return {
    provider,
    close: async () => {
      provider.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

async function errorOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected a rejection");
}

describe("indexer log ranges", function () {
  it("halves on each refusal from the same start, then grows back a quarter at a time up to the maximum", async function () {
    const range = createBlockRange({ initial: 64, max: 100 });
    const asked: [number, number][] = [];
    const node = async (from: number, to: number) => {
      asked.push([from, to]);
      if (to - from + 1 > 10) throw new Error("eth_getLogs block range too large, max 10");
      return to;
    };
    expect((await range.fetch(1, 1_000, (to) => node(1, to))).to).to.equal(8);
    expect(asked).to.deep.equal([
      [1, 64],
      [1, 32],
      [1, 16],
      [1, 8],
    ]);
    expect(range.size).to.equal(10);
    expect((await range.fetch(9, 1_000, (to) => node(9, to))).to).to.equal(18);
    expect(range.size).to.equal(12);
    // A short range at the head does not count as a success of the full size.
    await range.fetch(19, 20, (to) => node(19, to));
    expect(range.size).to.equal(12);
  });

  it("follows the density of counted logs: fewer blocks after a full answer, more after a sparse one, only by quarters after a refusal", async function () {
    const range = createBlockRange({ initial: 100, max: 10_000, logsPerQuery: 1_000 });
    const count = (logs: number) => logs;
    // 50 logs a block: 100 blocks answer 5,000 logs, so 20 blocks would have answered 1,000.
    const dense = (from: number) => (to: number) => Promise.resolve((to - from + 1) * 50);
    expect((await range.fetch(1, 100_000, dense(1), count)).to).to.equal(100);
    expect(range.size).to.equal(20);
    expect((await range.fetch(101, 100_000, dense(101), count)).to).to.equal(120);
    expect(range.size).to.equal(25); // exactly logsPerQuery: grows by the quarter rule
    // No logs: straight to the maximum; 1 log a block: the 1,000 blocks that hold logsPerQuery.
    await range.fetch(121, 100_000, () => Promise.resolve(0), count);
    expect(range.size).to.equal(10_000);
    await range.fetch(146, 100_000, (to) => Promise.resolve(to - 146 + 1), count);
    expect(range.size).to.equal(1_000);
    // A short range at the head, even an empty one, does not grow it; a dense one still shrinks it.
    await range.fetch(1_146, 1_150, () => Promise.resolve(0), count);
    expect(range.size).to.equal(1_000);
    await range.fetch(1_151, 1_151, () => Promise.resolve(4_000), count);
    expect(range.size).to.equal(1);

    // Once the node refused a size, an empty answer grows the range by a quarter only.
    const limited = createBlockRange({ initial: 400, logsPerQuery: 1_000 });
    const refusing = (to: number) => (to > 300 ? Promise.reject(new Error("block range too large")) : Promise.resolve(0));
    expect((await limited.fetch(1, 100_000, refusing, count)).to).to.equal(200);
    expect(limited.size).to.equal(250);
    expect((await limited.fetch(201, 100_000, (to) => refusing(to - 200), count)).to).to.equal(450);
    expect(limited.size).to.equal(312);
  });

  it("takes the range a node suggests, and gives up on a refused single block", async function () {
    const range = createBlockRange({ initial: 1_000 });
    const suggested = await range.fetch(0x10, 0x2000, async (to) => {
      if (to > 0x10 + 99) throw new Error("query returned more than 10000 results. Try with this block range [0x10, 0x73].");
      return to;
    });
    expect(suggested.to).to.equal(0x10 + 99);
    const single = createBlockRange({ initial: 1 });
    expect(await errorOf(single.fetch(5, 5, () => Promise.reject(new Error("query timeout exceeded"))))).to.have.property(
      "message",
      "query timeout exceeded",
    );
  });

  it("reads the node's refusal through the indexer's JSON-RPC provider, whatever the HTTP status", async function () {
    const refusing = await fakeNode(({ id }) => ({
      status: 200,
      body: JSON.stringify({ jsonrpc: "2.0", id, error: { code: -32005, message: "query returned more than 10000 results" } }),
    }));
    const statusOnly = await fakeNode(() => ({ status: 413, body: "Log response size exceeded." }));
    const broken = await fakeNode(({ id }) => ({
      status: 200,
      body: JSON.stringify({ jsonrpc: "2.0", id, error: { code: -32601, message: "the method eth_getLogs does not exist" } }),
    }));
    try {
      const filter = { address: "0x0000000000000000000000000000000000000001", fromBlock: "0x0", toBlock: "0x100" };
      expect(isRangeRefusal(await errorOf(refusing.provider.send("eth_getLogs", [filter])))).to.equal(true);
      expect(isRangeRefusal(await errorOf(statusOnly.provider.send("eth_getLogs", [filter])))).to.equal(true);
      expect(isRangeRefusal(await errorOf(broken.provider.send("eth_getLogs", [filter])))).to.equal(false);
      const down = new ChainRpcProvider({ rpcUrl: "http://127.0.0.1:1", chainId: 31337 });
      expect(isRangeRefusal(await errorOf(down.send("eth_blockNumber", [])))).to.equal(false);
      down.destroy();
    } finally {
      await Promise.all([refusing.close(), statusOnly.close(), broken.close()]);
    }
  });
});
