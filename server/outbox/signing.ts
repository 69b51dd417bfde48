/**
 * The outbox's signing (server/outbox/sender.ts drives it): a queued request signed at the key's next nonce, in the
 * transaction that claims both, then broadcast; a stuck transaction replaced with higher fees at the same nonce.
 */
import { Transaction, type TransactionRequest } from "ethers";
import type { Transaction as DbTransaction } from "kysely";
import { chainCall } from "../chains";
import { json, type Database } from "../db";
import { sql } from "kysely";
import { isAlreadySent } from "@market/core/revert";
import { OutboxRevert, revertJson, signedEntry, type Entry, type OutboxContext, type SignedEntry } from "./types";

/** Whether the key's nonce row has been raised to the chain's count since this process became the sender. */
export interface NonceFloor {
  checked: boolean;
}

/**
 * In one database transaction: the key's nonce row locked, read and moved, the request signed at that nonce and
 * claimed (`signed`). Signed by another sender in between: nothing of this one is kept (undefined).
 */
async function signAtNextNonce(
  trx: DbTransaction<Database>,
  { chain, signer, now }: Pick<OutboxContext, "chain" | "signer" | "now">,
  entry: Entry,
  { from, gasLimit, maxFee, priorityFee }: { from: string; gasLimit: bigint; maxFee: bigint; priorityFee: bigint },
): Promise<Entry | undefined> {
  const at = now();
  await trx
    .insertInto("outbox_nonces")
    .values({ chain: chain.name, sender: from, next_nonce: 0, updated_at: at })
    .onConflict((oc) => oc.columns(["chain", "sender"]).doNothing())
    .execute();
  // A write first: it locks the key's row (PostgreSQL) or the database (SQLite) until this transaction ends.
  await trx
    .updateTable("outbox_nonces")
    .set((eb) => ({ next_nonce: eb.ref("next_nonce") }))
    .where("chain", "=", chain.name)
    .where("sender", "=", from)
    .execute();
  const row = await trx
    .selectFrom("outbox_nonces")
    .select("next_nonce")
    .where("chain", "=", chain.name)
    .where("sender", "=", from)
    .executeTakeFirstOrThrow();
  const last = await trx
    .selectFrom("outbox")
    .select((eb) => eb.fn.max("nonce").as("nonce"))
    .where("chain", "=", chain.name)
    .where("sender", "=", from)
    .executeTakeFirst();
  const recorded = last?.nonce === null || last?.nonce === undefined ? -1 : Number(last.nonce);
  const nonce = Math.max(Number(row.next_nonce), recorded + 1);
  const raw = await signer.signTransaction({
    from,
    to: entry.to_address,
    data: entry.data,
    nonce,
    gasLimit,
    maxFeePerGas: maxFee,
    maxPriorityFeePerGas: priorityFee,
    chainId: chain.config.chainId,
    type: 2,
  });
  const txHash = Transaction.from(raw).hash!;
  const claimed = await trx
    .updateTable("outbox")
    .set({
      nonce,
      gas_limit: gasLimit.toString(),
      max_fee: maxFee.toString(),
      priority_fee: priorityFee.toString(),
      raw,
      tx_hash: txHash,
      hashes: json.write([txHash]),
      status: "signed",
      attempts: 1,
      updated_at: at,
    })
    .where("id", "=", entry.id)
    .where("status", "=", "queued")
    .returningAll()
    .executeTakeFirst();
  // Signed by another sender in between: nothing of this one is kept.
  if (!claimed) return undefined;
  await trx
    .updateTable("outbox_nonces")
    .set({ next_nonce: nonce + 1, updated_at: at })
    .where("chain", "=", chain.name)
    .where("sender", "=", from)
    .execute();
  return claimed;
}

export function createSigning(
  ctx: OutboxContext,
  { simulate, floor }: { simulate(purpose: string, request: TransactionRequest): Promise<bigint>; floor: NonceFloor },
) {
  const { db, chain, signer, now, address, settle } = ctx;
  const provider = chain.provider;

  /** Raises the key's next nonce to the chain's count (its transactions sent elsewhere, or before this table). */
  async function raiseFloor(from: string): Promise<void> {
    const pending = await chainCall(() => provider.getTransactionCount(from, "pending"));
    await db
      .insertInto("outbox_nonces")
      .values({ chain: chain.name, sender: from, next_nonce: pending, updated_at: now() })
      .onConflict((oc) =>
        oc.columns(["chain", "sender"]).doUpdateSet({
          next_nonce: sql<number>`case when outbox_nonces.next_nonce < excluded.next_nonce then excluded.next_nonce else outbox_nonces.next_nonce end`,
          updated_at: now(),
        }),
      )
      .execute();
  }

  /**
   * Signs a queued request at the key's next nonce: simulated again first (refused now: the entry ends as reverted
   * with the custom error, no nonce taken). The nonce row is locked, read and moved, and the request claimed, in one
   * transaction; a signing that fails takes no nonce and leaves the request queued for the next round.
   */
  async function signQueued(entry: Entry): Promise<SignedEntry | undefined> {
    const from = await address();
    let gasLimit: bigint;
    try {
      gasLimit = await simulate(entry.purpose, { from, to: entry.to_address, data: entry.data });
    } catch (error) {
      if (!(error instanceof OutboxRevert)) throw error;
      const ended = await db
        .updateTable("outbox")
        .set({
          status: "reverted",
          error: error.message.slice(entry.purpose.length + 1).trim(),
          revert: error.revert ? revertJson(error.revert) : null,
          updated_at: now(),
        })
        .where("id", "=", entry.id)
        .where("status", "=", "queued")
        .executeTakeFirst();
      if (ended.numUpdatedRows > 0n) settle(entry.id, { error });
      return undefined;
    }
    const fees = await chainCall(() => provider.getFeeData());
    const maxFee = fees.maxFeePerGas ?? fees.gasPrice ?? 0n;
    const priorityFee = fees.maxPriorityFeePerGas ?? 0n;
    if (!floor.checked) {
      await raiseFloor(from);
      floor.checked = true;
    }
    const signed = await db.transaction().execute((trx) => signAtNextNonce(trx, ctx, entry, { from, gasLimit, maxFee, priorityFee }));
    return signed && signedEntry(signed);
  }

  async function broadcast(entry: SignedEntry): Promise<void> {
    try {
      await provider.broadcastTransaction(entry.raw);
    } catch (error) {
      // Already in the pool, already mined, or the nonce taken by another transaction: the poll settles it.
      if (!isAlreadySent(error)) {
        ctx.logger?.warn({ err: error, purpose: entry.purpose, nonce: entry.nonce }, "broadcast failed; will retry");
        return;
      }
    }
    const at = now();
    await db
      .updateTable("outbox")
      .set({ status: "sent", sent_at: entry.sent_at ?? at, updated_at: at })
      .where("id", "=", entry.id)
      .where("status", "in", ["signed", "sent"])
      .execute();
  }

  /** Replaces a stuck transaction: the same call and nonce with fees raised by 30%. */
  async function bump(entry: SignedEntry): Promise<void> {
    const maxFee = (BigInt(entry.max_fee) * 13n) / 10n + 1n;
    const priorityFee = (BigInt(entry.priority_fee) * 13n) / 10n + 1n;
    const raw = await signer.signTransaction({
      from: entry.sender,
      to: entry.to_address,
      data: entry.data,
      nonce: entry.nonce,
      gasLimit: BigInt(entry.gas_limit),
      maxFeePerGas: maxFee,
      maxPriorityFeePerGas: priorityFee,
      chainId: chain.config.chainId,
      type: 2,
    });
    const txHash = Transaction.from(raw).hash!;
    const hashes = [...(json.read<string[]>(entry.hashes) ?? []), txHash];
    const at = now();
    await db
      .updateTable("outbox")
      .set({
        raw,
        tx_hash: txHash,
        hashes: json.write(hashes),
        max_fee: maxFee.toString(),
        priority_fee: priorityFee.toString(),
        attempts: entry.attempts + 1,
        sent_at: at,
        updated_at: at,
      })
      .where("id", "=", entry.id)
      .execute();
    await broadcast({ ...entry, raw, sent_at: at });
  }

  return { signQueued, broadcast, bump };
}
