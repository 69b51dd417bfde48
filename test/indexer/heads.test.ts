import { expect } from "chai";
import hre from "hardhat";
import { loadFixture } from "@nomicfoundation/hardhat-network-helpers";
import { followNewHeads, newHeadsUrl, readCursor, type IndexerLogger } from "../../server/indexer";
import { deployEscrowFixture } from "../fixtures/escrow";
import { chainConfig, inProcessIndexer, memoryDb, serveNetwork, waitFor } from "./helpers";

/** A logger that keeps its messages, so a test can wait for one. */
function recordingLogger(): IndexerLogger & { messages: string[] } {
  const messages: string[] = [];
  const keep = (_obj: object, msg: string) => void messages.push(msg);
  return { messages, debug: keep, info: keep, warn: keep, error: keep };
}

describe("indexer new heads (issue 30)", function () {
  it("derives the WebSocket endpoint from the RPC URL unless one is configured", function () {
    expect(newHeadsUrl({ rpcUrl: "http://127.0.0.1:8545" })).to.equal("ws://127.0.0.1:8545");
    expect(newHeadsUrl({ rpcUrl: "HTTPS://node.example/v2/key" })).to.equal("wss://node.example/v2/key");
    expect(newHeadsUrl({ rpcUrl: "https://node.example/v2/key", wsUrl: "wss://ws.node.example/key" })).to.equal("wss://ws.node.example/key");
    expect(newHeadsUrl({ rpcUrl: "ipc:///tmp/geth.ipc" })).to.equal(undefined);
  });

  it("indexes a new block as soon as the node announces it, with polls an hour apart", async function () {
    const fixture = await loadFixture(deployEscrowFixture);
    const network = await serveNetwork();
    const db = await memoryDb();
    const logger = recordingLogger();
    const chain = chainConfig(fixture, { rpcUrl: network.url });
    const indexer = inProcessIndexer(db, chain, { pollIntervalMs: 3_600_000, newHeadsUrl: newHeadsUrl(chain), logger });
    try {
      indexer.start();
      const head = await hre.ethers.provider.getBlockNumber();
      await waitFor(async () => (await readCursor(db, chain.name))?.number === head, 10_000, "the first sync");
      await waitFor(async () => logger.messages.includes("indexer: following new heads by subscription"), 10_000, "the subscription");
      const taskHash = hre.ethers.id("heads: announced");
      await fixture.escrow.connect(fixture.poster).createTask(taskHash, fixture.token, 1_000_000n, 86_400n, hre.ethers.ZeroAddress);
      // The next poll is an hour away: only the announced head can have woken the indexer.
      await waitFor(
        async () => (await db.selectFrom("escrow_tasks").select("task_hash").where("task_hash", "=", taskHash).executeTakeFirst()) !== undefined,
        5_000,
        "the task of the announced block",
      );
    } finally {
      await indexer.stop();
      await network.close();
      await db.destroy();
    }
  });

  it("polls as before when the node offers no WebSocket, and keeps trying to subscribe", async function () {
    const fixture = await loadFixture(deployEscrowFixture);
    const network = await serveNetwork();
    const closed = await serveNetwork();
    const unreachable = newHeadsUrl({ rpcUrl: closed.url })!;
    await closed.close(); // nothing listens there any more
    const db = await memoryDb();
    const logger = recordingLogger();
    const chain = chainConfig(fixture, { rpcUrl: network.url });
    const indexer = inProcessIndexer(db, chain, { pollIntervalMs: 50, newHeadsUrl: unreachable, logger });
    const follower = followNewHeads(unreachable, () => undefined);
    try {
      indexer.start();
      const taskHash = hre.ethers.id("heads: polled");
      await fixture.escrow.connect(fixture.poster).createTask(taskHash, fixture.token, 1_000_000n, 86_400n, hre.ethers.ZeroAddress);
      await waitFor(
        async () => (await db.selectFrom("escrow_tasks").select("task_hash").where("task_hash", "=", taskHash).executeTakeFirst()) !== undefined,
        5_000,
        "the task, by polling",
      );
      expect(follower.subscribed).to.equal(false);
      expect(logger.messages).to.include("indexer: new-heads connection failed");
      expect(logger.messages).not.to.include("indexer: following new heads by subscription");
    } finally {
      follower.stop();
      await indexer.stop();
      await network.close();
      await db.destroy();
    }
  });
});
