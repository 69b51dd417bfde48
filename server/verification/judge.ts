import type { Db } from "../db";
import { json } from "../db";
import type { Outbox } from "../outbox";
import { chainCall } from "../chains";
import { OutboxRevert } from "../outbox";
import { waitForIndexer, type Delivery, type TaskContext } from "../tasks/context";
import { listedFields } from "../tasks/listing-codec";
import { MarketError } from "@market/core/errors";
import { decodeEscrowEvent, EscrowStatus } from "@market/core/escrow";
import type { Verdict, VerificationCriteria } from "@market/core/verification";
import type { VerifierPool } from "./pool";
import { appendEvents } from "../events";

export interface JudgedBy {
  judgedBy: "auto" | "poster";
}

/** The rule engine's verdict on a delivered output, against the task's criteria and (for echo checks) its brief, on a pool thread. */
export function autoVerdict(
  pool: Pick<VerifierPool, "evaluate">,
  ctx: Pick<TaskContext, "listing">,
  output: string,
  criteria?: VerificationCriteria | null,
): Promise<Verdict> {
  const listed = listedFields(ctx.listing);
  const rules = criteria ?? listed.verificationCriteria ?? {};
  return pool.evaluate(output, rules, listed.publicBrief ?? listed.routingSummary ?? undefined);
}

/**
 * Sends the marketplace verifier's `completeVerification` for the latest submitted round, checks that the receipt
 * settled it as asked (a pass carries `TaskCompleted`, a fail a failed `VerificationCompleted`), records the verdict
 * and waits for the indexer to show it. Idempotent per round: a retry waits for the same transaction.
 */
export async function sendVerdict(
  deps: { db: Db; outbox: Outbox; now: () => number; indexerWaitMs?: number },
  ctx: TaskContext,
  delivery: Delivery,
  verdict: Verdict & JudgedBy,
): Promise<{ txHash: string }> {
  const { listing, chain } = ctx;
  const { db, outbox, now } = deps;
  const data = chain.escrow.interface.encodeFunctionData("completeVerification", [listing.task_hash, verdict.passed, verdict.score]);
  let sent;
  try {
    sent = await outbox.send(`verdict:${chain.name}:${listing.task_hash}:${delivery.round}`, chain.config.escrow, data);
  } catch (error) {
    if (error instanceof OutboxRevert) {
      if (error.revert?.name === "EscrowPaused") throw new MarketError("ESCROW_PAUSED", undefined, { cause: error });
      throw new MarketError("WRONG_STATE", `The escrow refused the verdict: ${error.message}`, { cause: error });
    }
    throw error;
  }
  const settled = sent.receipt.logs.some((log) => {
    if (log.address.toLowerCase() !== chain.config.escrow.toLowerCase()) return false;
    const event = decodeEscrowEvent(log.topics, log.data);
    if (!event || !("taskHash" in event.args) || event.args.taskHash.toLowerCase() !== listing.task_hash) return false;
    return verdict.passed ? event.event === "TaskCompleted" : event.event === "VerificationCompleted" && !event.args.passed;
  });
  if (!settled) throw new MarketError("VERDICT_MISMATCH", `Transaction ${sent.txHash} did not settle the verdict as sent.`);
  await recordVerdict(db, ctx, delivery, { ...verdict, finalizedAt: delivery.finalized_at ?? now() }, now());
  const expected = verdict.passed ? EscrowStatus.Verified : EscrowStatus.Failed;
  await waitForIndexer(async () => {
    const row = await db
      .selectFrom("escrow_tasks")
      .select(["status", "rounds"])
      .where("chain", "=", chain.name)
      .where("task_hash", "=", listing.task_hash)
      .executeTakeFirst();
    return row !== undefined && (row.status === expected || row.rounds > delivery.round);
  }, deps.indexerWaitMs);
  return { txHash: sent.txHash };
}

/**
 * Records the verdict a task's verifier agent settled with its own completeVerification (`txHash`, mined): the
 * receipt must carry this task's VerificationCompleted from `verifier` with the same pass and score, for a delivered
 * round; the round's delivery then shows it (with the reasons the verifier gives) and the answer waits for the indexer
 * to show the settlement. Recording the same verdict again changes nothing.
 */
export async function recordVerifierVerdict(
  deps: { db: Db; now: () => number; indexerWaitMs?: number },
  ctx: TaskContext,
  verifier: string,
  txHash: string,
  verdict: Pick<Verdict, "passed" | "score" | "reasons">,
): Promise<{ round: number }> {
  const { listing, chain } = ctx;
  const receipt = await chainCall(() => chain.provider.getTransactionReceipt(txHash));
  if (!receipt) throw new MarketError("TX_NOT_FOUND", `No receipt for ${txHash} yet; send it again once it is mined.`);
  if (receipt.status !== 1) throw new MarketError("TX_REVERTED", "The verdict transaction reverted.");
  let settled: { round: number; passed: boolean; score: number; verifier: string } | undefined;
  for (const log of receipt.logs) {
    if (log.address.toLowerCase() !== chain.config.escrow.toLowerCase()) continue;
    const event = decodeEscrowEvent(log.topics, log.data);
    if (event?.event !== "VerificationCompleted" || event.args.taskHash.toLowerCase() !== listing.task_hash) continue;
    settled = { round: Number(event.args.round), passed: event.args.passed, score: Number(event.args.score), verifier: event.args.verifier };
  }
  if (!settled || settled.verifier.toLowerCase() !== verifier.toLowerCase() || settled.passed !== verdict.passed || settled.score !== verdict.score) {
    throw new MarketError("VERDICT_MISMATCH", `Transaction ${txHash} does not settle this verdict on this task from ${verifier}.`);
  }
  const { round } = settled;
  const delivery = await deps.db
    .selectFrom("deliveries")
    .selectAll()
    .where("task_hash", "=", listing.task_hash)
    .where("round", "=", round)
    .executeTakeFirst();
  if (!delivery) throw new MarketError("WRONG_STATE", `No delivery of round ${round} is recorded for this task.`);
  if (delivery.passed === null) {
    await recordVerdict(
      deps.db,
      ctx,
      delivery,
      { ...verdict, judgedBy: "verifier", finalizedAt: delivery.finalized_at ?? deps.now(), onlyFirst: true },
      deps.now(),
    );
  }
  const expected = verdict.passed ? EscrowStatus.Verified : EscrowStatus.Failed;
  await waitForIndexer(async () => {
    const row = await deps.db
      .selectFrom("escrow_tasks")
      .select(["status", "rounds", "updated_block"])
      .where("chain", "=", chain.name)
      .where("task_hash", "=", listing.task_hash)
      .executeTakeFirst();
    return row !== undefined && (row.updated_block >= receipt.blockNumber || row.status === expected || row.rounds > round);
  }, deps.indexerWaitMs);
  return { round };
}

/**
 * Records a round's verdict on its delivery and, the first time, its `task.verdict` event (issue 27) in the same
 * transaction: the round, pass, score, reasons and who judged, seen by the task's poster, worker and verifier only (the
 * task view shows the reasons to them alone, even for a public task). A verdict recorded again (a retry) changes the
 * row as before and appends nothing. `onlyFirst`: a row already judged is left as it is.
 */
async function recordVerdict(
  db: Db,
  ctx: Pick<TaskContext, "listing" | "chain">,
  delivery: Pick<Delivery, "round" | "agent_address">,
  verdict: Pick<Verdict, "passed" | "score" | "reasons"> & { judgedBy: "auto" | "poster" | "verifier"; finalizedAt: number; onlyFirst?: boolean },
  at: number,
): Promise<void> {
  const { listing, chain } = ctx;
  await db.transaction().execute(async (trx) => {
    const judge = () =>
      trx
        .updateTable("deliveries")
        .set({
          passed: verdict.passed ? 1 : 0,
          score: verdict.score,
          reasons: json.write(verdict.reasons),
          judged_by: verdict.judgedBy,
          finalized_at: verdict.finalizedAt,
        })
        .where("task_hash", "=", listing.task_hash)
        .where("round", "=", delivery.round);
    // The first verdict of the round (the row's lock decides between two racing recorders), then any other.
    const first = Number((await judge().where("passed", "is", null).executeTakeFirst()).numUpdatedRows) > 0;
    if (!first && !verdict.onlyFirst) await judge().execute();
    if (!first) return;
    const audience = [listing.poster, delivery.agent_address, ...(listing.verifier_address ? [listing.verifier_address] : [])];
    await appendEvents(
      trx,
      chain.name,
      [
        {
          type: "task.verdict",
          taskHash: listing.task_hash,
          public: false,
          audience,
          data: { round: delivery.round, passed: verdict.passed, score: verdict.score, reasons: verdict.reasons, judgedBy: verdict.judgedBy },
        },
      ],
      at,
    );
  });
}
