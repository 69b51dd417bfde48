import { expect } from "chai";
import hre from "hardhat";
import { loadFixture } from "@nomicfoundation/hardhat-network-helpers";
import { deployEscrowFixture } from "../fixtures/escrow";
import { ChainRpcProvider } from "../../server/chains/rpc";
import { recordChain, startReplayRpc, type ReplayRpc } from "../../bench/lib/replay-rpc";
import { chainConfig, freshIndexDump, mineBlocks, randomActivity } from "./helpers";

/** A chain with escrow activity and empty stretches, as bench:indexer records one (smaller). */
async function recordedChainFixture() {
  const fixture = await deployEscrowFixture();
  await randomActivity(fixture, { seed: 60, steps: 40, tag: "replay" });
  await mineBlocks(10);
  await randomActivity(fixture, { seed: 61, steps: 20, tag: "replay-late" });
  return fixture;
}

const hex = (n: number) => `0x${n.toString(16)}`;

describe("bench:indexer's replay of a recorded chain (issue 30)", function () {
  let replay: ReplayRpc | undefined;
  afterEach(async () => {
    await replay?.close();
    replay = undefined;
  });

  const call = async (url: string, body: unknown) => {
    const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    return await response.json();
  };

  it("answers eth_getLogs, eth_getBlockByNumber and eth_blockNumber as the node it was recorded from", async function () {
    const fixture = await loadFixture(recordedChainFixture);
    const send = (method: string, params: unknown[]) => hre.ethers.provider.send(method, params);
    const head = await hre.ethers.provider.getBlockNumber();
    const first = fixture.deployment.block;
    const recording = await recordChain(send, [fixture.escrowAddress], first, head);
    expect(recording.logs.length).to.be.greaterThan(40);
    replay = await startReplayRpc(recording);

    const created = fixture.escrow.interface.getEvent("TaskCreated").topicHash;
    const filters = [
      { address: fixture.escrowAddress, fromBlock: hex(first), toBlock: hex(head) },
      { address: [fixture.escrowAddress], fromBlock: hex(first + 3), toBlock: hex(first + 20) },
      { address: fixture.escrowAddress.toLowerCase(), fromBlock: hex(head), toBlock: hex(head) },
      { address: fixture.escrowAddress, fromBlock: hex(first), toBlock: hex(head), topics: [[created]] },
    ];
    for (const filter of filters) {
      const answer = (await call(replay.url, { jsonrpc: "2.0", id: 1, method: "eth_getLogs", params: [filter] })) as { result: unknown[] };
      expect(answer.result, JSON.stringify(filter)).to.deep.equal(await send("eth_getLogs", [filter]));
    }
    // Only the recorded contracts' logs: the token's transfers were not recorded.
    const token = (await call(replay.url, {
      jsonrpc: "2.0",
      id: 3,
      method: "eth_getLogs",
      params: [{ address: fixture.token, fromBlock: hex(first), toBlock: hex(head) }],
    })) as { result: unknown[] };
    expect(token.result).to.deep.equal([]);
    for (const block of [hex(first), hex(first + 7), hex(head), "latest"]) {
      const answer = (await call(replay.url, { jsonrpc: "2.0", id: 2, method: "eth_getBlockByNumber", params: [block, false] })) as {
        result: unknown;
      };
      expect(answer.result, block).to.deep.equal(await send("eth_getBlockByNumber", [block, false]));
    }
    const batch = (await call(replay.url, [
      { jsonrpc: "2.0", id: 7, method: "eth_blockNumber", params: [] },
      { jsonrpc: "2.0", id: 8, method: "eth_getBlockByNumber", params: [hex(head + 1), false] },
      { jsonrpc: "2.0", id: 9, method: "eth_sendRawTransaction", params: ["0x00"] },
    ])) as Array<{ id: number; result?: unknown; error?: { code: number } }>;
    expect(batch.map((item) => item.id)).to.deep.equal([7, 8, 9]);
    expect(batch[0]!.result).to.equal(hex(head));
    expect(batch[1]!.result).to.equal(null);
    expect(batch[2]!.error?.code).to.equal(-32601);
  });

  it("an indexer catching up from the replay stores what it stores from the node", async function () {
    const fixture = await loadFixture(recordedChainFixture);
    const chain = chainConfig(fixture);
    const head = await hre.ethers.provider.getBlockNumber();
    const recording = await recordChain((method, params) => hre.ethers.provider.send(method, params), [chain.escrow], chain.startBlock, head);
    replay = await startReplayRpc(recording);
    const provider = new ChainRpcProvider({ rpcUrl: replay.url, chainId: recording.chainId });
    try {
      const fromReplay = await freshIndexDump(chain, provider);
      expect(fromReplay.events).to.have.length(recording.logs.length);
      expect(fromReplay).to.deep.equal(await freshIndexDump(chain));
    } finally {
      provider.destroy();
    }
  });
});
