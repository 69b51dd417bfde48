import { expect } from "chai";
import hre from "hardhat";
import { loadFixture } from "@nomicfoundation/hardhat-network-helpers";
import type { Db } from "../../server/db";
import type { ChainConfig } from "../../server/config";
import { defaultProjections } from "../../server/projections";
import {
  applyReputation,
  creditRefusal,
  DEFAULT_CREDIT_RULE,
  FRESH_REPUTATION,
  type ReputationEvent,
  type ReputationState,
} from "@market/core/reputation";
import { Ending } from "@market/core/escrow";
import { deployEscrowFixture } from "../fixtures/escrow";
import { chainConfig, inProcessIndexer, memoryDb, mineBlocks, randomActivity, syncToHead, type EscrowFixture } from "./helpers";

const send = (method: string, params: unknown[] = []) => hre.network.provider.send(method, params);

async function reputationRows(db: Db) {
  return {
    reputation: await db.selectFrom("reputation").selectAll().orderBy("address").execute(),
    stats: await db.selectFrom("capability_stats").selectAll().orderBy("address").orderBy("tag").execute(),
  };
}

/** reputation and capability_stats of a fresh index of the chain as it is now, in ranges of `size` blocks. */
async function freshReputation(chain: ChainConfig, size: number) {
  const db = await memoryDb();
  try {
    await syncToHead(inProcessIndexer(db, chain, { blockRange: { initial: size, max: size }, projections: defaultProjections() }));
    return await reputationRows(db);
  } finally {
    await db.destroy();
  }
}

/**
 * The worker's record read straight from the node's logs, without the indexer: every outcome of a task counts when
 * the task's last WorkerAssigned before it came from someone other than the task's poster; a payout credits only a
 * task of at least the minimum reward, within the pair's credits per period (one poster, one worker here; no
 * accounts); a dispute the worker raised and left unruled counts as lost.
 */
async function expectedFromLogs(fixture: EscrowFixture, chain: ChainConfig) {
  const logs = await hre.ethers.provider.getLogs({ address: chain.escrow, fromBlock: chain.startBlock, toBlock: "latest" });
  const blockTimes = new Map<number, number>();
  const blockTime = async (block: number) => {
    if (!blockTimes.has(block)) blockTimes.set(block, (await hre.ethers.provider.getBlock(block))!.timestamp);
    return blockTimes.get(block)!;
  };
  const posters = new Map<string, string>();
  const amounts = new Map<string, bigint>();
  const assigners = new Map<string, string>();
  const raisers = new Map<string, string>();
  const credits: number[] = [];
  let state: ReputationState = { ...FRESH_REPUTATION };
  const outcomes = { credited: 0, posterAssigned: 0, uncreditedPayouts: 0, workerDisputesUnruled: 0 };
  for (const log of logs) {
    const parsed = fixture.escrow.interface.parseLog(log);
    if (!parsed) continue;
    const taskHash = parsed.args.taskHash as string | undefined;
    if (parsed.name === "TaskCreated") {
      posters.set(taskHash!, parsed.args.poster as string);
      amounts.set(taskHash!, parsed.args.amount as bigint);
    }
    if (parsed.name === "WorkerAssigned") assigners.set(taskHash!, parsed.args.assignedBy as string);
    if (parsed.name === "DisputeRaised") raisers.set(taskHash!, parsed.args.raisedBy as string);
    let event: ReputationEvent | undefined;
    if (parsed.name === "VerificationCompleted" && !parsed.args.passed) event = { kind: "failedRound" };
    if (parsed.name === "DisputeRaised") event = { kind: "disputeRaised" };
    if (parsed.name === "TaskRefunded" && Number(parsed.args.ending) === Ending.DisputeWonByPoster) event = { kind: "disputeLost" };
    // Beyond the spec (docs/security.md): a hand-back and a never-delivered expiry of a credited assignment.
    if (parsed.name === "WorkerReleased") event = { kind: "released" };
    if (parsed.name === "DeadlineExpired" && Number(parsed.args.ending) === Ending.NeverDelivered) event = { kind: "neverDelivered" };
    // Disputes as a weapon: the worker's own dispute that ends without a ruling.
    const workerUnruled =
      parsed.name === "DeadlineExpired" && Number(parsed.args.ending) === Ending.DisputeUnruled && raisers.get(taskHash!) === fixture.worker.address;
    if (workerUnruled) event = { kind: "disputeLost" };
    if (parsed.name === "TaskCompleted") {
      event = { kind: "settled", payout: parsed.args.payout as bigint, at: await blockTime(log.blockNumber) };
    }
    if (!event) continue;
    if (assigners.get(taskHash!) === posters.get(taskHash!)) {
      outcomes.posterAssigned += 1;
      continue;
    }
    outcomes.credited += 1;
    if (workerUnruled) outcomes.workerDisputesUnruled += 1;
    if (event.kind === "settled") {
      const at = event.at;
      const inPeriod = credits.filter((t) => t > at - DEFAULT_CREDIT_RULE.periodSeconds && t <= at).length;
      if (creditRefusal({ amount: amounts.get(taskHash!)! }, { sameAccount: false, pairCreditsInPeriod: inPeriod })) {
        outcomes.uncreditedPayouts += 1;
        event = { kind: "paid", payout: event.payout };
      } else credits.push(at);
    }
    state = applyReputation(state, event);
  }
  return { state, outcomes };
}

/**
 * Marketplace-assigned payouts the farming rules refuse (one below the minimum reward, and more in a week than the
 * pair may credit), and a dispute the worker raises at once that nobody rules.
 */
async function farmingTail(fixture: EscrowFixture) {
  const { escrow, token, poster, worker, verifier } = fixture;
  const wait = async (sent: Promise<{ wait(): Promise<unknown> }>) => (await sent).wait();
  const assigned = async (tag: string, amount: bigint) => {
    const hash = hre.ethers.id(`farming-tail-${tag}`);
    await wait(escrow.connect(poster).createTask(hash, token, amount, 2n * 86_400n, hre.ethers.ZeroAddress));
    await wait(escrow.connect(verifier).marketplaceAssign(hash, worker.address));
    return hash;
  };
  for (const [i, amount] of [999_999n, ...Array<bigint>(DEFAULT_CREDIT_RULE.perPair + 1).fill(DEFAULT_CREDIT_RULE.minRewardRaw)].entries()) {
    const hash = await assigned(`paid-${i}`, amount);
    await wait(escrow.connect(worker).submitEvidence(hash, hre.ethers.id(`farming-tail-result-${i}`)));
    await wait(escrow.connect(verifier).completeVerification(hash, true, 90));
  }
  const disputed = await assigned("dispute", 2_000_000n);
  await wait(escrow.connect(worker).raiseDispute(disputed));
  await send("evm_increaseTime", [17 * 86_400]);
  await wait(escrow.connect(poster).claimTimeout(disputed));
}

describe("indexer: reputation counts marketplace assignments only", function () {
  it("through random activity with both kinds of assignment, any range size and a reorg, it equals the node's logs", async function () {
    const fixture = await loadFixture(deployEscrowFixture);
    const chain = chainConfig(fixture);
    await randomActivity(fixture, { seed: 40, steps: 90, tag: "reputation" });
    const db = await memoryDb();
    const indexer = inProcessIndexer(db, chain, { blockRange: { initial: 8, max: 32 }, projections: defaultProjections() });
    await syncToHead(indexer);

    const fork = (await send("evm_snapshot")) as string;
    await randomActivity(fixture, { seed: 41, steps: 50, tag: "reputation-old-branch" });
    await syncToHead(indexer);
    await send("evm_revert", [fork]);
    await randomActivity(fixture, { seed: 42, steps: 60, tag: "reputation-new-branch" });
    expect((await syncToHead(indexer)).removed).to.be.greaterThan(0);
    // Reputation farming and disputes as a weapon (docs/security.md), then a reorg across them.
    await farmingTail(fixture);
    const beforeTail = (await send("evm_snapshot")) as string;
    await randomActivity(fixture, { seed: 43, steps: 20, tag: "reputation-tail-old-branch" });
    await syncToHead(indexer);
    await send("evm_revert", [beforeTail]);
    await mineBlocks(3);
    expect((await syncToHead(indexer)).removed).to.be.greaterThan(0);

    const { state, outcomes } = await expectedFromLogs(fixture, chain);
    // The seeds give both kinds: outcomes of poster-assigned tasks that must not count, and ones that must.
    expect(outcomes.credited, "credited outcomes").to.be.greaterThan(0);
    expect(outcomes.posterAssigned, "poster-assigned outcomes").to.be.greaterThan(0);
    expect(outcomes.uncreditedPayouts, "payouts that credit nothing (small, or past the pair's credits)").to.be.greaterThan(1);
    expect(outcomes.workerDisputesUnruled, "the worker's disputes left unruled").to.be.greaterThan(0);
    expect(state.tasksCompleted).to.be.greaterThan(0);

    const now = await reputationRows(db);
    expect(now.reputation).to.have.length(1);
    expect(now.reputation[0]).to.deep.equal({
      address: fixture.worker.address,
      reputation: state.reputation,
      tasks_completed: state.tasksCompleted,
      failed_rounds: state.failedRounds,
      disputes: state.disputes,
      disputes_lost: state.disputesLost,
      earnings: state.earnings,
      raw_score: state.rawScore,
      last_settled_at: state.lastSettledAt,
    });
    expect(now).to.deep.equal(await freshReputation(chain, 10_000));
    expect(now).to.deep.equal(await freshReputation(chain, 1));

    // escrow_tasks keeps who assigned each task's current worker, as the logs say.
    const tasks = await db.selectFrom("escrow_tasks").select(["task_hash", "worker", "assigned_by"]).execute();
    for (const task of tasks) {
      const onChain = await fixture.escrow.getTask(task.task_hash);
      if (onChain.worker === hre.ethers.ZeroAddress) expect(task.assigned_by, task.task_hash).to.equal(null);
      else expect([fixture.poster.address, fixture.verifier.address], task.task_hash).to.include(task.assigned_by);
    }
    expect(tasks.filter((t) => t.assigned_by === fixture.poster.address)).to.not.have.length(0);
    expect(tasks.filter((t) => t.assigned_by === fixture.verifier.address)).to.not.have.length(0);
    await db.destroy();
  });
});
