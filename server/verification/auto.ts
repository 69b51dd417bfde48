import type { Db } from "../db";
import { json } from "../db";
import type { ChainRegistry } from "../chains";
import { requireOutbox, type Outbox } from "../outbox";
import { loadTask, statusOf, waitForIndexer, type Delivery, type TaskContext } from "../tasks/context";
import { fromEventRow } from "../indexer/events";
import type { Clock } from "../http/types";
import { autoVerdict, sendVerdict } from "./judge";
import type { VerifierPool } from "./pool";
import { asTaskHash, type Finalized } from "@market/core/api";
import { MarketError } from "@market/core/errors";
import { roundsUnused } from "@market/core/escrow";

export interface AutoVerificationDeps {
  db: Db;
  chains: ChainRegistry;
  /** The verifier key's outbox per chain name; a chain without one cannot judge. */
  outboxes: ReadonlyMap<string, Outbox>;
  now: Clock;
  /** How long an answer waits for the indexer to show a confirmed transaction (ms). */
  indexerWaitMs?: number;
  /** Where the rule engine runs (off the event loop). */
  pool: Pick<VerifierPool, "evaluate">;
}

export type AutoVerification = ReturnType<typeof createAutoVerification>;

/**
 * Verification of a delivered round that the service settles itself: the round's evidence checked on chain, the rule
 * engine's verdict, and the verdict sent by the marketplace verifier key. Delivery's finalize and the verify route
 * both call it; it calls nothing of theirs.
 */
export function createAutoVerification(deps: AutoVerificationDeps) {
  const { db, chains, now } = deps;

  /** The round's evidence must be on chain (indexed) with the delivered result's hash. */
  async function requireEvidenceIndexed(ctx: TaskContext, delivery: Delivery, txHash: string | undefined): Promise<TaskContext> {
    const indexed = async () => {
      const rows = await db
        .selectFrom("escrow_events")
        .selectAll()
        .where("chain", "=", ctx.listing.chain)
        .where("task_hash", "=", ctx.listing.task_hash)
        .where("event", "=", "EvidenceSubmitted")
        .execute();
      for (const event of rows.map(fromEventRow)) {
        if (event.event === "EvidenceSubmitted" && Number(event.args.round) === delivery.round) return event.args;
      }
      return undefined;
    };
    let evidence = await indexed();
    if (!evidence && txHash) {
      const receipt = await ctx.chain.provider.getTransactionReceipt(txHash).catch(() => null);
      if (receipt && receipt.status !== 1) throw new MarketError("TX_REVERTED", "The evidence transaction reverted.");
      if (receipt) {
        await waitForIndexer(async () => (evidence = await indexed()) !== undefined, deps.indexerWaitMs);
      }
    }
    if (!evidence) throw new MarketError("EVIDENCE_NOT_CONFIRMED");
    if (evidence.resultHash.toLowerCase() !== delivery.result_hash) {
      throw new MarketError("EVIDENCE_MISMATCH", "The evidence on chain is not the hash of the delivered output; deliver that output.");
    }
    return loadTask(db, chains, ctx.listing.task_hash);
  }

  /** The round's evidence checked on chain, the rule engine's verdict, and the verdict settled by the verifier key. */
  async function settle(context: TaskContext, delivery: Delivery, txHash?: string): Promise<Finalized> {
    const ctx = await requireEvidenceIndexed(context, delivery, txHash ?? delivery.evidence_tx ?? undefined);
    const verdict = await autoVerdict(deps.pool, ctx, delivery.output);
    const sent = await sendVerdict(
      { db, outbox: requireOutbox(deps.outboxes, ctx.listing.chain), now, indexerWaitMs: deps.indexerWaitMs },
      ctx,
      delivery,
      { ...verdict, judgedBy: "auto" },
    );
    const after = await loadTask(db, chains, ctx.listing.task_hash);
    return { ...roundResult(after, after.delivery ?? delivery), txHash: sent.txHash };
  }

  /** A delivered round as finalize answers it: the task's status, the verdict once judged, and the rounds left. */
  function roundResult(ctx: TaskContext, delivery: Delivery): Finalized {
    const judged = delivery.passed !== null;
    return {
      taskHash: asTaskHash(ctx.listing.task_hash),
      round: delivery.round,
      status: statusOf({ ...ctx, delivery }, now()),
      ...(judged
        ? { verificationResult: { passed: delivery.passed === 1, score: delivery.score ?? 0, reasons: json.read<string[]>(delivery.reasons) ?? [] } }
        : {}),
      // The deadline rule of every route that tells rounds left (core/escrow): none from the deadline on.
      roundsLeft: roundsUnused(ctx.onChain, Math.floor(now() / 1000)),
    };
  }

  return { requireEvidenceIndexed, settle, roundResult };
}
