/**
 * Verdicts other than finalize's rules: the poster's in `manual` mode (sent by the marketplace verifier key), the
 * verifier agent's in `agent` mode (its own transaction), and POST /api/v1/verification/verify.
 */
import { expect } from "chai";
import { type TestServer } from "../harness";
import { expectError, expectOk } from "../expect";
import { ADVISORY_VERIFY_PER_MINUTE } from "../../../server/verification";
import {
  AMOUNT,
  brief,
  CRITERIA,
  Ending,
  EscrowStatus,
  FAILING,
  FEE,
  partiesServer,
  PASSING,
  PAYOUT,
  steps,
  type Balances,
  type Steps,
  type UnsignedTx,
} from "./helpers";

interface VerdictAnswer {
  taskHash: string;
  status: string;
  txHash?: string;
  unsignedTx?: UnsignedTx & { from: string; chainId: number; value: string };
}
interface VerifyAnswer {
  taskHash: string;
  settled: boolean;
  status: string;
  round: number;
  verificationResult: { passed: boolean; score: number; reasons: string[] };
}

describe("lifecycle: verdicts", function () {
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

  const verdict = (key: string, taskHash: string, body: { passed: boolean; score?: number; reasons?: string[]; txHash?: string }) =>
    s.call<VerdictAnswer>("POST", `/api/v1/a2a/tasks/${taskHash}/verdict`, { key, body });
  const verify = (key: string, body: Record<string, unknown>) => s.call<VerifyAnswer>("POST", "/api/v1/verification/verify", { key, body });

  async function expectPaidOut() {
    expect(await t.balances()).to.deep.equal({
      poster: start.poster - AMOUNT,
      worker: start.worker + PAYOUT,
      treasury: start.treasury + FEE,
      escrow: start.escrow,
    });
  }

  /** A manual task accepted and delivered (evidence on chain), finalized: awaiting the poster's verdict. */
  async function awaitingPoster(output = PASSING) {
    const { taskHash } = await t.postPublic(posterKey, "manual");
    expectOk(await t.accept(agentKey, taskHash));
    const txHash = await t.deliverOnChain(s.worker, agentKey, taskHash, output);
    expect(expectOk(await t.finalize(agentKey, taskHash, txHash)).status).to.equal("awaiting_verification");
    return taskHash;
  }

  describe("manual mode: the poster judges", function () {
    it("a pass is settled by the marketplace verifier key and pays the worker", async function () {
      const taskHash = await awaitingPoster(FAILING);
      await (await s.escrow.connect(s.admin).pause()).wait();
      await s.sync();
      expectError(await verdict(posterKey, taskHash, { passed: true }), "ESCROW_PAUSED");
      await (await s.escrow.connect(s.admin).unpause()).wait();
      await s.sync();
      const answer = expectOk(await verdict(posterKey, taskHash, { passed: true }));
      expect(answer.status).to.equal("verified");
      const sent = await s.db.selectFrom("outbox").select(["tx_hash", "status", "purpose"]).where("purpose", "like", "verdict:%").execute();
      expect(sent).to.deep.equal([{ tx_hash: answer.txHash, status: "mined", purpose: `verdict:arc:${taskHash}:1` }]);
      await t.expectState(taskHash, "verified", EscrowStatus.Verified, Ending.VerificationPassed);
      const judged = await s.db.selectFrom("deliveries").select(["passed", "score", "judged_by"]).executeTakeFirstOrThrow();
      expect(judged).to.deep.equal({ passed: 1, score: 100, judged_by: "poster" });
      await expectPaidOut();
      // Judged: no second verdict.
      expectError(await verdict(posterKey, taskHash, { passed: false }), "WRONG_STATE");
    });

    it("a fail opens the appeal window; the worker delivers again and the poster passes round 2", async function () {
      const taskHash = await awaitingPoster();
      const failed = expectOk(await verdict(posterKey, taskHash, { passed: false, score: 20, reasons: ["not what I asked for"] }));
      expect(failed.status).to.equal("failed");
      await t.expectState(taskHash, "failed", EscrowStatus.Failed);
      const row = await s.db.selectFrom("escrow_tasks").select(["last_score", "rounds"]).where("task_hash", "=", taskHash).executeTakeFirstOrThrow();
      expect(row).to.deep.equal({ last_score: 20, rounds: 1 });

      const txHash = await t.deliverOnChain(s.worker, agentKey, taskHash, `${PASSING} Now with more detail.`);
      expect(expectOk(await t.finalize(agentKey, taskHash, txHash))).to.deep.include({ status: "awaiting_verification", round: 2, roundsLeft: 1 });
      expect(expectOk(await verdict(posterKey, taskHash, { passed: true })).status).to.equal("verified");
      await t.expectState(taskHash, "verified", EscrowStatus.Verified, Ending.VerificationPassed);
      await expectPaidOut();
    });

    it("MODE_MISMATCH on an auto task; NOT_POSTER for anyone else; WRONG_STATE with nothing submitted", async function () {
      const auto = await t.postPublic(posterKey);
      expectOk(await t.accept(agentKey, auto.taskHash));
      await t.deliverOnChain(s.worker, agentKey, auto.taskHash, PASSING);
      expectError(await verdict(posterKey, auto.taskHash, { passed: true }), "MODE_MISMATCH");

      const { taskHash } = await t.postPublic(posterKey, "manual");
      const strangerKey = await s.apiKeyFor(s.stranger);
      expectError(await verdict(strangerKey, taskHash, { passed: true }), "NOT_POSTER");
      expectOk(await t.accept(agentKey, taskHash));
      expectError(await verdict(agentKey, taskHash, { passed: true }), "NOT_POSTER");
      const nothing = await verdict(posterKey, taskHash, { passed: true });
      expectError(nothing, "WRONG_STATE");
      expect((nothing.body.error as { reason?: string }).reason).to.equal("assigned");
      await t.expectState(taskHash, "assigned", EscrowStatus.Assigned);
    });
  });

  describe("agent mode: the designated verifier judges with its own transaction", function () {
    it("NOT_VERIFIER for the poster and others; the verifier signs completeVerification and the task settles", async function () {
      const { taskHash } = await s.post(
        s.poster,
        posterKey,
        s.publicTask(brief(), { verificationMode: "agent", verificationCriteria: undefined, verifierAddress: s.agentVerifier.address }),
        AMOUNT,
      );
      expectOk(await t.accept(agentKey, taskHash));
      const txHash = await t.deliverOnChain(s.worker, agentKey, taskHash, PASSING);
      expect(expectOk(await t.finalize(agentKey, taskHash, txHash)).status).to.equal("awaiting_verification");

      expectError(await verdict(posterKey, taskHash, { passed: true }), "NOT_VERIFIER");
      expectError(await verdict(agentKey, taskHash, { passed: true }), "NOT_VERIFIER");
      const verifierKey = await s.apiKeyFor(s.agentVerifier);
      // The verifier reads what it judges; anyone else but the poster and the worker does not.
      const seen = async (key: string) =>
        expectOk(await s.call<{ state: { resultData?: { output?: string } } }>("GET", `/api/v1/tasks/${taskHash}`, { key })).state.resultData?.output;
      expect(await seen(verifierKey)).to.equal(PASSING);
      expect(await seen(await s.apiKeyFor(s.stranger))).to.equal(undefined);
      // No transaction the escrow would refuse: not while it is paused.
      await (await s.escrow.connect(s.admin).pause()).wait();
      await s.sync();
      expectError(await verdict(verifierKey, taskHash, { passed: true, score: 90 }), "ESCROW_PAUSED");
      await (await s.escrow.connect(s.admin).unpause()).wait();
      await s.sync();
      const answer = expectOk(await verdict(verifierKey, taskHash, { passed: true, score: 90 }));
      expect(answer.status).to.equal("awaiting_verification");
      expect(answer.unsignedTx).to.deep.include({
        from: s.agentVerifier.address,
        to: s.escrowAddress,
        value: "0",
        data: s.escrow.interface.encodeFunctionData("completeVerification", [taskHash, true, 90]),
      });
      await t.sign(s.agentVerifier, answer.unsignedTx!);

      await t.expectState(taskHash, "verified", EscrowStatus.Verified, Ending.VerificationPassed);
      const row = await s.db.selectFrom("escrow_tasks").select("last_score").where("task_hash", "=", taskHash).executeTakeFirstOrThrow();
      expect(row.last_score).to.equal(90);
      // Never reported back with its hash: the task view still shows the verdict the chain settled (no reasons), to
      // the poster, the worker and the verifier.
      const verdictSeen = async (key: string) =>
        expectOk(await s.call<{ state: { resultData?: { verificationResult?: unknown } } }>("GET", `/api/v1/tasks/${taskHash}`, { key })).state
          .resultData?.verificationResult;
      for (const key of [posterKey, agentKey, verifierKey]) expect(await verdictSeen(key)).to.deep.equal({ passed: true, score: 90, reasons: [] });
      await expectPaidOut();
      // The service's key sent only the assignment.
      expect((await s.db.selectFrom("outbox").select("purpose").execute()).map((r) => r.purpose.split(":")[0])).to.deep.equal(["assign"]);
    });
  });

  describe("agent mode: the verifier reports its mined verdict (txHash), and every party sees it", function () {
    it("records the verdict with its reasons for the poster, the worker and the verifier; refuses a receipt that does not settle it", async function () {
      const { taskHash, txHash: fundingTx } = await s.post(
        s.poster,
        posterKey,
        s.publicTask(brief(), { verificationMode: "agent", verificationCriteria: undefined, verifierAddress: s.agentVerifier.address }),
        AMOUNT,
      );
      expectOk(await t.accept(agentKey, taskHash));
      const evidence = await t.deliverOnChain(s.worker, agentKey, taskHash, PASSING);
      expectOk(await t.finalize(agentKey, taskHash, evidence));
      const verifierKey = await s.apiKeyFor(s.agentVerifier);
      const rejection = { passed: false, score: 20, reasons: ["The summary misses the second finding."] };
      const answer = expectOk(await verdict(verifierKey, taskHash, rejection));
      const verdictTx = await t.sign(s.agentVerifier, answer.unsignedTx!);
      await s.sync();

      // Not the verifier, or a receipt that does not carry this verdict: refused, nothing recorded.
      expectError(await verdict(agentKey, taskHash, { ...rejection, txHash: verdictTx }), "NOT_VERIFIER");
      expectError(await verdict(verifierKey, taskHash, { ...rejection, txHash: fundingTx }), "VERDICT_MISMATCH");
      expectError(await verdict(verifierKey, taskHash, { ...rejection, score: 21, txHash: verdictTx }), "VERDICT_MISMATCH");
      expectError(await verdict(verifierKey, taskHash, { ...rejection, passed: true, txHash: verdictTx }), "VERDICT_MISMATCH");
      expectError(await verdict(verifierKey, taskHash, { ...rejection, txHash: `0x${"ab".repeat(32)}` }), "TX_NOT_FOUND");
      expect((await s.db.selectFrom("deliveries").select("reasons").where("task_hash", "=", taskHash).executeTakeFirstOrThrow()).reasons).to.equal(
        null,
      );

      const recorded = expectOk(await verdict(verifierKey, taskHash, { ...rejection, txHash: verdictTx }));
      expect(recorded).to.deep.include({ taskHash, status: "failed", txHash: verdictTx });
      for (const key of [posterKey, agentKey, verifierKey]) {
        const view = expectOk(
          await s.call<{ state: { status: string; resultData?: { verificationResult?: unknown } } }>("GET", `/api/v1/tasks/${taskHash}`, { key }),
        );
        expect(view.state.status).to.equal("failed");
        expect(view.state.resultData?.verificationResult).to.deep.equal(rejection);
      }
      // Reported again: the same answer, nothing changes.
      expect(expectOk(await verdict(verifierKey, taskHash, { ...rejection, txHash: verdictTx })).status).to.equal("failed");

      // A manual task takes no txHash: its verdict is sent by the service.
      const manual = await t.postPublic(posterKey, "manual");
      expectError(await verdict(posterKey, manual.taskHash, { passed: true, txHash: verdictTx }), "MODE_MISMATCH");
    });
  });

  describe("POST /api/v1/verification/verify", function () {
    it("TASK_ID_NOT_SUPPORTED for a numeric taskId; NOT_TASK_PARTY for a stranger; CRITERIA_FROM_EXECUTOR", async function () {
      const { taskHash } = await t.postPublic(posterKey);
      expectOk(await t.accept(agentKey, taskHash));
      await t.deliverOnChain(s.worker, agentKey, taskHash, PASSING);

      expectError(await verify(posterKey, { taskId: 5 }), "TASK_ID_NOT_SUPPORTED");
      expectError(await verify(posterKey, { taskId: "5" }), "TASK_ID_NOT_SUPPORTED");
      expectError(await verify(await s.apiKeyFor(s.stranger), { taskHash }), "NOT_TASK_PARTY");
      expectError(await verify(agentKey, { taskHash, verificationCriteria: { min_length: 1 } }), "CRITERIA_FROM_EXECUTOR");
      await t.expectState(taskHash, "submitted", EscrowStatus.Submitted);
    });

    it("NOTHING_TO_VERIFY: a private manual task without criteria or routing summary", async function () {
      const { fields } = await s.privateTask(brief("A private brief."), [s.worker], posterKey, {
        verificationMode: "manual",
        verificationCriteria: undefined,
      });
      const { taskHash } = await s.post(s.poster, posterKey, fields, AMOUNT);
      expectOk(await t.accept(agentKey, taskHash));
      await t.deliverOnChain(s.worker, agentKey, taskHash, PASSING);
      expectError(await verify(posterKey, { taskHash }), "NOTHING_TO_VERIFY");
      expectError(await verify(agentKey, { taskHash }), "NOTHING_TO_VERIFY");

      // Criteria from the poster give it something to check, without settling.
      const advisory = expectOk(await verify(posterKey, { taskHash, verificationCriteria: { min_length: 5 } }));
      expect(advisory).to.deep.include({ settled: false, status: "submitted", round: 1 });
      expect(advisory.verificationResult.passed).to.equal(true);
    });

    it("limits advisory verifications per wallet (each may run a regex on the event loop): RATE_LIMITED with Retry-After", async function () {
      const { taskHash } = await s.post(s.poster, posterKey, s.publicTask(brief(), { verificationMode: "manual" }), AMOUNT);
      expectOk(await t.accept(agentKey, taskHash));
      await t.deliverOnChain(s.worker, agentKey, taskHash, PASSING);
      for (let i = 0; i < ADVISORY_VERIFY_PER_MINUTE; i++) expectOk(await verify(posterKey, { taskHash, verificationCriteria: { min_length: 5 } }));
      const limited = await verify(posterKey, { taskHash, verificationCriteria: { min_length: 5 } });
      expectError(limited, "RATE_LIMITED");
      expect(Number(limited.headers["retry-after"])).to.be.within(1, 60);
      // Another wallet has its own allowance.
      expectOk(await verify(agentKey, { taskHash }));
    });

    it("settles an auto task whose evidence is on chain but was never finalized", async function () {
      const { taskHash } = await t.postPublic(posterKey);
      expectOk(await t.accept(agentKey, taskHash));
      await t.deliverOnChain(s.worker, agentKey, taskHash, PASSING);
      await t.expectState(taskHash, "submitted", EscrowStatus.Submitted);

      const settled = expectOk(await verify(posterKey, { taskHash }));
      expect(settled).to.deep.equal({
        taskHash,
        settled: true,
        status: "verified",
        round: 1,
        verificationResult: { passed: true, score: 100, reasons: [] },
      });
      await t.expectState(taskHash, "verified", EscrowStatus.Verified, Ending.VerificationPassed);
      await expectPaidOut();

      // Judged already: advisory from now on, for the executor too.
      const again = expectOk(await verify(agentKey, { taskHash }));
      expect(again).to.deep.include({ settled: false, status: "verified" });
      // Finalize answers the same settled verdict.
      expect(expectOk(await t.finalize(agentKey, taskHash)).status).to.equal("verified");
    });

    it("answers an advisory verdict (settled: false) when it cannot settle", async function () {
      const taskHash = await awaitingPoster(FAILING);
      const advisory = expectOk(await verify(posterKey, { taskHash, verificationCriteria: CRITERIA }));
      expect(advisory.settled).to.equal(false);
      expect(advisory.status).to.equal("awaiting_verification");
      expect(advisory.verificationResult.passed).to.equal(false);
      expect(advisory.verificationResult.reasons).to.have.length.above(0);
      await t.expectAwaitingVerdict(taskHash);
      expect(await t.balances()).to.deep.equal({ ...start, poster: start.poster - AMOUNT, escrow: start.escrow + AMOUNT });

      // An auto task with criteria from the poster: advisory too, nothing settled.
      const { taskHash: auto } = await t.postPublic(posterKey);
      expectOk(await t.accept(agentKey, auto));
      await t.deliverOnChain(s.worker, agentKey, auto, PASSING);
      expect(expectOk(await verify(posterKey, { taskHash: auto, verificationCriteria: { min_length: 5000 } }))).to.deep.include({
        settled: false,
        status: "submitted",
      });
      await t.expectState(auto, "submitted", EscrowStatus.Submitted);
    });
  });
});
