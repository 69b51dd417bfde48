/**
 * Identity and on-chain reputation end to end, on a deployment that posts on `0g`: the escrow 3.0.0 with its
 * reputation registry and identity NFT wired (deploy/registries.ts), the indexer reading all three, the API answering
 * from the projections. The reputation route's on-chain fields equal the contract's numbers; the agent card shows the
 * identity token the contract holds for the agent's wallet.
 */
import { expect } from "chai";
import hre from "hardhat";
import { serverFixture, type TestServer } from "./harness";
import { expectOk } from "./expect";
import { AMOUNT, brief, CRITERIA, FAILING, PASSING, steps, type Steps } from "./lifecycle/helpers";
import { AgentIdentity__factory, TaskReputation__factory, type AgentIdentity, type TaskReputation } from "../../typechain-types";
import { onChainAverageScore, onChainScore } from "@market/core/reputation";
import { identityMetadataHash } from "@market/core/registries";
import { publicKeyFromPrivateKey } from "@market/core/crypto";
import { privateKeyOf } from "./harness";
import type { TaskView } from "@market/core/api";

interface OnChainAnswer {
  tasksCompleted: number;
  avgScore: number;
  disputes: number;
  onChainScore: number;
  offChainTasksCompleted: number;
  reputation: number;
}

interface CardIdentity {
  registrations?: Array<{ agentId: string; agentRegistry: string }>;
  market: { identity: { chain: string; agentId: string; contract: string; owner: string } | null };
}

const onZeroG = serverFixture(
  async (s) => ({
    agentKey: await s.registerAgent(s.worker, ["summarization"], { supportedChains: ["0g"] }),
    posterKey: await s.apiKeyFor(s.poster),
  }),
  { registries: true, arc: { name: "0g" } },
);

describe("server: identity and on-chain reputation (posting on 0g)", function () {
  let s: TestServer;
  let t: Steps;
  let agentKey: string;
  let posterKey: string;
  let reputation: TaskReputation;
  let identity: AgentIdentity;

  beforeEach(async function () {
    ({
      server: s,
      seeded: { agentKey, posterKey },
    } = await onZeroG());
    t = steps(s);
    reputation = TaskReputation__factory.connect(s.chainConfig.reputation!.address, hre.ethers.provider);
    identity = AgentIdentity__factory.connect(s.chainConfig.identity!.address, hre.ethers.provider);
  });
  afterEach(async function () {
    await s.close();
  });

  const onChain = async (address = s.worker.address) => expectOk(await s.call<OnChainAnswer>("GET", `/api/v1/reputation/${address}`));

  /** The route's on-chain fields, as the contract's summary gives them. */
  async function contractNumbers(address = s.worker.address) {
    const summary = await reputation.summaryOf(address);
    const record = {
      tasksCompleted: Number(summary.tasksCompleted),
      scoreSum: Number(summary.scoreSum),
      scoreCount: Number(summary.scoreCount),
      disputes: Number(summary.disputes),
    };
    expect(onChainAverageScore(record)).to.equal(Number(summary.averageScore) / 100);
    return {
      tasksCompleted: record.tasksCompleted,
      avgScore: onChainAverageScore(record),
      disputes: record.disputes,
      onChainScore: onChainScore(record),
    };
  }

  async function accepted() {
    const { taskHash } = await s.post(s.poster, posterKey, s.publicTask(brief(), { verificationCriteria: CRITERIA }), AMOUNT);
    expectOk(await t.accept(agentKey, taskHash));
    return taskHash;
  }

  it("an agent without on-chain history has zeros and onChainScore 0, not 100", async function () {
    expect(await onChain()).to.deep.include({ tasksCompleted: 0, avgScore: 0, disputes: 0, onChainScore: 0 });
    const stranger = hre.ethers.Wallet.createRandom().address;
    expect(await onChain(stranger)).to.deep.include({ tasksCompleted: 0, avgScore: 0, disputes: 0, onChainScore: 0 });
  });

  it("a task posted on 0g and paid: the route shows the reputation contract's numbers", async function () {
    const taskHash = await accepted();
    const view = expectOk(await s.call<TaskView>("GET", `/api/v1/tasks/${taskHash}`));
    expect(view.meta.chain).to.equal("0g");
    expect((await t.deliverAndFinalize(s.worker, agentKey, taskHash, PASSING)).status).to.equal("verified");
    await s.sync();

    const numbers = await contractNumbers();
    expect(numbers.tasksCompleted).to.equal(1);
    expect(numbers.avgScore).to.be.greaterThan(0);
    expect(await onChain()).to.deep.include({ ...numbers, offChainTasksCompleted: 1 });
    // One task: a tenth of the confidence the composite needs, whatever the score.
    expect(numbers.onChainScore).to.equal(Math.round(numbers.avgScore / 10));
  });

  it("a failed round writes nothing; a second paid task adds to the same record", async function () {
    const first = await accepted();
    expect((await t.deliverAndFinalize(s.worker, agentKey, first, FAILING)).status).to.equal("failed");
    await s.sync();
    expect(await onChain()).to.deep.include({ tasksCompleted: 0, onChainScore: 0 });
    expect((await t.deliverAndFinalize(s.worker, agentKey, first, PASSING)).status).to.equal("verified");
    const second = await accepted();
    expect((await t.deliverAndFinalize(s.worker, agentKey, second, PASSING)).status).to.equal("verified");
    await s.sync();
    const numbers = await contractNumbers();
    expect(numbers.tasksCompleted).to.equal(2);
    expect(await onChain()).to.deep.include(numbers);
  });

  it("a dispute ruled against the agent counts a dispute", async function () {
    const taskHash = await accepted();
    await t.settle(s.poster, posterKey, taskHash, "dispute", "dispute");
    expect(await onChain()).to.deep.include({ disputes: 0 });
    await (await s.escrow.connect(s.admin).resolveDispute(taskHash, false)).wait();
    await s.sync();
    expect(await reputation.disputesOf(s.worker.address)).to.equal(1n);
    expect(await onChain()).to.deep.include({ ...(await contractNumbers()), disputes: 1, tasksCompleted: 0, onChainScore: 0 });
  });

  it("a dispute ruled for the agent counts a completed task without a score", async function () {
    const taskHash = await accepted();
    await t.settle(s.poster, posterKey, taskHash, "dispute", "dispute");
    await (await s.escrow.connect(s.admin).resolveDispute(taskHash, true)).wait();
    await s.sync();
    const numbers = await contractNumbers();
    expect(numbers).to.deep.equal({ tasksCompleted: 1, avgScore: 0, disputes: 0, onChainScore: 5 });
    expect(await onChain()).to.deep.include(numbers);
  });

  it("after a reorg takes a settlement back, the on-chain numbers follow the new chain", async function () {
    const taskHash = await accepted();
    await t.deliverOnChain(s.worker, agentKey, taskHash, PASSING);
    const fork = (await hre.network.provider.send("evm_snapshot", [])) as string;
    expect(expectOk(await t.finalize(agentKey, taskHash)).status).to.equal("verified");
    await s.sync();
    expect((await onChain()).tasksCompleted).to.equal(1);

    await hre.network.provider.send("evm_revert", [fork]);
    await hre.network.provider.send("hardhat_mine", ["0x5"]);
    await s.sync();
    expect(await onChain()).to.deep.include({ tasksCompleted: 0, avgScore: 0, disputes: 0, onChainScore: 0 });
    const rows = await s.db.selectFrom("onchain_reputation").selectAll().execute();
    expect(rows).to.deep.equal([]);
  });

  describe("the agent card", function () {
    const card = async () => (await s.call("GET", `/.well-known/agents/${s.worker.address}.json`)).body as unknown as CardIdentity;
    const cardUrl = () => `http://127.0.0.1:3000/.well-known/agents/${s.worker.address}.json`;

    async function mintForWorker(owner = s.stranger.address) {
      const publicKey = publicKeyFromPrivateKey(privateKeyOf(s.worker));
      await (
        await identity.connect(s.verifier).registerFor(owner, cardUrl(), [
          { metadataKey: "agentWallet", metadataValue: s.worker.address },
          { metadataKey: "metadataHash", metadataValue: identityMetadataHash(s.worker.address, publicKey) },
        ])
      ).wait();
      await s.sync();
    }

    it("has no identity before the agent has a token", async function () {
      const answer = await card();
      expect(answer.market.identity).to.equal(null);
      expect(answer).to.not.have.property("registrations");
    });

    it("shows the token id, its chain and registry once the identity contract names the agent's wallet", async function () {
      await mintForWorker();
      const answer = await card();
      const contract = s.chainConfig.identity!.address;
      expect(answer.market.identity).to.deep.equal({ chain: "0g", agentId: "1", contract, owner: s.stranger.address });
      expect(answer.registrations).to.deep.equal([{ agentId: "1", agentRegistry: `eip155:${s.chainConfig.chainId}:${contract}` }]);
      const token = await s.db.selectFrom("identity_tokens").selectAll().executeTakeFirstOrThrow();
      expect(token).to.deep.include({
        chain: "0g",
        agent_id: "1",
        owner: s.stranger.address,
        agent_uri: cardUrl(),
        agent_wallet: s.worker.address,
        metadata_hash: await identity.getMetadata(1n, "metadataHash"),
      });
    });

    it("follows the token's URI and owner, and drops it once a transfer clears the agent wallet", async function () {
      await mintForWorker();
      await (await identity.connect(s.stranger).setAgentURI(1n, "https://agents.example/worker.json")).wait();
      await s.sync();
      expect(await s.db.selectFrom("identity_tokens").select("agent_uri").executeTakeFirstOrThrow()).to.deep.equal({
        agent_uri: "https://agents.example/worker.json",
      });
      await (await identity.connect(s.stranger).transferFrom(s.stranger.address, s.poster.address, 1n)).wait();
      await s.sync();
      expect(await s.db.selectFrom("identity_tokens").select(["owner", "agent_wallet"]).executeTakeFirstOrThrow()).to.deep.equal({
        owner: s.poster.address,
        agent_wallet: null,
      });
      expect((await card()).market.identity).to.equal(null);
    });
  });
});
