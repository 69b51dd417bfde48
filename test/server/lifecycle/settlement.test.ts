/**
 * The pre-checks of the transactions posters and workers sign themselves (cancel, claim-timeout, dispute,
 * release-unjudged): each refusal the escrow would give is answered with its code instead of a transaction.
 */
import { expect } from "chai";
import { type TestServer } from "../harness";
import { expectError, expectOk } from "../expect";
import { DAY, Ending, EscrowStatus, FAILING, partiesAndStrangerServer, PASSING, steps, type Steps } from "./helpers";

describe("lifecycle: settlement pre-checks", function () {
  let s: TestServer;
  let t: Steps;
  let agentKey: string;
  let posterKey: string;
  let strangerKey: string;

  beforeEach(async function () {
    ({
      server: s,
      seeded: { agentKey, posterKey, strangerKey },
    } = await partiesAndStrangerServer());
    t = steps(s);
  });
  afterEach(async function () {
    await s.close();
  });

  const post = (mode: "auto" | "manual" = "auto") => t.postPublic(posterKey, mode);

  async function accepted(mode: "auto" | "manual" = "auto") {
    const { taskHash } = await post(mode);
    expectOk(await t.accept(agentKey, taskHash));
    return taskHash;
  }

  async function failed() {
    const taskHash = await accepted();
    expect((await t.deliverAndFinalize(s.worker, agentKey, taskHash, FAILING)).status).to.equal("failed");
    return taskHash;
  }

  /** Manual work delivered and left unjudged past the deadline, escalated by the poster's claim. */
  async function escalated() {
    const taskHash = await accepted("manual");
    await t.deliverOnChain(s.worker, agentKey, taskHash, PASSING);
    await t.travel(DAY);
    await t.settle(s.poster, posterKey, taskHash, "claim-timeout", "escalate");
    return taskHash;
  }

  describe("cancel", function () {
    it("NOT_POSTER for the agent and a stranger; WRONG_STATE once the task is assigned", async function () {
      const { taskHash } = await post();
      expectError(await t.action(agentKey, taskHash, "cancel"), "NOT_POSTER");
      expectError(await t.action(strangerKey, taskHash, "cancel"), "NOT_POSTER");
      expectOk(await t.accept(agentKey, taskHash));
      const refused = await t.action(posterKey, taskHash, "cancel");
      expectError(refused, "WRONG_STATE");
      expect((refused.body.error as { reason?: string }).reason).to.equal("assigned");
      await t.expectState(taskHash, "assigned", EscrowStatus.Assigned);
    });

    it("an open task past its deadline (expired) can still be cancelled", async function () {
      const { taskHash } = await post();
      await t.travel(DAY);
      await t.expectState(taskHash, "expired", EscrowStatus.Funded);
      await t.settle(s.poster, posterKey, taskHash, "cancel", "refund");
      await t.expectState(taskHash, "cancelled", EscrowStatus.Cancelled, Ending.CancelledWhileOpen);
    });
  });

  describe("claim-timeout", function () {
    it("NOT_POSTER; DEADLINE_NOT_REACHED before the deadline; a refund from the deadline on", async function () {
      const taskHash = await accepted();
      expectError(await t.action(agentKey, taskHash, "claim-timeout"), "NOT_POSTER");
      expectError(await t.action(posterKey, taskHash, "claim-timeout"), "DEADLINE_NOT_REACHED");
      await t.travel(DAY - 60);
      expectError(await t.action(posterKey, taskHash, "claim-timeout"), "DEADLINE_NOT_REACHED");
      await t.travel(60);
      expect(expectOk(await t.action(posterKey, taskHash, "claim-timeout")).outcome).to.equal("refund");
    });

    it("APPEAL_WINDOW_OPEN for 3 days after a failed verdict, even past the deadline", async function () {
      const taskHash = await failed();
      expectError(await t.action(posterKey, taskHash, "claim-timeout"), "DEADLINE_NOT_REACHED");
      await t.travel(DAY);
      expectError(await t.action(posterKey, taskHash, "claim-timeout"), "APPEAL_WINDOW_OPEN");
      await t.travel(2 * DAY - 60);
      expectError(await t.action(posterKey, taskHash, "claim-timeout"), "APPEAL_WINDOW_OPEN");
      await t.travel(60);
      await t.settle(s.poster, posterKey, taskHash, "claim-timeout", "refund");
      await t.expectState(taskHash, "refunded", EscrowStatus.Refunded, Ending.FailedUnfixed);
    });

    it("DISPUTE_PENDING for 14 days after a dispute", async function () {
      const taskHash = await accepted();
      await t.settle(s.poster, posterKey, taskHash, "dispute", "dispute");
      expectError(await t.action(posterKey, taskHash, "claim-timeout"), "DEADLINE_NOT_REACHED");
      await t.travel(DAY);
      expectError(await t.action(posterKey, taskHash, "claim-timeout"), "DISPUTE_PENDING");
      await t.travel(13 * DAY - 60);
      expectError(await t.action(posterKey, taskHash, "claim-timeout"), "DISPUTE_PENDING");
      await t.travel(60);
      expect(expectOk(await t.action(posterKey, taskHash, "claim-timeout")).outcome).to.equal("refund");
    });

    it("WRONG_STATE for an escalated or settled task, before its deadline too (no claim will ever open)", async function () {
      const taskHash = await escalated();
      expectError(await t.action(posterKey, taskHash, "claim-timeout"), "WRONG_STATE");
      const done = await accepted();
      await t.deliverAndFinalize(s.worker, agentKey, done, PASSING);
      const early = await t.action(posterKey, done, "claim-timeout");
      expectError(early, "WRONG_STATE");
      expect((early.body.error as { reason?: string }).reason).to.equal("verified");
      await t.travel(DAY);
      const refused = await t.action(posterKey, done, "claim-timeout");
      expectError(refused, "WRONG_STATE");
      expect((refused.body.error as { reason?: string }).reason).to.equal("verified");
    });
  });

  describe("dispute", function () {
    it("NOT_TASK_PARTY for a stranger; WRONG_STATE for an open task", async function () {
      const { taskHash } = await post();
      expectError(await t.action(posterKey, taskHash, "dispute"), "WRONG_STATE");
      expectOk(await t.accept(agentKey, taskHash));
      expectError(await t.action(strangerKey, taskHash, "dispute"), "NOT_TASK_PARTY");
      expectError(await t.action(await s.apiKeyFor(s.newAdmin), taskHash, "dispute"), "NOT_TASK_PARTY");
    });

    it("DEADLINE_PASSED for the poster after the deadline, and for the worker once the appeal window closed too", async function () {
      const taskHash = await failed();
      await t.travel(DAY);
      expectError(await t.action(posterKey, taskHash, "dispute"), "DEADLINE_PASSED");
      // Past the deadline the worker may still appeal the failed verdict, for 3 days.
      expect(expectOk(await t.action(agentKey, taskHash, "dispute")).outcome).to.equal("dispute");
      await t.travel(2 * DAY);
      expectError(await t.action(agentKey, taskHash, "dispute"), "DEADLINE_PASSED");
      expectError(await t.action(posterKey, taskHash, "dispute"), "DEADLINE_PASSED");
    });

    it("the worker's appeal past the deadline goes through on chain", async function () {
      const taskHash = await failed();
      await t.travel(DAY);
      await t.settle(s.worker, agentKey, taskHash, "dispute", "dispute");
      await t.expectState(taskHash, "disputed", EscrowStatus.Disputed);
    });
  });

  describe("release-unjudged", function () {
    it("NOT_EXECUTOR for a stranger and the poster; WRONG_STATE before escalation; DEADLINE_NOT_REACHED before 14 days", async function () {
      const taskHash = await accepted("manual");
      await t.deliverOnChain(s.worker, agentKey, taskHash, PASSING);
      expectError(await t.action(agentKey, taskHash, "release-unjudged"), "WRONG_STATE");
      await t.travel(DAY);
      await t.settle(s.poster, posterKey, taskHash, "claim-timeout", "escalate");

      expectError(await t.action(strangerKey, taskHash, "release-unjudged"), "NOT_EXECUTOR");
      expectError(await t.action(posterKey, taskHash, "release-unjudged"), "NOT_EXECUTOR");
      expectError(await t.action(agentKey, taskHash, "release-unjudged"), "DEADLINE_NOT_REACHED");
      await t.travel(14 * DAY - 60);
      expectError(await t.action(agentKey, taskHash, "release-unjudged"), "DEADLINE_NOT_REACHED");
      await t.travel(60);
      await t.settle(s.worker, agentKey, taskHash, "release-unjudged", "payout");
      await t.expectState(taskHash, "completed", EscrowStatus.Paid, Ending.UnjudgedWorkReleased);
    });
  });

  describe("a paused escrow", function () {
    it("ESCROW_PAUSED for every user settlement until the admin unpauses", async function () {
      const open = await post();
      const assigned = await accepted();
      const disputed = await accepted();
      await t.settle(s.poster, posterKey, disputed, "dispute", "dispute");

      await (await s.escrow.connect(s.admin).pause()).wait();
      await s.sync();
      expectError(await t.action(posterKey, open.taskHash, "cancel"), "ESCROW_PAUSED");
      expectError(await t.action(strangerKey, open.taskHash, "cancel"), "ESCROW_PAUSED");
      expectError(await t.action(posterKey, assigned, "dispute"), "ESCROW_PAUSED");
      expectError(await t.action(agentKey, assigned, "release"), "ESCROW_PAUSED");
      await t.travel(15 * DAY);
      expectError(await t.action(posterKey, assigned, "claim-timeout"), "ESCROW_PAUSED");
      expectError(await t.action(posterKey, disputed, "claim-timeout"), "ESCROW_PAUSED");
      expectError(await t.action(agentKey, disputed, "release-unjudged"), "ESCROW_PAUSED");

      await (await s.escrow.connect(s.admin).unpause()).wait();
      await s.sync();
      // The pause moved every live deadline and window by its length.
      expectError(await t.action(posterKey, assigned, "claim-timeout"), "DEADLINE_NOT_REACHED");
      expectError(await t.action(posterKey, disputed, "claim-timeout"), "DEADLINE_NOT_REACHED");
      await t.settle(s.poster, posterKey, open.taskHash, "cancel", "refund");
      await t.expectState(open.taskHash, "cancelled", EscrowStatus.Cancelled, Ending.CancelledWhileOpen);
    });

    it("ESCROW_PAUSED for accepting, delivering and finalizing too; each goes through after the unpause", async function () {
      const open = await post();
      const assigned = await accepted();
      const submitted = await accepted();
      const evidence = await t.deliverOnChain(s.worker, agentKey, submitted, PASSING);

      await (await s.escrow.connect(s.admin).pause()).wait();
      await s.sync();
      expectError(await t.accept(strangerKey, open.taskHash), "ESCROW_PAUSED");
      expectError(await s.call("POST", `/api/v1/a2a/tasks/${assigned}/deliver`, { key: agentKey, body: { output: PASSING } }), "ESCROW_PAUSED");
      expectError(await t.finalize(agentKey, submitted, evidence), "ESCROW_PAUSED");
      expect(await s.db.selectFrom("assignments").select("task_hash").where("task_hash", "=", open.taskHash).execute()).to.have.length(0);
      await t.expectState(open.taskHash, "open", EscrowStatus.Funded);
      await t.expectState(submitted, "submitted", EscrowStatus.Submitted);

      await (await s.escrow.connect(s.admin).unpause()).wait();
      await s.sync();
      expect(expectOk(await t.accept(strangerKey, open.taskHash)).worker).to.equal(s.stranger.address);
      expect((await t.deliverAndFinalize(s.worker, agentKey, assigned, PASSING)).status).to.equal("verified");
      expect(expectOk(await t.finalize(agentKey, submitted, evidence)).status).to.equal("verified");
    });
  });
});
