/**
 * Reputation at its edges: the pure rules (core/reputation.ts) as tables, then the same numbers through the real
 * flow and the indexer's projection (reputation, capability_stats), the decayed score on the API clock, the
 * leaderboard, badges, and a reorg that takes a settlement back.
 */
import { expect } from "chai";
import hre from "hardhat";
import { time } from "@nomicfoundation/hardhat-network-helpers";
import { testDatabase, type TestServer } from "../harness";
import { expectOk } from "../expect";
import { Migrator } from "kysely";
import { createDatabase, migrateToLatest } from "../../../server/db";
import { migrations } from "../../../server/db/migrations";
import { createIndexer, type BlockRangeOptions, type ChainEvent } from "../../../server/indexer";
import { defaultProjections } from "../../../server/projections";
import { createReputationProjection } from "../../../server/reputation/projection";
import { Ending, EscrowStatus } from "@market/core/escrow";
import {
  applyReputation,
  decayedScore,
  DEFAULT_CREDIT_RULE,
  earnsBadge,
  FRESH_REPUTATION,
  offerRank,
  type ReputationState,
} from "@market/core/reputation";
import { AMOUNT, brief, CRITERIA, DAY, FAILING, partiesServer, PASSING, PAYOUT, steps, type Steps } from "./helpers";

const WEEK = 7 * DAY;
/** The per-skill part of a badges answer for an agent with no installed public skill and no verified badge. */
const NO_SKILLS = { skillStats: [], skillBadges: [], verified: [] };

interface Reputation {
  reputation: number;
  rawScore: number;
  decayedScore: number;
  decayFactor: number;
  daysSinceLastTask: number | null;
  offChainTasksCompleted: number;
  offChainDisputes: number;
}

describe("lifecycle: reputation", function () {
  describe("core/reputation rules", function () {
    const state = (changes: Partial<ReputationState> = {}): ReputationState => ({ ...FRESH_REPUTATION, ...changes });

    it("applyReputation: +1 per settled task up to 100, -10 per failed round or lost dispute down to 0", function () {
      const cases: Array<[string, ReputationState, Parameters<typeof applyReputation>[1], Partial<ReputationState>]> = [
        [
          "settled from 50",
          state(),
          { kind: "settled", payout: 7n, at: 1_000 },
          { reputation: 51, tasksCompleted: 1, earnings: "7", rawScore: 10, lastSettledAt: 1_000 },
        ],
        ["settled from 99", state({ reputation: 99 }), { kind: "settled", payout: 1n, at: 5 }, { reputation: 100 }],
        [
          "settled at 100 stays 100",
          state({ reputation: 100, tasksCompleted: 9 }),
          { kind: "settled", payout: 1n, at: 5 },
          { reputation: 100, tasksCompleted: 10 },
        ],
        ["settled keeps the latest time", state({ lastSettledAt: 2_000 }), { kind: "settled", payout: 1n, at: 1_000 }, { lastSettledAt: 2_000 }],
        [
          "earnings add as bigints",
          state({ earnings: "18446744073709551616" }),
          { kind: "settled", payout: 1n, at: 1 },
          { earnings: "18446744073709551617" },
        ],
        ["failed round from 50", state(), { kind: "failedRound" }, { reputation: 40, failedRounds: 1 }],
        ["failed round from 10 to 0", state({ reputation: 10 }), { kind: "failedRound" }, { reputation: 0 }],
        ["failed round from 5 stops at 0", state({ reputation: 5 }), { kind: "failedRound" }, { reputation: 0 }],
        ["failed round at 0 stays 0", state({ reputation: 0, failedRounds: 4 }), { kind: "failedRound" }, { reputation: 0, failedRounds: 5 }],
        ["dispute lost", state(), { kind: "disputeLost" }, { reputation: 40, disputesLost: 1 }],
        ["dispute raised changes no reputation", state(), { kind: "disputeRaised" }, { reputation: 50, disputes: 1 }],
        ["never delivered from 50", state(), { kind: "neverDelivered" }, { reputation: 40 }],
        ["never delivered from 3 stops at 0", state({ reputation: 3 }), { kind: "neverDelivered" }, { reputation: 0 }],
        ["released from 50", state(), { kind: "released" }, { reputation: 48 }],
        [
          "paid without credit: earnings only",
          state(),
          { kind: "paid", payout: 7n },
          { reputation: 50, tasksCompleted: 0, earnings: "7", rawScore: 0 },
        ],
      ];
      for (const [name, before, event, expected] of cases) {
        expect(applyReputation(before, event), name).to.deep.include(expected);
      }
      expect(FRESH_REPUTATION).to.deep.include({ reputation: 50, tasksCompleted: 0, rawScore: 0, lastSettledAt: null });
    });

    it("decayedScore: halves per full 7 days without a settled task", function () {
      const at = 1_700_000_000;
      const cases: Array<[number | null, number, { decayedScore: number; decayFactor: number; daysSinceLastTask: number | null }]> = [
        [null, at, { decayedScore: 40, decayFactor: 1, daysSinceLastTask: null }],
        [at, at, { decayedScore: 40, decayFactor: 1, daysSinceLastTask: 0 }],
        [at, at + 6 * DAY, { decayedScore: 40, decayFactor: 1, daysSinceLastTask: 6 }],
        [at, at + WEEK - 1, { decayedScore: 40, decayFactor: 1, daysSinceLastTask: 6 }],
        [at, at + WEEK, { decayedScore: 20, decayFactor: 0.5, daysSinceLastTask: 7 }],
        [at, at + 2 * WEEK - 1, { decayedScore: 20, decayFactor: 0.5, daysSinceLastTask: 13 }],
        [at, at + 2 * WEEK, { decayedScore: 10, decayFactor: 0.25, daysSinceLastTask: 14 }],
        [at, at + 3 * WEEK, { decayedScore: 5, decayFactor: 0.125, daysSinceLastTask: 21 }],
        // A clock behind the chain counts as no time idle.
        [at, at - DAY, { decayedScore: 40, decayFactor: 1, daysSinceLastTask: 0 }],
      ];
      for (const [last, now, expected] of cases) {
        expect(decayedScore(40, last, now), `${last} -> ${now}`).to.deep.equal({ rawScore: 40, ...expected });
      }
    });

    it("earnsBadge: 5 completions and failures under 20% of outcomes; offerRank adds 25 per badge", function () {
      const cases: Array<[number, number, boolean]> = [
        [0, 0, false],
        [4, 0, false],
        [5, 0, true],
        [5, 1, true], // 16.7%
        [4, 1, false], // 20%, and 4 completions
        [8, 2, false], // exactly 20%
        [9, 2, true], // 18.2%
        [100, 25, false], // exactly 20%
        [100, 24, true],
      ];
      for (const [completions, failures, earns] of cases) {
        expect(earnsBadge({ completions, failures }), `${completions}/${failures}`).to.equal(earns);
      }
      expect(offerRank(10, 0)).to.equal(10);
      expect(offerRank(10, 2)).to.equal(60);
      expect(offerRank(2.5, 1)).to.equal(27.5);
    });
  });

  describe("through the flow and the projection", function () {
    let s: TestServer;
    let t: Steps;
    let agentKey: string;
    let posterKey: string;

    beforeEach(async function () {
      ({
        server: s,
        seeded: { agentKey, posterKey },
      } = await partiesServer());
      t = steps(s);
    });
    afterEach(async function () {
      await s.close();
    });

    const reputation = async (address = s.worker.address) => expectOk(await s.call<Reputation>("GET", `/api/v1/reputation/${address}`));
    const badges = async () =>
      expectOk(
        await s.call<{ stats: Array<{ tag: string; completions: number; failures: number }>; badges: Array<{ tag: string; kind: string }> }>(
          "GET",
          `/api/v1/reputation/${s.worker.address}/badges`,
        ),
      );

    async function accepted(capabilities: string[] = []) {
      const { taskHash } = await s.post(
        s.poster,
        posterKey,
        s.publicTask(brief(), { verificationCriteria: CRITERIA, requiredCapabilities: capabilities }),
        AMOUNT,
      );
      expectOk(await t.accept(agentKey, taskHash));
      return taskHash;
    }
    async function settleOne(capabilities: string[] = []) {
      const taskHash = await accepted(capabilities);
      expect((await t.deliverAndFinalize(s.worker, agentKey, taskHash, PASSING)).status).to.equal("verified");
      await s.sync();
      return taskHash;
    }
    async function seed(
      address: string,
      changes: { reputation?: number; raw_score?: number; last_settled_at?: number | null; tasks_completed?: number },
    ) {
      await s.db
        .insertInto("reputation")
        .values({
          address,
          reputation: 50,
          tasks_completed: 0,
          failed_rounds: 0,
          disputes: 0,
          disputes_lost: 0,
          earnings: "0",
          raw_score: 0,
          last_settled_at: null,
          ...changes,
        })
        .execute();
    }

    it("starts at 50 and gains 1 per settled task", async function () {
      expect(await reputation()).to.deep.include({
        reputation: 50,
        rawScore: 0,
        decayedScore: 0,
        decayFactor: 1,
        daysSinceLastTask: null,
        offChainTasksCompleted: 0,
      });
      expect(await reputation(), "no note while the counts agree").to.not.have.property("note");
      await settleOne();
      expect(await reputation()).to.deep.include({ reputation: 51, rawScore: 10, decayedScore: 10, offChainTasksCompleted: 1, offChainDisputes: 0 });
      // Settled on arc: the reputation contract has no record of it, and the answer says why the counts differ.
      expect(await reputation()).to.deep.include({
        tasksCompleted: 0,
        note:
          "tasksCompleted (0) is the reputation contract's record: only tasks settled on the 0g escrow write to it (the arc escrow has none). " +
          "offChainTasksCompleted (1) counts every task settled for this agent on every chain this service indexes, arc included; reputation and the decayed score move with it.",
      });
      await settleOne();
      expect(await reputation()).to.deep.include({ reputation: 52, rawScore: 20, decayedScore: 20, offChainTasksCompleted: 2 });
      const row = await s.db.selectFrom("reputation").select("earnings").where("address", "=", s.worker.address).executeTakeFirstOrThrow();
      expect(row.earnings).to.equal((2n * PAYOUT).toString());
    });

    it("stays at 100 when a settled task would take it above", async function () {
      await seed(s.worker.address, { reputation: 100, tasks_completed: 50 });
      await settleOne();
      expect(await reputation()).to.deep.include({ reputation: 100, offChainTasksCompleted: 51, rawScore: 10 });
    });

    it("loses 10 per failed round and stops at 0", async function () {
      await seed(s.worker.address, { reputation: 5 });
      const taskHash = await accepted();
      expect((await t.deliverAndFinalize(s.worker, agentKey, taskHash, FAILING)).status).to.equal("failed");
      await s.sync();
      expect((await reputation()).reputation).to.equal(0);
      const row = await s.db.selectFrom("reputation").select("failed_rounds").where("address", "=", s.worker.address).executeTakeFirstOrThrow();
      expect(row.failed_rounds).to.equal(1);
    });

    it("loses 10 for a dispute ruled against the agent, which counts as a failure for the task's tags", async function () {
      const taskHash = await accepted(["summarization"]);
      await t.settle(s.poster, posterKey, taskHash, "dispute", "dispute");
      expect(await reputation()).to.deep.include({ reputation: 50, offChainDisputes: 1 });
      await (await s.escrow.connect(s.admin).resolveDispute(taskHash, false)).wait();
      await s.sync();
      expect(await reputation()).to.deep.include({ reputation: 40, offChainDisputes: 1, offChainTasksCompleted: 0 });
      expect((await badges()).stats).to.deep.equal([{ tag: "summarization", completions: 0, failures: 1 }]);
    });

    it("decayed score: +10 raw per settled task, halved per full 7 days on the API clock", async function () {
      // Chain time well ahead of the wall clock: the API clock is then chain time plus what the test adds.
      await time.increase(3_600);
      await settleOne();
      const settledAt = await time.latest();
      const row = await s.db.selectFrom("reputation").select("last_settled_at").where("address", "=", s.worker.address).executeTakeFirstOrThrow();
      expect(row.last_settled_at).to.equal(settledAt);

      const expectDecay = async (decayed: number, factor: number, days: number) =>
        expect(await reputation()).to.deep.include({ rawScore: 10, decayedScore: decayed, decayFactor: factor, daysSinceLastTask: days });
      await expectDecay(10, 1, 0);
      s.advanceClock(6 * DAY * 1000);
      await expectDecay(10, 1, 6);
      s.advanceClock(DAY * 1000 - 1000);
      await expectDecay(10, 1, 6);
      s.advanceClock(1000);
      await expectDecay(5, 0.5, 7);
      s.advanceClock(WEEK * 1000);
      await expectDecay(2.5, 0.25, 14);
      const board = expectOk(
        await s.call<{ agents: Array<{ address: string; decayedScore: number; rawScore: number }> }>("GET", "/api/v1/reputation/leaderboard"),
      );
      expect(board.agents).to.deep.include({
        address: s.worker.address,
        displayName: null,
        decayedScore: 2.5,
        rawScore: 10,
        reputation: 51,
        tasksCompleted: 1,
      });
    });

    it("the leaderboard is sorted by decayed score, not raw score", async function () {
      await time.increase(3_600);
      await s.sync();
      const now = await time.latest();
      const [a, b, c, d] = Array.from({ length: 4 }, () => hre.ethers.Wallet.createRandom().address);
      await seed(a!, { raw_score: 40, last_settled_at: now - 15 * DAY }); // 10
      await seed(b!, { raw_score: 20, last_settled_at: now - DAY }); // 20
      await seed(c!, { raw_score: 30, last_settled_at: now - 8 * DAY }); // 15
      await seed(d!, { raw_score: 0, reputation: 90 }); // nothing settled: not listed
      const board = expectOk(
        await s.call<{ agents: Array<{ address: string; decayedScore: number; rawScore: number }> }>("GET", "/api/v1/reputation/leaderboard"),
      );
      expect(board.agents.map((x) => [x.address, x.decayedScore, x.rawScore])).to.deep.equal([
        [b, 20, 20],
        [c, 15, 30],
        [a, 10, 40],
      ]);
      const top = expectOk(await s.call<{ agents: Array<{ address: string }> }>("GET", "/api/v1/reputation/leaderboard?limit=1"));
      expect(top.agents.map((x) => x.address)).to.deep.equal([b]);
    });

    it("badges: 4 settled completions on a tag earn none, 5 earn it", async function () {
      for (let i = 0; i < 4; i++) await settleOne(["summarization"]);
      expect(await badges()).to.deep.equal({ ...NO_SKILLS, stats: [{ tag: "summarization", completions: 4, failures: 0 }], badges: [] });
      await settleOne(["summarization"]);
      expect(await badges()).to.deep.equal({
        ...NO_SKILLS,
        stats: [{ tag: "summarization", completions: 5, failures: 0 }],
        badges: [{ tag: "summarization", kind: "earned" }],
      });
    });

    it("badges: failures at exactly 20% earn none, under 20% earn it", async function () {
      await s.db.insertInto("capability_stats").values({ address: s.worker.address, tag: "summarization", completions: 7, failures: 2 }).execute();
      await settleOne(["summarization"]);
      expect(await badges()).to.deep.equal({ ...NO_SKILLS, stats: [{ tag: "summarization", completions: 8, failures: 2 }], badges: [] });
      await settleOne(["summarization"]);
      expect(await badges()).to.deep.equal({
        ...NO_SKILLS,
        stats: [{ tag: "summarization", completions: 9, failures: 2 }],
        badges: [{ tag: "summarization", kind: "earned" }],
      });
    });

    it("a task created before the start block counts for nobody, however the ranges fall", async function () {
      const taskHash = hre.ethers.id(`created before the start block ${Date.now()}`);
      await (await s.escrow.connect(s.poster).createTask(taskHash, s.token, AMOUNT, BigInt(DAY), hre.ethers.ZeroAddress)).wait();
      const startBlock = (await hre.ethers.provider.getBlockNumber()) + 1;
      await (await s.escrow.connect(s.verifier).marketplaceAssign(taskHash, s.worker.address)).wait();
      await (await s.escrow.connect(s.worker).submitEvidence(taskHash, hre.ethers.id("result"))).wait();
      await (await s.escrow.connect(s.verifier).completeVerification(taskHash, true, 90)).wait();

      const projected = async (blockRange: BlockRangeOptions) => {
        const fresh = createDatabase({ sqlitePath: ":memory:" });
        try {
          await migrateToLatest(fresh);
          const chain = { ...s.chainConfig, startBlock };
          const indexer = createIndexer({
            db: fresh,
            chain,
            provider: hre.ethers.provider,
            pollIntervalMs: 20,
            blockRange,
            projections: defaultProjections(),
          });
          while (!(await indexer.syncOnce()).caughtUp);
          return await fresh.selectFrom("reputation").selectAll().execute();
        } finally {
          await fresh.destroy();
        }
      };
      // In one range the assignment is seen before the payout; block by block, the payout finds no indexed task.
      const oneRange = await projected({ initial: 1_000, max: 1_000 });
      expect(oneRange).to.deep.equal(await projected({ initial: 1, max: 1 }));
      expect(oneRange).to.deep.equal([]);
    });

    describe("only tasks the marketplace assigned count", function () {
      type Assigner = "poster" | "marketplace";
      const rows = async () => ({
        reputation: await s.db.selectFrom("reputation").selectAll().orderBy("address").execute(),
        stats: await s.db.selectFrom("capability_stats").selectAll().orderBy("address").orderBy("tag").execute(),
      });
      const assignedBy = async (taskHash: string) =>
        await s.db
          .selectFrom("escrow_tasks")
          .select(["worker", "assigned_by"])
          .where("task_hash", "=", taskHash.toLowerCase())
          .executeTakeFirstOrThrow();
      const send = async (sent: Promise<{ wait(): Promise<unknown> }>) => {
        await (await sent).wait();
      };
      /** Assigns on chain: the poster's own `assignWorker`, or `marketplaceAssign` from the verifier key. */
      const assign = (taskHash: string, by: Assigner) =>
        send(
          by === "poster"
            ? s.escrow.connect(s.poster).assignWorker(taskHash, s.worker.address)
            : s.escrow.connect(s.verifier).marketplaceAssign(taskHash, s.worker.address),
        );
      /** Evidence from the worker, then the verifier key's verdict (paid when it passes). */
      const round = async (taskHash: string, passed: boolean) => {
        await send(s.escrow.connect(s.worker).submitEvidence(taskHash, hre.ethers.id(`${taskHash} ${passed} ${Date.now()}`)));
        await send(s.escrow.connect(s.verifier).completeVerification(taskHash, passed, passed ? 90 : 10));
      };
      const listed = async (capabilities: string[]) =>
        (await s.post(s.poster, posterKey, s.publicTask(brief(), { verificationCriteria: CRITERIA, requiredCapabilities: capabilities }), AMOUNT))
          .taskHash;
      /** A task funded on chain and never listed: 1 raw unit, so the 10% fee rounds down to nothing. */
      const oneUnit = async (name: string) => {
        const taskHash = hre.ethers.id(`one unit ${name} ${Date.now()}`);
        await send(s.escrow.connect(s.poster).createTask(taskHash, s.token, 1n, BigInt(DAY), hre.ethers.ZeroAddress));
        return taskHash;
      };

      /**
       * The same work on chain, assigned by `by`: a listed task failed once then paid, a 1-unit task paid, a listed
       * task disputed by the poster and ruled against the worker. The verifier key is used directly here, so this
       * runs before anything goes through the service's outbox (which counts that key's nonces itself).
       */
      async function workedOnChain(by: Assigner) {
        const failedThenPaid = await listed(["summarization"]);
        await assign(failedThenPaid, by);
        await s.sync();
        await round(failedThenPaid, false);
        await round(failedThenPaid, true);
        const tiny = await oneUnit(by);
        await assign(tiny, by);
        await round(tiny, true);
        const disputed = await listed(["summarization"]);
        await assign(disputed, by);
        await send(s.escrow.connect(s.poster).raiseDispute(disputed));
        await send(s.escrow.connect(s.admin).resolveDispute(disputed, false));
        await s.sync();
        return [failedThenPaid, tiny, disputed];
      }

      /** reputation and capability_stats projected from nothing over the chain as it is now, in ranges of `size` blocks. */
      async function freshProjection(size: number) {
        const fresh = createDatabase({ sqlitePath: ":memory:" });
        try {
          await migrateToLatest(fresh);
          const listings = await s.db.selectFrom("listings").selectAll().execute();
          if (listings.length > 0) await fresh.insertInto("listings").values(listings).execute();
          const blockRange = { initial: size, max: size };
          const indexer = createIndexer({
            db: fresh,
            chain: s.chainConfig,
            provider: hre.ethers.provider,
            pollIntervalMs: 20,
            blockRange,
            projections: defaultProjections(),
          });
          while (!(await indexer.syncOnce()).caughtUp);
          return {
            reputation: await fresh.selectFrom("reputation").selectAll().orderBy("address").execute(),
            stats: await fresh.selectFrom("capability_stats").selectAll().orderBy("address").orderBy("tag").execute(),
          };
        } finally {
          await fresh.destroy();
        }
      }

      it("a task its poster assigned directly and settled on chain changes nobody's reputation or stats", async function () {
        const hashes = await workedOnChain("poster");
        for (const taskHash of hashes) expect(await assignedBy(taskHash)).to.deep.equal({ worker: s.worker.address, assigned_by: s.poster.address });
        expect(await rows()).to.deep.equal({ reputation: [], stats: [] });
        expect(await reputation()).to.deep.include({
          reputation: 50,
          rawScore: 0,
          decayedScore: 0,
          daysSinceLastTask: null,
          offChainTasksCompleted: 0,
          offChainDisputes: 0,
        });
        expect(await badges()).to.deep.equal({ ...NO_SKILLS, stats: [], badges: [] });
        const board = expectOk(await s.call<{ agents: unknown[] }>("GET", "/api/v1/reputation/leaderboard"));
        expect(board.agents).to.deep.equal([]);
        // Projected in other ranges, from nothing: the same.
        expect(await freshProjection(1)).to.deep.equal({ reputation: [], stats: [] });
        expect(await freshProjection(1_000)).to.deep.equal({ reputation: [], stats: [] });
      });

      it("the same work counts when the marketplace assigned it: marketplaceAssign by the verifier key, or accept through the API", async function () {
        const hashes = await workedOnChain("marketplace");
        for (const taskHash of hashes)
          expect(await assignedBy(taskHash)).to.deep.equal({ worker: s.worker.address, assigned_by: s.verifier.address });
        // 50, a failed round -10, paid +1, the 1-unit task paid but below the least credited reward (+0: only its
        // earnings count; docs/security.md, reputation farming), the dispute lost -10.
        expect(await reputation()).to.deep.include({ reputation: 31, rawScore: 10, offChainTasksCompleted: 1, offChainDisputes: 1 });

        const accepted = await settleOne(["summarization"]);
        expect(await assignedBy(accepted)).to.deep.equal({ worker: s.worker.address, assigned_by: s.verifier.address });
        const after = await rows();
        expect(after.reputation).to.have.length(1);
        expect(after.reputation[0]).to.include({
          address: s.worker.address,
          reputation: 32,
          tasks_completed: 2,
          failed_rounds: 1,
          disputes: 1,
          disputes_lost: 1,
          earnings: (2n * PAYOUT + 1n).toString(),
          raw_score: 20,
        });
        expect(after.stats).to.deep.equal([{ address: s.worker.address, tag: "summarization", completions: 2, failures: 1 }]);
        expect(await freshProjection(1)).to.deep.equal(after);
        expect(await freshProjection(1_000)).to.deep.equal(after);
      });

      it("counts alike whether assignment and payout share a range or not, across hand-backs and re-assignments", async function () {
        // Assigned by the marketplace, handed back, then assigned by the poster and paid: counts for no one.
        const reassignedByPoster = await listed(["summarization"]);
        await assign(reassignedByPoster, "marketplace");
        await s.sync();
        await send(s.escrow.connect(s.worker).releaseTask(reassignedByPoster));
        await s.sync();
        expect(await assignedBy(reassignedByPoster)).to.deep.equal({ worker: null, assigned_by: null });
        await assign(reassignedByPoster, "poster");
        await s.sync();
        await round(reassignedByPoster, true);
        await s.sync();
        // Assigned by the poster, handed back, then assigned by the marketplace and paid: counts.
        const reassignedByMarketplace = await listed(["summarization"]);
        await assign(reassignedByMarketplace, "poster");
        await s.sync();
        await send(s.escrow.connect(s.worker).releaseTask(reassignedByMarketplace));
        await s.sync();
        await assign(reassignedByMarketplace, "marketplace");
        await s.sync();
        await round(reassignedByMarketplace, true);
        await s.sync();

        expect(await assignedBy(reassignedByPoster)).to.deep.equal({ worker: s.worker.address, assigned_by: s.poster.address });
        expect(await assignedBy(reassignedByMarketplace)).to.deep.equal({ worker: s.worker.address, assigned_by: s.verifier.address });
        const live = await rows();
        // 50, -2 for handing back the marketplace's assignment (docs/security.md), +1 for the task paid.
        expect(live.reputation.map((r) => [r.address, r.reputation, r.tasks_completed, r.earnings, r.raw_score])).to.deep.equal([
          [s.worker.address, 49, 1, PAYOUT.toString(), 10],
        ]);
        expect(live.stats).to.deep.equal([{ address: s.worker.address, tag: "summarization", completions: 1, failures: 0 }]);
        // The live indexer saw every step in its own range; one range of everything and one block per range agree.
        expect(await freshProjection(1_000)).to.deep.equal(live);
        expect(await freshProjection(1)).to.deep.equal(live);
      });

      it("a reorg that removes a marketplace assignment rebuilds the agent from what remains", async function () {
        const earlier = await listed(["summarization"]);
        await assign(earlier, "marketplace");
        await round(earlier, true);
        const taskHash = await listed(["summarization"]);
        await s.sync();
        const before = await rows();
        expect(before.reputation.map((r) => [r.address, r.reputation, r.tasks_completed])).to.deep.equal([[s.worker.address, 51, 1]]);

        // The old branch: the marketplace assigns (one range), the work is paid (another range).
        const fork = (await hre.network.provider.send("evm_snapshot", [])) as string;
        await assign(taskHash, "marketplace");
        await s.sync();
        await round(taskHash, true);
        await s.sync();
        expect((await rows()).reputation.map((r) => [r.address, r.reputation, r.tasks_completed])).to.deep.equal([[s.worker.address, 52, 2]]);

        // The new, longer branch: the poster assigns the same worker directly and the same work is paid.
        await hre.network.provider.send("evm_revert", [fork]);
        await assign(taskHash, "poster");
        await round(taskHash, true);
        await hre.network.provider.send("hardhat_mine", ["0x5"]);
        await s.sync();
        expect(await assignedBy(taskHash)).to.deep.equal({ worker: s.worker.address, assigned_by: s.poster.address });
        expect((await t.escrowRow(taskHash)).status).to.equal(EscrowStatus.Verified);
        expect(await rows()).to.deep.equal(before);
        expect(await freshProjection(1_000)).to.deep.equal(before);
      });

      it("the migration fills in assigned_by and recomputes the agents a poster-assigned task credited, leaving the others", async function () {
        // Worked on chain: by the marketplace and by the poster, paid, disputed and still in progress; another agent
        // works one marketplace task.
        await workedOnChain("marketplace");
        await workedOnChain("poster");
        const inProgress = [await listed([]), await listed([])];
        await assign(inProgress[0]!, "poster");
        await assign(inProgress[1]!, "marketplace");
        const other = await listed(["summarization"]);
        await send(s.escrow.connect(s.verifier).marketplaceAssign(other, s.stranger.address));
        await send(s.escrow.connect(s.stranger).submitEvidence(other, hre.ethers.id("other's result")));
        await send(s.escrow.connect(s.verifier).completeVerification(other, true, 80));
        await s.sync();

        // A database of its own, indexed to the head by the current projections, crediting any reward as the rules of
        // that migration did (the least credited reward came later: docs/security.md, reputation farming).
        const { db, drop } = await testDatabase();
        try {
          await db
            .insertInto("listings")
            .values(await s.db.selectFrom("listings").selectAll().execute())
            .execute();
          const indexer = createIndexer({
            db,
            chain: s.chainConfig,
            provider: hre.ethers.provider,
            pollIntervalMs: 20,
            projections: defaultProjections({ ...DEFAULT_CREDIT_RULE, minRewardRaw: 1n }),
          });
          while (!(await indexer.syncOnce()).caughtUp);
          const tasks = async () => db.selectFrom("escrow_tasks").selectAll().orderBy("chain").orderBy("task_hash").execute();
          const projected = { tasks: await tasks(), reputation: await db.selectFrom("reputation").selectAll().orderBy("address").execute() };
          const stats = async (address: string) =>
            db.selectFrom("capability_stats").selectAll().where("address", "=", address).orderBy("tag").execute();
          const projectedStats = await stats(s.worker.address);
          expect(projected.reputation.map((r) => [r.address, r.tasks_completed])).to.have.deep.members([
            [s.worker.address, 2],
            [s.stranger.address, 1],
          ]);

          // Back to the schema before the column, with the numbers the old rule gave (poster-assigned work counted),
          // and another agent's row as some earlier version left it.
          const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } });
          const down = await migrator.migrateTo("2026-11-21T13-30-00_browse-indexes");
          expect(down.error).to.equal(undefined);
          await db
            .updateTable("reputation")
            .set({ reputation: 34, tasks_completed: 4, raw_score: 40, failed_rounds: 2, disputes: 2, disputes_lost: 2 })
            .where("address", "=", s.worker.address)
            .execute();
          await db.updateTable("capability_stats").set({ completions: 2, failures: 2 }).where("address", "=", s.worker.address).execute();
          await db.updateTable("reputation").set({ reputation: 77 }).where("address", "=", s.stranger.address).execute();

          await migrateToLatest(db);
          expect(await tasks()).to.deep.equal(projected.tasks);
          const byAddress = async (address: string) =>
            db.selectFrom("reputation").selectAll().where("address", "=", address).executeTakeFirstOrThrow();
          expect(await byAddress(s.worker.address)).to.deep.equal(projected.reputation.find((r) => r.address === s.worker.address));
          expect(await stats(s.worker.address)).to.deep.equal(projectedStats);
          expect(await byAddress(s.stranger.address)).to.include({ reputation: 77, tasks_completed: 1 });
        } finally {
          await drop();
        }
      });
    });

    it("after a reorg takes a settlement back, the reputation equals a fresh projection of the new chain", async function () {
      await settleOne(["summarization"]);
      const taskHash = await accepted(["summarization"]);
      await t.deliverOnChain(s.worker, agentKey, taskHash, PASSING);
      const rows = async () => ({
        reputation: await s.db.selectFrom("reputation").selectAll().orderBy("address").execute(),
        stats: await s.db.selectFrom("capability_stats").selectAll().orderBy("address").orderBy("tag").execute(),
      });
      const before = await rows();
      expect(before.reputation.map((r) => [r.address, r.reputation, r.tasks_completed])).to.deep.equal([[s.worker.address, 51, 1]]);

      const fork = (await hre.network.provider.send("evm_snapshot", [])) as string;
      expect(expectOk(await t.finalize(agentKey, taskHash)).status).to.equal("verified");
      await s.sync();
      expect((await reputation()).reputation).to.equal(52);
      expect((await rows()).stats).to.deep.equal([{ address: s.worker.address, tag: "summarization", completions: 2, failures: 0 }]);

      // The verdict's block is replaced by a longer branch without it.
      await hre.network.provider.send("evm_revert", [fork]);
      await hre.network.provider.send("hardhat_mine", ["0x5"]);
      await s.sync();
      expect(await rows()).to.deep.equal(before);
      expect((await reputation()).reputation).to.equal(51);

      // A projection built from nothing over the same chain (and the same listings, for the tags) agrees.
      const fresh = createDatabase({ sqlitePath: ":memory:" });
      try {
        await migrateToLatest(fresh);
        const listings = await s.db.selectFrom("listings").selectAll().execute();
        await fresh.insertInto("listings").values(listings).execute();
        const indexer = createIndexer({
          db: fresh,
          chain: s.chainConfig,
          provider: hre.ethers.provider,
          pollIntervalMs: 20,
          projections: defaultProjections(),
        });
        while (!(await indexer.syncOnce()).caughtUp);
        expect({
          reputation: await fresh.selectFrom("reputation").selectAll().orderBy("address").execute(),
          stats: await fresh.selectFrom("capability_stats").selectAll().orderBy("address").orderBy("tag").execute(),
        }).to.deep.equal(before);
      } finally {
        await fresh.destroy();
      }
    });
  });

  describe("the projection with concurrent writers", function () {
    it("two chains' indexers settling tasks of one agent at once both count (PostgreSQL runs them in parallel)", async function () {
      const { db, drop } = await testDatabase();
      try {
        const worker = hre.ethers.Wallet.createRandom().address;
        const marketplace = hre.ethers.Wallet.createRandom().address;
        const taskHash = (chain: string) => hre.ethers.id(`concurrent ${chain}`);
        for (const chain of ["arc", "base"]) {
          await db
            .insertInto("escrow_tasks")
            .values({
              chain,
              task_hash: taskHash(chain),
              poster: hre.ethers.ZeroAddress,
              token: hre.ethers.ZeroAddress,
              amount: "1000000",
              verifier: null,
              worker,
              // Assigned by the marketplace's verifier key, not the poster: the payouts count.
              assigned_by: marketplace,
              deadline: 2_000_000_000,
              status: EscrowStatus.Submitted,
              rounds: 1,
              ending: Ending.None,
              result_hash: null,
              phase_at: null,
              last_score: null,
              payout: null,
              fee: null,
              created_block: 1,
              created_tx: hre.ethers.ZeroHash,
              updated_block: 1,
            })
            .execute();
        }
        const settled = (chain: string): ChainEvent => ({
          chain,
          blockNumber: 10,
          blockHash: hre.ethers.id(`block ${chain}`),
          logIndex: 0,
          txHash: hre.ethers.id(`tx ${chain}`),
          txIndex: 0,
          event: "TaskCompleted",
          taskHash: taskHash(chain),
          args: { taskHash: taskHash(chain), worker, payout: "900", fee: "100", ending: String(Ending.VerificationPassed) },
          blockTime: 1_700_000_000,
        });
        const projection = createReputationProjection();

        // The first indexer's range is applied but not committed when the second one's starts.
        let commitFirst!: () => void;
        let firstApplied!: () => void;
        const applied = new Promise<void>((resolve) => (firstApplied = resolve));
        const first = db.transaction().execute(async (trx) => {
          await projection.apply(trx, "arc", [settled("arc")]);
          firstApplied();
          await new Promise<void>((resolve) => (commitFirst = resolve));
        });
        await applied;
        const second = db.transaction().execute((trx) => projection.apply(trx, "base", [settled("base")]));
        await new Promise((resolve) => setTimeout(resolve, 200));
        commitFirst();
        await Promise.all([first, second]);

        const row = await db.selectFrom("reputation").selectAll().where("address", "=", worker).executeTakeFirstOrThrow();
        expect(row).to.include({ reputation: 52, tasks_completed: 2, raw_score: 20, earnings: "1800" });
      } finally {
        await drop();
      }
    });
  });
});
