import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { Db } from "../db";
import { authenticated, principalOf, type Authenticate } from "../auth";
import type { ChainRegistry } from "../chains";
import { unsignedCall } from "../chains/calls";
import { requireOutbox, type Outbox } from "../outbox";
import { loadTask, requireLive, statusOf, type Delivery, type TaskContext } from "../tasks/context";
import { requireValidCriteria } from "../tasks/terms";
import type { Clock } from "../http/types";
import { CREDENTIALS, errorResponses, ok } from "../http/schemas";
import { createWindows, rateLimited } from "../http/rate-limit";
import { autoVerdict, recordVerifierVerdict, sendVerdict } from "./judge";
import type { VerifierPool } from "./pool";
import type { Verdict } from "@market/core/verification";
import type { AutoVerification } from "./auto";
import { Envelope, TaskHashParams, VerdictAnswer, VerdictBody, VerifyAnswer, VerifyBody, asTaskHash } from "@market/core/api";
import { MarketError } from "@market/core/errors";
import { actsOn, toEscrowStatus } from "@market/core/escrow";

export { autoVerdict, recordVerifierVerdict, sendVerdict } from "./judge";
export { createAutoVerification, type AutoVerification, type AutoVerificationDeps } from "./auto";
export { createVerifierPool, DEFAULT_VERIFIER_POOL, type VerifierPool, type VerifierPoolOptions } from "./pool";

/** Advisory (non-settling) verifications per wallet per minute. */
export const ADVISORY_VERIFY_PER_MINUTE = 30;
/** Advisory verifications per client IP per minute (many free wallets behind one address). */
export const ADVISORY_VERIFY_PER_IP_PER_MINUTE = 120;
/** Advisory verdicts kept, per (task, round, criteria): the oldest goes first. */
export const ADVISORY_CACHE_ENTRIES = 1_000;

/** The escrow takes a verdict while the task is Submitted (core/escrow), on the round the worker delivered last. */
function awaitsVerdict(onChain: TaskContext["onChain"], latest: Delivery | undefined): latest is Delivery {
  return actsOn("completeVerification", toEscrowStatus(onChain.status)) && latest !== undefined && latest.round === onChain.rounds;
}

export interface VerificationRouteDeps {
  auth: Authenticate;
  db: Db;
  chains: ChainRegistry;
  now: Clock;
  /** The verifier key's outbox per chain name (a `manual` verdict is sent by it). */
  outboxes: ReadonlyMap<string, Outbox>;
  indexerWaitMs?: number;
  verification: Pick<AutoVerification, "settle">;
  pool: Pick<VerifierPool, "evaluate">;
}

/** Verdicts of the poster (`manual`) or the verifier (`agent`), and verification runs on demand; under API_PREFIX, authenticated. */
export const verificationRoutes: FastifyPluginAsyncTypebox<VerificationRouteDeps> = async (app, deps) => {
  const { auth, db, chains, now, outboxes, indexerWaitMs, verification, pool } = deps;
  app.addHook("onRequest", authenticated(auth));
  // Each child gets its services, never this plugin's options (their `prefix` would be applied twice).
  await app.register(verdictRoutes, { db, chains, now, outboxes, indexerWaitMs });
  await app.register(verifyRoutes, { db, chains, now, verification, pool });
};

/** A verdict on the latest delivered round: the poster's (`manual`, sent by the verifier key) or the verifier agent's. */
const verdictRoutes: FastifyPluginAsyncTypebox<Pick<VerificationRouteDeps, "db" | "chains" | "now" | "outboxes" | "indexerWaitMs">> = async (
  app,
  deps,
) => {
  const { db, chains, now } = deps;
  app.post(
    "/a2a/tasks/:taskHash/verdict",
    {
      schema: {
        tags: ["verification"],
        summary: "Judge the latest delivered round: the poster in `manual` mode, the designated verifier in `agent` mode",
        description:
          "`manual`: the service's marketplace verifier key sends completeVerification and the answer comes once it is " +
          "confirmed (a pass pays the worker, a fail opens the 3-day appeal window). `agent`: the escrow takes the verdict " +
          "only from the verifier agent's own wallet, so the answer is the unsigned completeVerification for it to sign; " +
          "once it is mined, send the same verdict again with its `txHash`: the service records it (with the reasons) so the " +
          "task view shows `verificationResult`, and answers the settled status.",
        security: CREDENTIALS,
        params: TaskHashParams,
        body: VerdictBody,
        response: { 200: Envelope(VerdictAnswer), ...errorResponses(401, 403, 404, 409, 503) },
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const task = await loadTask(db, chains, request.params.taskHash);
      const { passed, reasons = [] } = request.body;
      const score = request.body.score ?? (passed ? 100 : 0);
      const mode = task.listing.verification_mode;
      if (mode === "auto")
        throw new MarketError("MODE_MISMATCH", "An auto task is judged by its rules: finalize, or POST /api/v1/verification/verify.");
      if (mode === "manual" && principal.wallet !== task.listing.poster)
        throw new MarketError("NOT_POSTER", "In manual mode only the poster judges.");
      if (mode === "agent" && principal.wallet !== task.listing.verifier_address) throw new MarketError("NOT_VERIFIER");
      if (request.body.txHash !== undefined) {
        if (mode !== "agent") throw new MarketError("MODE_MISMATCH", "`txHash` reports a verifier agent's own verdict (agent mode).");
        await recordVerifierVerdict({ db, now, indexerWaitMs: deps.indexerWaitMs }, task, principal.wallet, request.body.txHash, {
          passed,
          score,
          reasons,
        });
        const after = await loadTask(db, chains, task.listing.task_hash);
        return ok({ taskHash: asTaskHash(task.listing.task_hash), status: statusOf(after, now()), txHash: request.body.txHash.toLowerCase() });
      }
      const latest = task.delivery;
      if (!awaitsVerdict(task.onChain, latest)) {
        throw new MarketError("WRONG_STATE", "There is no submitted round awaiting a verdict.", { reason: statusOf(task, now()) });
      }
      if (mode === "agent") {
        await requireLive(db, task.listing.chain);
        return ok({
          taskHash: asTaskHash(task.listing.task_hash),
          status: "awaiting_verification" as const,
          unsignedTx: unsignedCall(task.chain, principal.wallet, "completeVerification", [task.listing.task_hash, passed, score]),
        });
      }
      const { txHash } = await sendVerdict(
        { db, outbox: requireOutbox(deps.outboxes, task.listing.chain), now, indexerWaitMs: deps.indexerWaitMs },
        task,
        latest,
        { passed, score, reasons, judgedBy: "poster" },
      );
      const after = await loadTask(db, chains, task.listing.task_hash);
      return ok({ taskHash: asTaskHash(task.listing.task_hash), status: statusOf(after, now()), txHash });
    },
  );
};

/** Verification on demand: settles an `auto` round awaiting it, else an advisory verdict, rate-limited and cached. */
const verifyRoutes: FastifyPluginAsyncTypebox<Pick<VerificationRouteDeps, "db" | "chains" | "now" | "verification" | "pool">> = async (app, deps) => {
  const { db, chains, now, verification } = deps;
  const advisory = createWindows(60_000);
  /** Advisory verdicts per (task, round, criteria): a delivered round never changes, so its verdict does not either. */
  const verdicts = new Map<string, Verdict>();
  async function cachedVerdict(key: string, compute: () => Promise<Verdict>): Promise<Verdict> {
    const hit = verdicts.get(key);
    if (hit) {
      verdicts.delete(key);
      verdicts.set(key, hit);
      return hit;
    }
    const verdict = await compute();
    verdicts.set(key, verdict);
    if (verdicts.size > ADVISORY_CACHE_ENTRIES) verdicts.delete(verdicts.keys().next().value!);
    return verdict;
  }

  app.post(
    "/verification/verify",
    {
      schema: {
        tags: ["verification"],
        summary: "Run verification of a task's latest delivery (poster, verifier or executor)",
        description:
          "For an `auto` task whose latest round is on chain and not judged yet, this settles the verdict exactly as " +
          "finalize does. Otherwise it answers the rule engine's opinion without settling (`settled: false`); the poster " +
          "or verifier may pass `verificationCriteria` to check against, the executor may not. A numeric `taskId` is " +
          "refused: send `taskHash` (SDK newer than 0.4.0).",
        security: CREDENTIALS,
        body: VerifyBody,
        response: { 200: Envelope(VerifyAnswer), ...errorResponses(401, 403, 404, 409, 503) },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const { taskHash, taskId, verificationCriteria } = request.body;
      if (taskHash === undefined) {
        throw taskId !== undefined
          ? new MarketError("TASK_ID_NOT_SUPPORTED")
          : new MarketError("VALIDATION_FAILED", "body.taskHash is required", { details: [{ field: "body.taskHash", message: "is required" }] });
      }
      const task = await loadTask(db, chains, taskHash);
      const { listing, onChain } = task;
      const role =
        principal.wallet === listing.poster
          ? "poster"
          : principal.wallet === listing.verifier_address
            ? "verifier"
            : principal.wallet === onChain.worker
              ? "executor"
              : undefined;
      if (!role) throw new MarketError("NOT_TASK_PARTY");
      if (verificationCriteria !== undefined) {
        if (role === "executor") throw new MarketError("CRITERIA_FROM_WORKER");
        requireValidCriteria(verificationCriteria, "auto");
      }
      if (
        listing.verification_criteria === null &&
        listing.routing_summary === null &&
        listing.public_brief === null &&
        verificationCriteria === undefined
      ) {
        throw new MarketError("NOTHING_TO_VERIFY");
      }
      const latest = task.delivery;
      if (!latest) throw new MarketError("WRONG_STATE", "Nothing was delivered yet.", { reason: statusOf(task, now()) });
      const evidenced =
        latest.round < onChain.rounds || (latest.round === onChain.rounds && latest.result_hash === onChain.result_hash?.toLowerCase());
      // Only the worker may question a result whose evidence is not on chain: a verdict tells about the output.
      if (role !== "executor" && !evidenced) throw new MarketError("EVIDENCE_NOT_CONFIRMED", "The latest round's evidence is not on chain yet.");
      const settles =
        listing.verification_mode === "auto" && verificationCriteria === undefined && awaitsVerdict(onChain, latest) && latest.passed === null;
      if (settles) {
        const judged = await verification.settle(task, latest);
        return ok({
          taskHash: asTaskHash(listing.task_hash),
          settled: true,
          status: judged.status,
          round: latest.round,
          verificationResult: judged.verificationResult!,
        });
      }
      // An opinion costs a pool thread up to its budget and settles nothing: each wallet, and each client IP, gets a few.
      const at = now();
      const wait =
        advisory.hit(`wallet:${principal.wallet}`, ADVISORY_VERIFY_PER_MINUTE, at) ??
        advisory.hit(`ip:${request.ip}`, ADVISORY_VERIFY_PER_IP_PER_MINUTE, at);
      if (wait !== undefined) {
        reply.header("retry-after", String(wait));
        throw rateLimited(wait, "advisory verifications");
      }
      const key = `${listing.chain}:${listing.task_hash}:${latest.round}:${verificationCriteria === undefined ? "" : JSON.stringify(verificationCriteria)}`;
      const verdict = await cachedVerdict(key, () => autoVerdict(deps.pool, task, latest.output, verificationCriteria ?? null));
      return ok({
        taskHash: asTaskHash(listing.task_hash),
        settled: false,
        status: statusOf(task, now()),
        round: latest.round,
        verificationResult: verdict,
      });
    },
  );
};
