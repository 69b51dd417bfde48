/**
 * Each of the escrow's eight endings, driven end to end through the HTTP API and the chain: the API status, the
 * indexer's escrow_tasks row and every token balance before and after.
 */
import { expect } from "chai";
import { type TestServer } from "../harness";
import { expectError, expectOk } from "../expect";
import { resultHash } from "@market/core/crypto";
import { AMOUNT, DAY, Ending, EscrowStatus, FAILING, FEE, partiesServer, PASSING, PAYOUT, steps, type Balances, type Steps } from "./helpers";

describe("lifecycle: the eight endings", function () {
  let s: TestServer;
  let t: Steps;
  let agentKey: string;
  let posterKey: string;
  let start: Balances;

  beforeEach(async function () {
    ({
      server: s,
      seeded: { agentKey, posterKey },
    } = await partiesServer());
    t = steps(s);
    start = await t.balances();
  });
  afterEach(async function () {
    await s.close();
  });

  const postAuto = () => t.postPublic(posterKey);
  const postManual = () => t.postPublic(posterKey, "manual");

  async function expectPaidOut() {
    expect(await t.balances()).to.deep.equal({
      poster: start.poster - AMOUNT,
      worker: start.worker + PAYOUT,
      treasury: start.treasury + FEE,
      escrow: start.escrow,
    });
  }

  async function expectRefunded() {
    expect(await t.balances()).to.deep.equal(start);
  }

  async function expectLocked() {
    expect(await t.balances()).to.deep.equal({ ...start, poster: start.poster - AMOUNT, escrow: start.escrow + AMOUNT });
  }

  it("VerificationPassed: accepted, delivered, passed by the rules and paid with the fee rounded down", async function () {
    const { taskHash } = await postAuto();
    await t.expectState(taskHash, "open", EscrowStatus.Funded);
    await expectLocked();

    expect(expectOk(await t.accept(agentKey, taskHash)).status).to.equal("assigned");
    await t.expectState(taskHash, "assigned", EscrowStatus.Assigned);

    const txHash = await t.deliverOnChain(s.worker, agentKey, taskHash, PASSING);
    await t.expectState(taskHash, "submitted", EscrowStatus.Submitted);
    const finalized = expectOk(await t.finalize(agentKey, taskHash, txHash));
    expect(finalized).to.deep.include({ status: "verified", round: 1, roundsLeft: 2 });
    expect(finalized.verificationResult).to.deep.equal({ passed: true, score: 100, reasons: [] });

    await t.expectState(taskHash, "verified", EscrowStatus.Verified, Ending.VerificationPassed);
    await expectPaidOut();
    const row = await s.db.selectFrom("escrow_tasks").select(["payout", "fee"]).where("task_hash", "=", taskHash).executeTakeFirstOrThrow();
    expect(row).to.deep.equal({ payout: PAYOUT.toString(), fee: FEE.toString() });
    expect((await t.posted(posterKey, taskHash)).state.status).to.equal("verified");
  });

  it("DisputeWonByWorker: a failed verdict appealed by the worker, ruled for the worker by the admin", async function () {
    const { taskHash } = await postAuto();
    expectOk(await t.accept(agentKey, taskHash));
    const failed = await t.deliverAndFinalize(s.worker, agentKey, taskHash, FAILING);
    expect(failed.status).to.equal("failed");
    expect(failed.verificationResult?.passed).to.equal(false);
    await t.expectState(taskHash, "failed", EscrowStatus.Failed);

    await t.settle(s.worker, agentKey, taskHash, "dispute", "dispute");
    await t.expectState(taskHash, "disputed", EscrowStatus.Disputed);
    await expectLocked();

    await (await s.escrow.connect(s.admin).resolveDispute(taskHash, true)).wait();
    await s.sync();
    await t.expectState(taskHash, "completed", EscrowStatus.Paid, Ending.DisputeWonByWorker);
    await expectPaidOut();
  });

  it("UnjudgedWorkReleased: manual work nobody judged, escalated by the poster's claim, released by the worker after 14 days", async function () {
    const { taskHash } = await postManual();
    expectOk(await t.accept(agentKey, taskHash));
    const txHash = await t.deliverOnChain(s.worker, agentKey, taskHash, PASSING);
    const finalized = expectOk(await t.finalize(agentKey, taskHash, txHash));
    expect(finalized.status).to.equal("awaiting_verification");
    expect(finalized.verificationResult).to.equal(undefined);
    await t.expectAwaitingVerdict(taskHash);

    await t.travel(DAY);
    await t.settle(s.poster, posterKey, taskHash, "claim-timeout", "escalate");
    await t.expectState(taskHash, "escalated", EscrowStatus.Escalated);
    await expectLocked();

    expectError(await t.action(agentKey, taskHash, "release-unjudged"), "DEADLINE_NOT_REACHED");
    await t.travel(14 * DAY);
    await t.settle(s.worker, agentKey, taskHash, "release-unjudged", "payout");
    await t.expectState(taskHash, "completed", EscrowStatus.Paid, Ending.UnjudgedWorkReleased);
    await expectPaidOut();
  });

  it("CancelledWhileOpen: the poster cancels an open task and gets 100% back", async function () {
    const { taskHash } = await postAuto();
    await t.expectState(taskHash, "open", EscrowStatus.Funded);
    await expectLocked();
    await t.settle(s.poster, posterKey, taskHash, "cancel", "refund");
    await t.expectState(taskHash, "cancelled", EscrowStatus.Cancelled, Ending.CancelledWhileOpen);
    await expectRefunded();
  });

  it("NeverDelivered: accepted, nothing delivered by the deadline, the poster claims a full refund", async function () {
    const { taskHash } = await postAuto();
    expectOk(await t.accept(agentKey, taskHash));
    await t.travel(DAY);
    await t.expectState(taskHash, "assigned", EscrowStatus.Assigned);
    await t.settle(s.poster, posterKey, taskHash, "claim-timeout", "refund");
    await t.expectState(taskHash, "refunded", EscrowStatus.Refunded, Ending.NeverDelivered);
    await expectRefunded();
  });

  it("FailedUnfixed: three failed rounds, no fourth, no claim inside the appeal window, a full refund after it", async function () {
    const { taskHash } = await postAuto();
    expectOk(await t.accept(agentKey, taskHash));
    for (let round = 1; round <= 3; round++) {
      const failed = await t.deliverAndFinalize(s.worker, agentKey, taskHash, `${FAILING} ${round}`);
      expect(failed).to.deep.include({ status: "failed", round, roundsLeft: 3 - round });
    }
    expectError(await s.call("POST", `/api/v1/a2a/tasks/${taskHash}/deliver`, { key: agentKey, body: { output: PASSING } }), "NO_ATTEMPTS_LEFT");
    await t.expectState(taskHash, "failed", EscrowStatus.Failed);

    await t.travel(DAY);
    expectError(await t.action(posterKey, taskHash, "claim-timeout"), "APPEAL_WINDOW_OPEN");
    await t.travel(2 * DAY);
    await t.settle(s.poster, posterKey, taskHash, "claim-timeout", "refund");
    await t.expectState(taskHash, "refunded", EscrowStatus.Refunded, Ending.FailedUnfixed);
    await expectRefunded();
    expect((await t.escrowRow(taskHash)).rounds).to.equal(3);
  });

  it("DisputeWonByPoster: the poster disputes the delivered work and the admin rules for the poster", async function () {
    const { taskHash } = await postManual();
    expectOk(await t.accept(agentKey, taskHash));
    await t.deliverOnChain(s.worker, agentKey, taskHash, PASSING);
    await t.expectState(taskHash, "submitted", EscrowStatus.Submitted);

    await t.settle(s.poster, posterKey, taskHash, "dispute", "dispute");
    await t.expectState(taskHash, "disputed", EscrowStatus.Disputed);
    await expectLocked();

    await (await s.escrow.connect(s.admin).resolveDispute(taskHash, false)).wait();
    await s.sync();
    await t.expectState(taskHash, "refunded", EscrowStatus.Refunded, Ending.DisputeWonByPoster);
    await expectRefunded();
  });

  it("DisputeUnruled: a dispute without a ruling is refunded from 14 days after it was raised", async function () {
    const { taskHash } = await postAuto();
    expectOk(await t.accept(agentKey, taskHash));
    await t.settle(s.poster, posterKey, taskHash, "dispute", "dispute");
    await t.expectState(taskHash, "disputed", EscrowStatus.Disputed);

    await t.travel(DAY);
    expectError(await t.action(posterKey, taskHash, "claim-timeout"), "DISPUTE_PENDING");
    await t.travel(12 * DAY);
    expectError(await t.action(posterKey, taskHash, "claim-timeout"), "DISPUTE_PENDING");
    await t.travel(DAY);
    await t.settle(s.poster, posterKey, taskHash, "claim-timeout", "refund");
    await t.expectState(taskHash, "refunded", EscrowStatus.Refunded, Ending.DisputeUnruled);
    await expectRefunded();
  });

  it("GET /api/v1/a2a/tasks/posted shows the result hash of delivered tasks", async function () {
    const { taskHash } = await postAuto();
    expectOk(await t.accept(agentKey, taskHash));
    await t.deliverAndFinalize(s.worker, agentKey, taskHash, PASSING);
    const task = await t.posted(posterKey, taskHash);
    expect(task.state.status).to.equal("verified");
    expect(task.state.resultData?.resultHash).to.equal(resultHash(PASSING));
  });

  it("GET /api/v1/a2a/tasks/posted shows state.resultData.output with its verdict, and a manual task awaiting its verdict shows awaiting_verification", async function () {
    const { taskHash } = await postAuto();
    expectOk(await t.accept(agentKey, taskHash));
    await t.deliverAndFinalize(s.worker, agentKey, taskHash, PASSING);
    expect((await t.posted(posterKey, taskHash)).state.resultData).to.deep.equal({
      output: PASSING,
      resultHash: resultHash(PASSING),
      verificationResult: { passed: true, score: 100, reasons: [] },
    });

    const manual = await postManual();
    expectOk(await t.accept(agentKey, manual.taskHash));
    const txHash = await t.deliverOnChain(s.worker, agentKey, manual.taskHash, PASSING);
    expectOk(await t.finalize(agentKey, manual.taskHash, txHash));
    expect(await t.status(manual.taskHash)).to.equal("awaiting_verification");
    const posted = await t.posted(posterKey, manual.taskHash);
    expect(posted.state.status).to.equal("awaiting_verification");
    expect(posted.state.resultData?.output).to.equal(PASSING);
  });
});
