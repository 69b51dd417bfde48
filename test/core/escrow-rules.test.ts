import { expect } from "chai";
import { getAddress, id, ZeroAddress, ZeroHash } from "ethers";
import {
  canAssign,
  canCancel,
  canClaim,
  canDeliver,
  canDispute,
  canRelease,
  canReleaseUnjudged,
  canResolve,
  canVerify,
  claimOutcome,
  Ending,
  EscrowStatus,
  isOpen,
  judgeOf,
  openTaskFilter,
  payoutSplit,
  unjudgedReleasableAt,
  type Check,
  type EscrowRefusal,
  type TaskSnapshot,
} from "@market/core/escrow";
import { APPEAL_WINDOW_SECONDS, RULING_WINDOW_SECONDS } from "@market/core/limits";
import { TaskEscrow__factory } from "../../typechain-types";

const escrowAbi = TaskEscrow__factory.createInterface();
const address = (label: string) => getAddress(id(label).slice(0, 42));
const HASH = id("a task");
const POSTER = address("poster");
const WORKER = address("worker");
const AGENT = address("verifier agent");
const MARKET = address("marketplace verifier");
const ADMIN = address("admin");
const STRANGER = address("stranger");
const DAY = 86_400;
const DEADLINE = 1_800_000_000;

function task(changes: Partial<TaskSnapshot> = {}): TaskSnapshot {
  return {
    taskHash: HASH,
    poster: POSTER,
    worker: null,
    verifier: null,
    status: EscrowStatus.Funded,
    rounds: 0,
    deadline: DEADLINE,
    windowEndsAt: 0,
    ...changes,
  };
}
const assigned = (changes: Partial<TaskSnapshot> = {}) => task({ status: EscrowStatus.Assigned, worker: WORKER, ...changes });
/** A failed round: the appeal window ends 3 days after the verdict, never before the deadline. */
const failedAt = (verdictAt: number, changes: Partial<TaskSnapshot> = {}) =>
  assigned({ status: EscrowStatus.Failed, rounds: 1, windowEndsAt: Math.max(verdictAt + APPEAL_WINDOW_SECONDS, DEADLINE), ...changes });
const live = (caller: string, now = DEADLINE - 1) => ({ taskHash: HASH, caller, paused: false, now });

/** The refusal, exactly; and the contract declares that custom error with those argument names. */
function refused(check: Check<object>, error: EscrowRefusal["error"], args: Record<string, unknown>) {
  expect(check).to.deep.equal({ ok: false, refusal: { error, args } });
  const fragment = escrowAbi.getError(error);
  expect(fragment, `${error} is a custom error of the escrow`).to.not.equal(null);
  expect(
    fragment!.inputs.map((input) => input.name),
    `${error}'s arguments`,
  ).to.deep.equal(Object.keys(args));
}

describe("core/escrow rules", function () {
  describe("isOpen", function () {
    it("is Funded and before the deadline: the deadline second itself is past", function () {
      expect(isOpen(task(), DEADLINE - 1)).to.equal(true);
      expect(isOpen(task(), DEADLINE)).to.equal(false);
      expect(isOpen(assigned(), DEADLINE - 1)).to.equal(false);
    });

    it("as SQL: Funded and a deadline above now", function () {
      expect(openTaskFilter(DEADLINE - 1)).to.deep.equal({ status: EscrowStatus.Funded, deadlineAfter: DEADLINE - 1 });
    });
  });

  describe("canCancel", function () {
    it("the poster, while Funded, past the deadline too", function () {
      expect(canCancel(task(), live(POSTER, DEADLINE + DAY))).to.deep.equal({ ok: true });
    });

    it("refuses in the contract's order: pause, task, poster, status", function () {
      refused(canCancel(task(), { ...live(STRANGER), paused: true }), "EscrowPaused", {});
      refused(canCancel(undefined, live(POSTER)), "TaskNotFound", { taskHash: HASH });
      refused(canCancel(assigned(), live(STRANGER)), "NotPoster", { taskHash: HASH, caller: STRANGER });
      refused(canCancel(assigned(), live(POSTER)), "InvalidStatus", { taskHash: HASH, status: EscrowStatus.Assigned });
    });

    it("compares addresses by value, whatever their case", function () {
      expect(canCancel(task(), live(POSTER.toLowerCase())).ok).to.equal(true);
    });
  });

  describe("canAssign", function () {
    const byMarket = (worker: string, now = DEADLINE - 1) => ({
      ...live(MARKET, now),
      worker,
      by: "marketplace" as const,
      marketplaceVerifier: MARKET,
    });
    const byPoster = (worker: string, now = DEADLINE - 1) => ({ ...live(POSTER, now), worker, by: "poster" as const, marketplaceVerifier: MARKET });

    it("until the second before the deadline; at the deadline DeadlinePassed", function () {
      expect(canAssign(task(), byMarket(WORKER, DEADLINE - 1))).to.deep.equal({ ok: true });
      expect(canAssign(task(), byPoster(WORKER, DEADLINE - 1))).to.deep.equal({ ok: true });
      refused(canAssign(task(), byMarket(WORKER, DEADLINE)), "DeadlinePassed", { taskHash: HASH, deadline: DEADLINE });
    });

    it("checks the caller before the task and the pause, as the contract does", function () {
      refused(canAssign(undefined, { ...byMarket(WORKER), caller: STRANGER, paused: true }), "NotMarketplaceVerifier", { caller: STRANGER });
      refused(canAssign(undefined, byMarket(WORKER)), "TaskNotFound", { taskHash: HASH });
      refused(canAssign(task(), { ...byPoster(WORKER), caller: STRANGER, paused: true }), "NotPoster", { taskHash: HASH, caller: STRANGER });
      refused(canAssign(assigned(), { ...byPoster(WORKER), paused: true }), "EscrowPaused", {});
      refused(canAssign(assigned(), byPoster(WORKER)), "InvalidStatus", { taskHash: HASH, status: EscrowStatus.Assigned });
    });

    it("never to zero, the poster, the task's verifier agent or the marketplace verifier", function () {
      const withAgent = task({ verifier: AGENT });
      for (const worker of [ZeroAddress, POSTER, AGENT, MARKET]) {
        refused(canAssign(withAgent, byMarket(worker)), "InvalidWorker", { taskHash: HASH, worker });
      }
      expect(canAssign(task(), byMarket(AGENT)).ok, "an agent that judges another task may work this one").to.equal(true);
    });
  });

  describe("canRelease (hand back)", function () {
    it("the worker while Assigned only", function () {
      expect(canRelease(assigned(), live(WORKER))).to.deep.equal({ ok: true });
      refused(canRelease(assigned(), live(POSTER)), "NotWorker", { taskHash: HASH, caller: POSTER });
      refused(canRelease(failedAt(DEADLINE - DAY), live(WORKER)), "InvalidStatus", { taskHash: HASH, status: EscrowStatus.Failed });
      refused(canRelease(assigned(), { ...live(WORKER), paused: true }), "EscrowPaused", {});
    });
  });

  describe("canDeliver (submitEvidence)", function () {
    it("the worker while Assigned or Failed, until the second before the deadline, naming the next round", function () {
      expect(canDeliver(assigned(), live(WORKER, DEADLINE - 1))).to.deep.equal({ ok: true, round: 1 });
      expect(canDeliver(failedAt(DEADLINE - 2 * DAY, { rounds: 2 }), live(WORKER))).to.deep.equal({ ok: true, round: 3 });
      refused(canDeliver(assigned(), live(WORKER, DEADLINE)), "DeadlinePassed", { taskHash: HASH, deadline: DEADLINE });
    });

    it("refuses the caller, then the status, the deadline, the rounds and a zero result hash", function () {
      refused(canDeliver(assigned(), live(STRANGER)), "NotWorker", { taskHash: HASH, caller: STRANGER });
      refused(canDeliver(assigned({ status: EscrowStatus.Submitted, rounds: 1 }), live(WORKER)), "InvalidStatus", {
        taskHash: HASH,
        status: EscrowStatus.Submitted,
      });
      const lastFailed = failedAt(DEADLINE - DAY, { rounds: 3 });
      refused(canDeliver(lastFailed, live(WORKER)), "NoRoundsLeft", { taskHash: HASH });
      refused(canDeliver(lastFailed, live(WORKER, DEADLINE)), "DeadlinePassed", { taskHash: HASH, deadline: DEADLINE });
      refused(canDeliver(assigned(), { ...live(WORKER), resultHash: ZeroHash }), "ZeroResultHash", {});
      expect(canDeliver(assigned(), { ...live(WORKER), resultHash: id("output") }).ok).to.equal(true);
    });
  });

  describe("canVerify and judgeOf", function () {
    const submitted = (changes: Partial<TaskSnapshot> = {}) => assigned({ status: EscrowStatus.Submitted, rounds: 1, ...changes });
    const judging = (caller: string, score?: number) => ({ ...live(caller), marketplaceVerifier: MARKET, ...(score === undefined ? {} : { score }) });

    it("the task's verifier agent, else the marketplace verifier", function () {
      expect(judgeOf(submitted({ verifier: AGENT }), MARKET)).to.equal(AGENT);
      expect(judgeOf(submitted(), MARKET)).to.equal(MARKET);
      expect(canVerify(submitted({ verifier: AGENT }), judging(AGENT))).to.deep.equal({ ok: true });
      refused(canVerify(submitted({ verifier: AGENT }), judging(MARKET)), "NotTaskVerifier", { taskHash: HASH, caller: MARKET });
      expect(canVerify(submitted(), judging(MARKET, 100))).to.deep.equal({ ok: true });
    });

    it("while Submitted, with a score of at most 100, also past the deadline", function () {
      const afterDeadline = { ...live(MARKET, DEADLINE + DAY), marketplaceVerifier: MARKET };
      expect(canVerify(submitted(), afterDeadline).ok).to.equal(true);
      refused(canVerify(assigned(), judging(MARKET)), "InvalidStatus", { taskHash: HASH, status: EscrowStatus.Assigned });
      refused(canVerify(submitted(), judging(MARKET, 101)), "InvalidScore", { score: 101 });
      refused(canVerify(submitted(), { ...judging(MARKET), paused: true }), "EscrowPaused", {});
    });
  });

  describe("canDispute", function () {
    it("the poster until the second before the deadline", function () {
      expect(canDispute(assigned(), live(POSTER, DEADLINE - 1))).to.deep.equal({ ok: true, by: "poster" });
      refused(canDispute(assigned(), live(POSTER, DEADLINE)), "DeadlinePassed", { taskHash: HASH, deadline: DEADLINE });
      refused(canDispute(failedAt(DEADLINE - DAY), live(POSTER, DEADLINE)), "DeadlinePassed", { taskHash: HASH, deadline: DEADLINE });
    });

    it("the worker before the deadline, and after a failed verdict until its appeal window ends", function () {
      expect(canDispute(assigned({ status: EscrowStatus.Submitted }), live(WORKER))).to.deep.equal({ ok: true, by: "worker" });
      refused(canDispute(assigned({ status: EscrowStatus.Submitted }), live(WORKER, DEADLINE)), "DeadlinePassed", {
        taskHash: HASH,
        deadline: DEADLINE,
      });
      const failed = failedAt(DEADLINE - DAY); // window ends two days after the deadline
      const closes = DEADLINE - DAY + APPEAL_WINDOW_SECONDS;
      expect(failed.windowEndsAt).to.equal(closes);
      expect(canDispute(failed, live(WORKER, closes - 1))).to.deep.equal({ ok: true, by: "worker" });
      refused(canDispute(failed, live(WORKER, closes)), "AppealWindowClosed", { taskHash: HASH, closedAt: closes });
    });

    it("a verdict failed long before the deadline: the window closes at the deadline", function () {
      const failed = failedAt(DEADLINE - 10 * DAY);
      expect(failed.windowEndsAt).to.equal(DEADLINE);
      refused(canDispute(failed, live(WORKER, DEADLINE)), "AppealWindowClosed", { taskHash: HASH, closedAt: DEADLINE });
    });

    it("checks the status before the caller, as the contract does", function () {
      refused(canDispute(task(), live(STRANGER)), "InvalidStatus", { taskHash: HASH, status: EscrowStatus.Funded });
      refused(canDispute(assigned(), live(STRANGER)), "NotTaskParty", { taskHash: HASH, caller: STRANGER });
      refused(canDispute(assigned(), { ...live(POSTER), paused: true }), "EscrowPaused", {});
    });
  });

  describe("canResolve", function () {
    it("the admin, on a disputed or escalated task, also while paused", function () {
      const call = { taskHash: HASH, caller: ADMIN, admin: ADMIN };
      expect(canResolve(assigned({ status: EscrowStatus.Disputed }), call)).to.deep.equal({ ok: true });
      expect(canResolve(assigned({ status: EscrowStatus.Escalated }), call)).to.deep.equal({ ok: true });
      refused(canResolve(assigned({ status: EscrowStatus.Disputed }), { ...call, caller: POSTER }), "NotAdmin", { caller: POSTER });
      refused(canResolve(undefined, call), "TaskNotFound", { taskHash: HASH });
      refused(canResolve(assigned({ status: EscrowStatus.Submitted }), call), "InvalidStatus", { taskHash: HASH, status: EscrowStatus.Submitted });
    });
  });

  describe("claimOutcome and canClaim", function () {
    it("names what the claim does and when it opens", function () {
      const failed = failedAt(DEADLINE - DAY);
      const disputed = assigned({ status: EscrowStatus.Disputed, windowEndsAt: DEADLINE - DAY + RULING_WINDOW_SECONDS });
      expect(claimOutcome(task())).to.deep.equal({ ok: true, outcome: "refund", ending: Ending.NeverDelivered, opensAt: DEADLINE });
      expect(claimOutcome(assigned())).to.deep.equal({ ok: true, outcome: "refund", ending: Ending.NeverDelivered, opensAt: DEADLINE });
      expect(claimOutcome(failed)).to.deep.equal({ ok: true, outcome: "refund", ending: Ending.FailedUnfixed, opensAt: failed.windowEndsAt });
      expect(claimOutcome(disputed)).to.deep.equal({ ok: true, outcome: "refund", ending: Ending.DisputeUnruled, opensAt: disputed.windowEndsAt });
      expect(claimOutcome(assigned({ status: EscrowStatus.Submitted }))).to.deep.equal({ ok: true, outcome: "escalate", opensAt: DEADLINE });
      for (const status of [EscrowStatus.Escalated, EscrowStatus.Verified, EscrowStatus.Paid, EscrowStatus.Refunded, EscrowStatus.Cancelled]) {
        refused(claimOutcome(assigned({ status })), "InvalidStatus", { taskHash: HASH, status });
      }
    });

    it("the poster from the deadline second on", function () {
      refused(canClaim(assigned(), live(POSTER, DEADLINE - 1)), "DeadlineNotReached", { taskHash: HASH, deadline: DEADLINE });
      expect(canClaim(assigned(), live(POSTER, DEADLINE))).to.deep.equal({ ok: true, outcome: "refund", ending: Ending.NeverDelivered });
      refused(canClaim(assigned(), live(WORKER, DEADLINE)), "NotPoster", { taskHash: HASH, caller: WORKER });
      refused(canClaim(assigned(), { ...live(POSTER, DEADLINE), paused: true }), "EscrowPaused", {});
    });

    it("after a failed verdict, from the end of its appeal window", function () {
      const failed = failedAt(DEADLINE - DAY);
      refused(canClaim(failed, live(POSTER, DEADLINE - 1)), "DeadlineNotReached", { taskHash: HASH, deadline: DEADLINE });
      refused(canClaim(failed, live(POSTER, failed.windowEndsAt - 1)), "WindowStillOpen", { taskHash: HASH, opensAt: failed.windowEndsAt });
      expect(canClaim(failed, live(POSTER, failed.windowEndsAt))).to.deep.equal({ ok: true, outcome: "refund", ending: Ending.FailedUnfixed });
    });

    it("under dispute, from the end of the ruling window", function () {
      const opensAt = DEADLINE - DAY + RULING_WINDOW_SECONDS;
      const disputed = assigned({ status: EscrowStatus.Disputed, windowEndsAt: opensAt });
      refused(canClaim(disputed, live(POSTER, opensAt - 1)), "WindowStillOpen", { taskHash: HASH, opensAt });
      expect(canClaim(disputed, live(POSTER, opensAt))).to.deep.equal({ ok: true, outcome: "refund", ending: Ending.DisputeUnruled });
    });

    it("escalates delivered work nobody judged; the worker may release it 14 days later", function () {
      const submitted = assigned({ status: EscrowStatus.Submitted, rounds: 1 });
      expect(canClaim(submitted, live(POSTER, DEADLINE + 5))).to.deep.equal({
        ok: true,
        outcome: "escalate",
        releasableAt: DEADLINE + 5 + RULING_WINDOW_SECONDS,
      });
    });

    it("an ended task meets the deadline first, then InvalidStatus, as the contract checks them", function () {
      const verified = assigned({ status: EscrowStatus.Verified, rounds: 1 });
      refused(canClaim(verified, live(POSTER, DEADLINE - 1)), "DeadlineNotReached", { taskHash: HASH, deadline: DEADLINE });
      refused(canClaim(verified, live(POSTER, DEADLINE)), "InvalidStatus", { taskHash: HASH, status: EscrowStatus.Verified });
    });
  });

  describe("canReleaseUnjudged", function () {
    const escalatedAt = DEADLINE + DAY;
    const escalated = assigned({ status: EscrowStatus.Escalated, rounds: 1, windowEndsAt: escalatedAt + RULING_WINDOW_SECONDS });

    it("the worker, from the end of the escalation's ruling window", function () {
      const opensAt = unjudgedReleasableAt(escalated);
      expect(opensAt).to.equal(escalatedAt + RULING_WINDOW_SECONDS);
      refused(canReleaseUnjudged(escalated, live(WORKER, opensAt - 1)), "WindowStillOpen", { taskHash: HASH, opensAt });
      expect(canReleaseUnjudged(escalated, live(WORKER, opensAt))).to.deep.equal({ ok: true });
    });

    it("refuses the caller, then the status", function () {
      const later = escalated.windowEndsAt;
      refused(canReleaseUnjudged(escalated, live(POSTER, later)), "NotWorker", { taskHash: HASH, caller: POSTER });
      refused(canReleaseUnjudged(assigned({ status: EscrowStatus.Disputed }), live(WORKER, later)), "InvalidStatus", {
        taskHash: HASH,
        status: EscrowStatus.Disputed,
      });
      refused(canReleaseUnjudged(escalated, { ...live(WORKER, later), paused: true }), "EscrowPaused", {});
    });
  });

  describe("payoutSplit", function () {
    it("rounds the fee down and pays the rest to the worker", function () {
      expect(payoutSplit(10_000_001n, 1_000)).to.deep.equal({ fee: 1_000_000n, payout: 9_000_001n });
      expect(payoutSplit(7n, 1_000)).to.deep.equal({ fee: 0n, payout: 7n });
      expect(payoutSplit(9_999n, 3_000n)).to.deep.equal({ fee: 2_999n, payout: 7_000n });
      expect(payoutSplit(123n, 0)).to.deep.equal({ fee: 0n, payout: 123n });
    });
  });
});
