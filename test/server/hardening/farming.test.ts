/**
 * Reputation farming (docs/security.md, issue 14 item 5): a payout credits reputation, score and badges only for a task
 * of at least the least credited reward, at most `perPair` tasks per (poster, agent) pair per period, and never from a
 * poster whose account holds the agent's wallet. The spec's +1 (and -10) stay for the tasks that count; a payout that
 * credits nothing still adds to the agent's earnings.
 */
import { expect } from "chai";
import hre from "hardhat";
import type { HardhatEthersSigner } from "@nomicfoundation/hardhat-ethers/signers";
import { startTestServer, type TestServer, type TestServerOptions } from "../harness";
import { expectOk } from "../expect";
import { brief, CRITERIA, DAY, PASSING, steps, type Steps } from "../lifecycle/helpers";
import { DEFAULT_CREDIT_RULE } from "@market/core/reputation";
import type { NonceAnswer, Session } from "@market/core/api";

interface Reputation {
  reputation: number;
  rawScore: number;
  offChainTasksCompleted: number;
}
interface Badges {
  stats: Array<{ tag: string; completions: number; failures: number }>;
}

describe("hardening: reputation farming", function () {
  let s: TestServer | undefined;
  let t: Steps;
  let agentKey: string;
  let posterKey: string;

  async function boot(options: TestServerOptions = {}) {
    s = await startTestServer(options);
    t = steps(s);
    agentKey = await s.registerAgent(s.worker, ["summarization"]);
    posterKey = await s.apiKeyFor(s.poster);
    return s;
  }
  afterEach(async function () {
    await s?.close();
    s = undefined;
  });

  const record = async (server: TestServer) => expectOk(await server.call<Reputation>("GET", `/api/v1/reputation/${server.worker.address}`));
  const earnings = async (server: TestServer) =>
    (await server.db.selectFrom("reputation").select("earnings").where("address", "=", server.worker.address).executeTakeFirstOrThrow()).earnings;

  /** A task posted by `poster` for `amount`, accepted through the API by the worker, delivered and paid. */
  async function settled(server: TestServer, amount: bigint, poster: HardhatEthersSigner = server.poster, key = posterKey) {
    const { taskHash } = await server.post(
      poster,
      key,
      server.publicTask(brief(), { verificationCriteria: CRITERIA, requiredCapabilities: ["summarization"] }),
      amount,
    );
    expectOk(await t.accept(agentKey, taskHash));
    expect((await t.deliverAndFinalize(server.worker, agentKey, taskHash, PASSING)).status).to.equal("verified");
    await server.sync();
  }

  it("the least credited reward is 1 USDC by default", function () {
    expect(DEFAULT_CREDIT_RULE).to.deep.equal({ minRewardRaw: 1_000_000n, perPair: 5, periodSeconds: 7 * DAY });
  });

  it("a task below the least credited reward pays the agent but credits no reputation, score or badge completion", async function () {
    const server = await boot();
    await settled(server, 999_999n);
    expect(await record(server)).to.deep.include({ reputation: 50, rawScore: 0, offChainTasksCompleted: 0 });
    // Paid all the same: 999,999 less the 10% fee (99,999).
    expect(await earnings(server)).to.equal("900000");
    expect(expectOk(await server.call<Badges>("GET", `/api/v1/reputation/${server.worker.address}/badges`)).stats).to.deep.equal([]);

    await settled(server, 1_000_000n);
    expect(await record(server)).to.deep.include({ reputation: 51, rawScore: 10, offChainTasksCompleted: 1 });
    expect(await earnings(server)).to.equal("1800000");
    expect(expectOk(await server.call<Badges>("GET", `/api/v1/reputation/${server.worker.address}/badges`)).stats).to.deep.equal([
      { tag: "summarization", completions: 1, failures: 0 },
    ]);
  });

  it("one poster credits one agent at most `perPair` tasks per period; another poster, or the next period, credits again", async function () {
    const server = await boot({ credit: { perPair: 2, periodSeconds: 7 * DAY } });
    for (let i = 0; i < 3; i++) await settled(server, 1_000_000n);
    expect(await record(server)).to.deep.include({ reputation: 52, rawScore: 20, offChainTasksCompleted: 2 });

    const strangerKey = await server.apiKeyFor(server.stranger);
    await server.usdc.mint(server.stranger.address, 10_000_000n);
    await server.usdc.connect(server.stranger).approve(server.escrowAddress, hre.ethers.MaxUint256);
    await settled(server, 1_000_000n, server.stranger, strangerKey);
    expect(await record(server)).to.deep.include({ reputation: 53, offChainTasksCompleted: 3 });

    // A week later (block time) the first poster's two credits have left the period.
    await t.travel(7 * DAY);
    await settled(server, 1_000_000n);
    expect(await record(server)).to.deep.include({ reputation: 54, offChainTasksCompleted: 4 });
    const credits = await server.db.selectFrom("reputation_credits").select(["poster"]).where("worker", "=", server.worker.address).execute();
    expect(credits.map((c) => c.poster).sort()).to.deep.equal(
      [server.poster.address, server.poster.address, server.stranger.address, server.poster.address].sort(),
    );
  });

  it("never from a poster whose account holds the agent's wallet (two wallets of one person)", async function () {
    const server = await boot();
    // The poster's account links the agent's wallet (the agent then works from an exported key, say).
    const session = await signIn(server, server.poster);
    const link = expectOk(
      await server.call<NonceAnswer>("POST", "/api/v1/auth/nonce", { body: { address: server.stranger.address, purpose: "link" } }),
    );
    expectOk(
      await server.call("POST", "/api/v1/auth/link", {
        body: { message: link.message, signature: await server.stranger.signMessage(link.message) },
        headers: { authorization: `Bearer ${session}` },
      }),
    );
    // Work the marketplace assigned (the verifier key's marketplaceAssign), done and paid on chain.
    const paid = async (worker: HardhatEthersSigner) => {
      const taskHash = hre.ethers.id(`same account ${worker.address} ${Date.now()}`);
      await (await server.escrow.connect(server.poster).createTask(taskHash, server.token, 2_000_000n, BigInt(DAY), hre.ethers.ZeroAddress)).wait();
      await (await server.escrow.connect(server.verifier).marketplaceAssign(taskHash, worker.address)).wait();
      await (await server.escrow.connect(worker).submitEvidence(taskHash, hre.ethers.id(`${taskHash} result`))).wait();
      await (await server.escrow.connect(server.verifier).completeVerification(taskHash, true, 90)).wait();
      await server.sync();
    };
    await paid(server.stranger);
    const sameAccount = expectOk(await server.call<Reputation>("GET", `/api/v1/reputation/${server.stranger.address}`));
    expect(sameAccount).to.deep.include({ reputation: 50, rawScore: 0, offChainTasksCompleted: 0 });
    // The same work for an agent of another account credits it.
    await paid(server.worker);
    expect(await record(server)).to.deep.include({ reputation: 51, offChainTasksCompleted: 1 });
  });
});

/** Signs in through the API; the session token. */
async function signIn(server: TestServer, signer: HardhatEthersSigner): Promise<string> {
  const nonce = expectOk(await server.call<NonceAnswer>("POST", "/api/v1/auth/nonce", { body: { address: signer.address } }));
  const session = await server.call<Session>("POST", "/api/v1/auth/verify", {
    body: { message: nonce.message, signature: await signer.signMessage(nonce.message) },
  });
  return expectOk(session).token;
}
