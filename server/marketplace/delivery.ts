import { getAddress, Transaction } from "ethers";
import { json } from "../db";
import { chainCall } from "../chains";
import { isAlreadySent, isNodeRefusal } from "../../core/revert";
import { escrowPaused, loadTask, waitForIndexer, type Delivery, type TaskContext } from "./task-context";
import { requireOutbox, type MarketplaceDeps } from "./accept";
import { autoVerdict, sendVerdict } from "../verification/judge";
import { unsignedCall, type UnsignedTx } from "./calls";
import { refusalError } from "./refusals";
import { taskSnapshotOf } from "../indexer/task-projection";
import { fromEventRow } from "../indexer/events";
import { MarketError } from "../../core/errors";
import { canDeliver } from "../../core/escrow";
import { resultHash } from "../../core/crypto";
import { MAX_SUBMISSIONS } from "../../core/limits";
import { taskStatus, type TaskStatus } from "../../core/status";

export interface Finalized {
  taskHash: string;
  round: number;
  status: TaskStatus;
  verificationResult?: { passed: boolean; score: number; reasons: string[] };
  roundsLeft: number;
  txHash?: string;
}

/** Largest delivered output (characters). */
export const MAX_OUTPUT_CHARS = 500_000;

export function createDelivery(deps: MarketplaceDeps) {
  const { db, chains, now } = deps;

  /** Only the task's worker, per the escrow (the recorded executor). */
  function requireWorker(ctx: TaskContext, wallet: string) {
    if (ctx.onChain.worker !== wallet) throw new MarketError("NOT_EXECUTOR");
  }

  /**
   * Stores the result of the next round and answers the `submitEvidence` transaction (result hash = SHA-256 of the
   * output) for the worker's own wallet to sign. Delivering again before the evidence is on chain replaces the output.
   */
  async function deliver(wallet: string, taskHash: string, output: string): Promise<{ round: number; resultHash: string; unsignedTx: UnsignedTx }> {
    const ctx = await loadTask(db, chains, taskHash);
    const { listing } = ctx;
    const hash = resultHash(output);
    const task = taskSnapshotOf(ctx.onChain);
    const check = canDeliver(task, {
      taskHash: listing.task_hash,
      caller: wallet,
      paused: await escrowPaused(db, listing.chain),
      now: Math.floor(now() / 1000),
      resultHash: hash,
    });
    if (!check.ok) throw refusalError("deliver", check.refusal, { task, caller: wallet, status: statusOf(ctx) });
    const { round } = check;
    const at = now();
    await db
      .insertInto("deliveries")
      .values({
        task_hash: listing.task_hash,
        round,
        agent_address: wallet,
        output,
        result_hash: hash,
        evidence_tx: null,
        evidence_raw: null,
        delivered_at: at,
        finalized_at: null,
        passed: null,
        score: null,
        reasons: null,
        judged_by: null,
      })
      // A round not on chain yet may hold an output of a worker that released the task: the new worker's replaces it.
      .onConflict((oc) =>
        oc.columns(["task_hash", "round"]).doUpdateSet({ agent_address: wallet, output, result_hash: hash, evidence_tx: null, evidence_raw: null, delivered_at: at }),
      )
      .execute();
    return { round, resultHash: hash, unsignedTx: unsignedCall(ctx.chain, wallet, "submitEvidence", [listing.task_hash, hash]) };
  }

  /** The pending (not yet on chain) delivery of the next round. */
  function pendingDelivery(ctx: TaskContext): Delivery {
    const d = ctx.delivery;
    if (!d || d.round !== ctx.onChain.rounds + 1) throw new MarketError("WRONG_STATE", "Deliver a result first.", { reason: statusOf(ctx) });
    return d;
  }

  /**
   * Broadcasts the worker's signed evidence transaction after checking it is exactly `submitEvidence` of the
   * delivered result, from the worker's wallet to the escrow on the task's chain. The raw transaction is kept so it
   * can be rebroadcast.
   */
  async function relayEvidence(wallet: string, taskHash: string, signedTx: string): Promise<{ txHash: string }> {
    const ctx = await loadTask(db, chains, taskHash);
    requireWorker(ctx, wallet);
    const delivery = pendingDelivery(ctx);
    let tx: Transaction;
    try {
      tx = Transaction.from(signedTx);
    } catch (cause) {
      throw new MarketError("EVIDENCE_MISMATCH", "Not a signed transaction.", { cause });
    }
    const expected = ctx.chain.escrow.interface.encodeFunctionData("submitEvidence", [ctx.listing.task_hash, delivery.result_hash]);
    if (
      !tx.from ||
      getAddress(tx.from) !== wallet ||
      !tx.to ||
      getAddress(tx.to) !== ctx.chain.config.escrow ||
      tx.chainId !== BigInt(ctx.chain.config.chainId) ||
      tx.data.toLowerCase() !== expected.toLowerCase() ||
      tx.value !== 0n
    ) {
      throw new MarketError("EVIDENCE_MISMATCH");
    }
    await broadcast(ctx, signedTx);
    await db
      .updateTable("deliveries")
      .set({ evidence_tx: tx.hash, evidence_raw: signedTx })
      .where("task_hash", "=", ctx.listing.task_hash)
      .where("round", "=", delivery.round)
      .execute();
    return { txHash: tx.hash! };
  }

  async function broadcast(ctx: TaskContext, raw: string) {
    try {
      await ctx.chain.provider.broadcastTransaction(raw);
    } catch (error) {
      if (isAlreadySent(error)) return;
      const message = String((error as Error).message);
      if (!isNodeRefusal(error)) throw new MarketError("CHAIN_UNAVAILABLE", `The chain did not answer: ${message}`, { cause: error });
      throw new MarketError("TX_REJECTED", `The node refused the transaction: ${message}`, { cause: error });
    }
  }

  /** Sends the kept evidence transaction again (e.g. dropped from the pool). Only the accepted executor. */
  async function rebroadcast(wallet: string, taskHash: string): Promise<{ txHash: string }> {
    const ctx = await loadTask(db, chains, taskHash);
    requireWorker(ctx, wallet);
    const delivery = ctx.delivery;
    if (!delivery?.evidence_raw || !delivery.evidence_tx) throw new MarketError("WRONG_STATE", "No evidence transaction was relayed for this task.", { reason: statusOf(ctx) });
    if (await chainCall(() => ctx.chain.provider.getTransactionReceipt(delivery.evidence_tx!))) {
      return { txHash: delivery.evidence_tx };
    }
    await broadcast(ctx, delivery.evidence_raw);
    return { txHash: delivery.evidence_tx };
  }

  /**
   * After the evidence transaction is mined: in `auto` mode runs the rule engine and settles the verdict on chain;
   * in `manual` and `agent` mode marks the delivery as awaiting the poster's or the verifier's verdict.
   */
  async function finalize(wallet: string, taskHash: string, txHash?: string): Promise<Finalized> {
    let ctx = await loadTask(db, chains, taskHash);
    requireWorker(ctx, wallet);
    const delivery = ctx.delivery;
    if (!delivery) throw new MarketError("WRONG_STATE", "Nothing was delivered.", { reason: statusOf(ctx) });
    if (delivery.passed !== null || (delivery.finalized_at !== null && ctx.listing.verification_mode !== "auto")) return result(ctx, delivery);
    if (txHash && !delivery.evidence_tx) {
      await db.updateTable("deliveries").set({ evidence_tx: txHash.toLowerCase() }).where("task_hash", "=", delivery.task_hash).where("round", "=", delivery.round).execute();
    }
    if (ctx.listing.verification_mode === "auto") return settleAutomatically(ctx, delivery, txHash);
    await requireEvidenceIndexed(ctx, delivery, txHash ?? delivery.evidence_tx ?? undefined);
    await db.updateTable("deliveries").set({ finalized_at: now() }).where("task_hash", "=", delivery.task_hash).where("round", "=", delivery.round).execute();
    return result(await loadTask(db, chains, taskHash), { ...delivery, finalized_at: now() });
  }

  /** The round's evidence checked on chain, the rule engine's verdict, and the verdict settled by the verifier key. */
  async function settleAutomatically(context: TaskContext, delivery: Delivery, txHash?: string): Promise<Finalized> {
    const ctx = await requireEvidenceIndexed(context, delivery, txHash ?? delivery.evidence_tx ?? undefined);
    const verdict = autoVerdict(ctx, delivery.output);
    const sent = await sendVerdict(
      { db, outbox: requireOutbox(deps, ctx.listing.chain), now, indexerWaitMs: deps.indexerWaitMs },
      ctx,
      delivery,
      { ...verdict, judgedBy: "auto" },
    );
    const after = await loadTask(db, chains, ctx.listing.task_hash);
    return { ...result(after, after.delivery ?? delivery), txHash: sent.txHash };
  }

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

  function statusOf(ctx: TaskContext): TaskStatus {
    return taskStatus({
      status: ctx.onChain.status,
      deadline: ctx.onChain.deadline,
      nowSeconds: Math.floor(now() / 1000),
      awaitingVerdict: ctx.delivery?.finalized_at !== null && ctx.delivery?.passed === null,
    });
  }

  function result(ctx: TaskContext, delivery: Delivery): Finalized {
    const judged = delivery.passed !== null;
    return {
      taskHash: ctx.listing.task_hash,
      round: delivery.round,
      status: statusOf({ ...ctx, delivery }),
      ...(judged
        ? { verificationResult: { passed: delivery.passed === 1, score: delivery.score ?? 0, reasons: json.read<string[]>(delivery.reasons) ?? [] } }
        : {}),
      roundsLeft: MAX_SUBMISSIONS - ctx.onChain.rounds,
    };
  }

  return { deliver, relayEvidence, rebroadcast, finalize, settleAutomatically, statusOf, result };
}
