import { getAddress, Transaction } from "ethers";
import type { Db } from "../db";
import { chainCall, chainUnavailable, type ChainRegistry } from "../chains";
import { redactUrls } from "@market/core/text";
import { unsignedCall } from "../chains/calls";
import { escrowPaused, loadTask, statusOf as statusAt, type Delivery, type TaskContext } from "../tasks";
import { taskSnapshotOf } from "../indexer/task-projection";
import type { AutoVerification } from "../verification";
import type { Clock } from "../http/types";
import { refusalError } from "./refusals";
import { isAlreadySent, isNodeRefusal } from "@market/core/revert";
import type { Delivered, EvidenceSent, Finalized } from "@market/core/api";
import { MarketError } from "@market/core/errors";
import { canDeliver } from "@market/core/escrow";
import { resultHash } from "@market/core/crypto";
import type { TaskStatus } from "@market/core/status";

export interface DeliveryDeps {
  db: Db;
  chains: ChainRegistry;
  now: Clock;
  /** Judges a round the service settles itself (`auto` mode), after checking its evidence on chain. */
  verification: Pick<AutoVerification, "requireEvidenceIndexed" | "settle" | "roundResult">;
}

export type Delivering = ReturnType<typeof createDelivery>;

/** Delivering results: storing a round's output, relaying the worker's evidence transaction, and finalizing the round. */
export function createDelivery(deps: DeliveryDeps) {
  const { db, chains, now, verification } = deps;

  /** Only the task's worker, per the escrow (the recorded executor). */
  function requireWorker(ctx: TaskContext, wallet: string) {
    if (ctx.onChain.worker !== wallet) throw new MarketError("NOT_WORKER");
  }

  /**
   * Stores the result of the next round and answers the `submitEvidence` transaction (result hash = SHA-256 of the
   * output) for the worker's own wallet to sign. Delivering again before the evidence is on chain replaces the output.
   */
  async function deliver(wallet: string, taskHash: string, output: string): Promise<Delivered> {
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
        oc
          .columns(["task_hash", "round"])
          .doUpdateSet({ agent_address: wallet, output, result_hash: hash, evidence_tx: null, evidence_raw: null, delivered_at: at }),
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
  async function relayEvidence(wallet: string, taskHash: string, signedTx: string): Promise<EvidenceSent> {
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
      if (!isNodeRefusal(error)) throw chainUnavailable(error, ctx.chain.name);
      // The node's reason helps the sender; a URL in it (an RPC URL with its key) does not.
      throw new MarketError("TX_REJECTED", `The node refused the transaction: ${redactUrls(String((error as Error).message))}`, { cause: error });
    }
  }

  /** Sends the kept evidence transaction again (e.g. dropped from the pool). Only the accepted executor. */
  async function rebroadcast(wallet: string, taskHash: string): Promise<EvidenceSent> {
    const ctx = await loadTask(db, chains, taskHash);
    requireWorker(ctx, wallet);
    const delivery = ctx.delivery;
    if (!delivery?.evidence_raw || !delivery.evidence_tx)
      throw new MarketError("WRONG_STATE", "No evidence transaction was relayed for this task.", { reason: statusOf(ctx) });
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
    const ctx = await loadTask(db, chains, taskHash);
    requireWorker(ctx, wallet);
    const delivery = ctx.delivery;
    if (!delivery) throw new MarketError("WRONG_STATE", "Nothing was delivered.", { reason: statusOf(ctx) });
    if (delivery.passed !== null || (delivery.finalized_at !== null && ctx.listing.verification_mode !== "auto"))
      return verification.roundResult(ctx, delivery);
    if (txHash && !delivery.evidence_tx) {
      await db
        .updateTable("deliveries")
        .set({ evidence_tx: txHash.toLowerCase() })
        .where("task_hash", "=", delivery.task_hash)
        .where("round", "=", delivery.round)
        .execute();
    }
    if (ctx.listing.verification_mode === "auto") return verification.settle(ctx, delivery, txHash);
    await verification.requireEvidenceIndexed(ctx, delivery, txHash ?? delivery.evidence_tx ?? undefined);
    await db
      .updateTable("deliveries")
      .set({ finalized_at: now() })
      .where("task_hash", "=", delivery.task_hash)
      .where("round", "=", delivery.round)
      .execute();
    return verification.roundResult(await loadTask(db, chains, taskHash), { ...delivery, finalized_at: now() });
  }

  const statusOf = (ctx: TaskContext): TaskStatus => statusAt(ctx, now());

  return { deliver, relayEvidence, rebroadcast, finalize };
}
