/**
 * Hash squatting (docs/security.md, issue 14 item 9): a squatter funds a row's task hash on the chain first. The
 * posting engine (SDK postTasks, behind the CLI and MCP) re-encrypts a private row (new IV, new hash), fails only a
 * public row with TASK_HASH_IN_USE, and funds the rest of the chunk, never paying twice.
 */
import { expect } from "chai";
import hre from "hardhat";
import { stackFixture, type Stack } from "../support/stack";
import { MarketClient, type MarketClientOptions } from "../../sdk/src/client";
import { escrowInterface } from "../../sdk/src/chain";
import { MAX_REENCRYPTIONS, type PostTaskInput } from "../../sdk/src/posting";
import { publicTaskHash } from "@market/core/crypto";
import type { PostedAnswer } from "@market/core/api";

const seeded = stackFixture(async (s) => {
  await s.registerAgent(s.worker, ["summarization"]);
  // The squatter: a wallet with a little USDC, approved to the escrow.
  await s.usdc.mint(s.stranger.address, 1_000_000n);
  await s.usdc.connect(s.stranger).approve(s.escrowAddress, hre.ethers.MaxUint256);
  return { posterKey: await s.apiKeyFor(s.poster) };
});

describe("hardening: hash squatting", function () {
  this.timeout(120_000);
  let s: Stack;
  let posterKey: string;
  beforeEach(async function () {
    ({
      stack: s,
      seeded: { posterKey },
    } = await seeded());
  });
  afterEach(async function () {
    await hre.network.provider.send("evm_setAutomine", [true]);
    await s.close();
  });

  /** Funds `taskHash` from the squatter's wallet with 1 raw unit. */
  const squat = async (taskHash: string, overrides: Record<string, unknown> = {}) =>
    s.escrow.connect(s.stranger).createTask(taskHash, s.token, 1n, 86_400, hre.ethers.ZeroAddress, overrides);
  /** The task hashes of the funding call the wallet is about to sign, as a watcher of the mempool would read them. */
  const hashesOf = (data: string): string[] => {
    const call = escrowInterface.parseTransaction({ data });
    if (call?.name === "createTasks") return (call.args[0] as Array<{ taskHash: string }>).map((t) => t.taskHash);
    if (call?.name === "createTask") return [call.args[0] as string];
    return [];
  };
  const posted = async () => {
    await s.sync();
    return (await s.call<PostedAnswer>("GET", "/api/v1/a2a/tasks/posted?limit=100", { key: posterKey })).body.data.tasks;
  };
  const rows = (tag: string): PostTaskInput[] => [
    { instructions: `Private brief A ${tag}`, amountRaw: 1_000_000n, capabilities: ["summarization"] },
    { instructions: `Public brief B ${tag}`, amountRaw: 2_000_000n, privacy: "public" },
    { instructions: `Private brief C ${tag}`, amountRaw: 3_000_000n, capabilities: ["summarization"] },
    { instructions: `Public brief D ${tag}`, amountRaw: 4_000_000n, privacy: "public" },
  ];

  it("squatted before the funding is sent: the private row gets a new hash, the public row fails alone, the rest is paid once", async function () {
    const tag = `${Date.now()}`;
    const inputs = rows(tag);
    // D's hash is known from its text: funded before the run even builds it.
    await (await squat(publicTaskHash(inputs[3]!.instructions))).wait();
    const squatted: string[] = [];
    const options: MarketClientOptions = {
      ...(await s.clientOptions(s.poster, posterKey)),
    };
    options.executor = {
      ...options.executor!,
      // A and B are funded first from the mempool: the wallet's funding would revert with TaskHashUsed.
      beforeSend: async (tx) => {
        if (tx.to !== s.escrowAddress || squatted.length > 0) return;
        for (const hash of hashesOf(tx.data).slice(0, 2)) {
          await (await squat(hash)).wait();
          squatted.push(hash);
        }
      },
    };
    const before = await s.usdc.balanceOf(s.poster.address);
    const result = await new MarketClient(options).postTasks(inputs, { chunkSize: 4 });

    expect(squatted).to.have.length(2);
    expect(result).to.deep.include({ posted: 2, failed: 2, unlisted: 0, skipped: 0, stopped: false });
    const [a, b, c, d] = result.results;
    expect(a).to.deep.include({ status: "posted" });
    expect(a!.taskHash).to.not.equal(squatted[0]);
    expect(b).to.deep.include({ status: "failed", taskHash: squatted[1] });
    expect(b!.error?.code).to.equal("TASK_HASH_IN_USE");
    expect(b!.error?.message).to.contain(s.stranger.address).and.contain("Nothing was paid");
    expect(c).to.deep.include({ status: "posted" });
    expect(d).to.deep.include({ status: "failed", taskHash: publicTaskHash(inputs[3]!.instructions) });
    expect(d!.error?.code).to.equal("TASK_HASH_IN_USE");

    // Paid once for A (under its new hash) and C; nothing for B and D.
    expect(before - (await s.usdc.balanceOf(s.poster.address))).to.equal(4_000_000n);
    for (const row of [a!, c!]) {
      const task = await s.escrow.getTask(row.taskHash!);
      expect([task.poster, task.amount]).to.deep.equal([s.poster.address, BigInt(row.amountRaw)]);
    }
    expect((await s.escrow.getTask(squatted[0]!)).poster).to.equal(s.stranger.address);
    const listed = (await posted()).map((t) => t.state.taskId);
    expect(listed).to.include.members([a!.taskHash, c!.taskHash]);
    expect(listed).to.not.include(squatted[0]);
  });

  it("squatted in the same block, ahead of the funding: the mined revert is handled alike", async function () {
    const tag = `${Date.now()}`;
    const inputs = rows(tag).slice(0, 3);
    let squatted: string | undefined;
    let mined: Promise<Awaited<ReturnType<typeof hre.ethers.provider.getBlock>>> | undefined;
    const options: MarketClientOptions = { ...(await s.clientOptions(s.poster, posterKey)) };
    options.executor = {
      ...options.executor!,
      beforeSend: async (tx) => {
        if (tx.to !== s.escrowAddress || squatted) return;
        squatted = hashesOf(tx.data)[0]!;
        const hash = squatted;
        // Automining off: once the wallet's funding waits in the mempool, the squatter sends the same hash at a higher
        // tip, and the next block takes both, the squatter's first.
        await hre.network.provider.send("evm_setAutomine", [false]);
        mined = (async () => {
          const pendingCount = async () =>
            ((await hre.network.provider.send("eth_getBlockByNumber", ["pending", false])) as { transactions: string[] }).transactions.length;
          while ((await pendingCount()) < 1) await new Promise((resolve) => setTimeout(resolve, 100));
          await squat(hash, { maxPriorityFeePerGas: hre.ethers.parseUnits("50", "gwei"), maxFeePerGas: hre.ethers.parseUnits("100", "gwei") });
          await hre.network.provider.send("evm_mine", []);
          await hre.network.provider.send("evm_setAutomine", [true]);
          return (await hre.ethers.provider.getBlock("latest"))!;
        })();
      },
    };
    const before = await s.usdc.balanceOf(s.poster.address);
    const result = await new MarketClient(options).postTasks(inputs, { chunkSize: 3 });
    // The block held the squatter's funding, then the wallet's, which reverted.
    const block = (await mined)!;
    expect(block.transactions).to.have.length(2);
    const [first, second] = await Promise.all(block.transactions.map((hash) => hre.ethers.provider.getTransactionReceipt(hash)));
    expect([first!.from, first!.status]).to.deep.equal([s.stranger.address, 1]);
    expect([second!.from, second!.status]).to.deep.equal([s.poster.address, 0]);
    expect(result).to.deep.include({ posted: 3, failed: 0, stopped: false });
    expect(result.results[0]!.taskHash).to.not.equal(squatted);
    // The reverted funding paid nothing (only its gas); the second paid each row once.
    expect(before - (await s.usdc.balanceOf(s.poster.address))).to.equal(6_000_000n);
    const created = await s.escrow.queryFilter(s.escrow.filters.TaskCreated(undefined, s.poster.address));
    const hashes = result.results.map((r) => r.taskHash);
    expect(created.filter((log) => hashes.includes(log.args.taskHash))).to.have.length(3);
    expect((await s.escrow.getTask(squatted!)).poster).to.equal(s.stranger.address);
  });

  it(`a private row squatted again and again fails after ${MAX_REENCRYPTIONS} fresh encryptions, alone`, async function () {
    const tag = `${Date.now()}`;
    const inputs = [rows(tag)[0]!, rows(tag)[2]!];
    const options: MarketClientOptions = { ...(await s.clientOptions(s.poster, posterKey)) };
    let squats = 0;
    options.executor = {
      ...options.executor!,
      // Every funding attempt sees its first row squatted.
      beforeSend: async (tx) => {
        if (tx.to !== s.escrowAddress) return;
        const first = hashesOf(tx.data)[0];
        if (first && inputs.length > 0 && (await s.escrow.getTask(first)).poster === hre.ethers.ZeroAddress && squats <= MAX_REENCRYPTIONS) {
          squats++;
          await (await squat(first)).wait();
        }
      },
    };
    const before = await s.usdc.balanceOf(s.poster.address);
    const result = await new MarketClient(options).postTasks(inputs, { chunkSize: 2 });
    expect(squats).to.equal(MAX_REENCRYPTIONS + 1);
    expect(result.results.map((r) => r.status)).to.deep.equal(["failed", "posted"]);
    expect(result.results[0]!.error?.code).to.equal("TASK_HASH_IN_USE");
    expect(before - (await s.usdc.balanceOf(s.poster.address))).to.equal(3_000_000n);
  });
});
