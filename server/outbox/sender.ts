/**
 * The outbox's sender (server/outbox/index.ts): signs queued requests at the key's next nonce, broadcasts them, and
 * follows what is sent (receipts, rebroadcasts, fee bumps, nonces taken by another transaction of the key).
 */
import { Transaction, type TransactionReceipt, type TransactionRequest } from "ethers";
import { chainCall } from "../chains";
import { json } from "../db";
import { sql } from "kysely";
import { decodeRevert, isAlreadySent } from "../../core/revert";
import { OutboxRevert, revertJson, signedEntry, type Entry, type OutboxContext, type SignedEntry } from "./types";

export interface SenderOptions {
  resendAfterMs: number;
  bumpAfterMs: number;
  leading: boolean;
  /** The call's gas limit, or OutboxRevert when the escrow would refuse it (the requests' simulation). */
  simulate(purpose: string, request: TransactionRequest): Promise<bigint>;
}

export type Sender = ReturnType<typeof createSender>;

export function createSender(ctx: OutboxContext, { resendAfterMs, bumpAfterMs, simulate, ...initial }: SenderOptions) {
  const { db, chain, signer, now, address, settle } = ctx;
  const provider = chain.provider;
  let leading = initial.leading;
  /** Whether the key's nonce row has been raised to the chain's count since this process became the sender. */
  let floorChecked = false;

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
    if (!floorChecked) {
      await raiseFloor(from);
      floorChecked = true;
    }
    const signed = await db.transaction().execute(async (trx) => {
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
    });
    return signed && signedEntry(signed);
  }

  /** Signs and broadcasts every queued request of the key, oldest first, one at a time. */
  async function drain(): Promise<void> {
    const from = await address();
    while (leading) {
      const entry = await db
        .selectFrom("outbox")
        .selectAll()
        .where("chain", "=", chain.name)
        .where("sender", "=", from)
        .where("status", "=", "queued")
        .orderBy("id")
        .limit(1)
        .executeTakeFirst();
      if (!entry) return;
      const signed = await signQueued(entry);
      if (signed) await broadcast(signed);
    }
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

  /** Checks every unsettled transaction of the current key once, each on its own: receipts, rebroadcasts, fee bumps. */
  async function poll(): Promise<void> {
    const from = await address();
    const unsettled = async () =>
      (
        await db
          .selectFrom("outbox")
          .selectAll()
          .where("chain", "=", chain.name)
          .where("sender", "=", from)
          .where("status", "in", ["signed", "sent"])
          .orderBy("nonce")
          .execute()
      ).map(signedEntry);
    let open = await unsettled();
    if (open.length === 0) return;
    const head = await provider.getBlockNumber();
    // Read before the receipts: a nonce below this count whose transactions still have no receipt was taken by another.
    const used = await provider.getTransactionCount(from, Math.max(0, head - chain.config.confirmations));
    // An entry recorded as mined (at the confirmation depth) whose nonce the chain no longer counts there was taken
    // back by a reorg: unless it is sent again, every later nonce waits behind it. It is followed again like a new one.
    const undone = await db
      .updateTable("outbox")
      .set({ status: "signed", mined_block: null, updated_at: now() })
      .where("chain", "=", chain.name)
      .where("sender", "=", from)
      .where("status", "=", "mined")
      .where("nonce", ">=", used)
      .executeTakeFirst();
    if (undone.numUpdatedRows > 0n) open = await unsettled();
    for (const entry of open) {
      try {
        await check(entry, head, used);
      } catch (error) {
        ctx.logger?.error({ err: error, chain: chain.name, purpose: entry.purpose, nonce: entry.nonce }, "outbox: checking a transaction failed");
      }
    }
  }

  async function check(entry: SignedEntry, head: number, used: number): Promise<void> {
    let receipt: TransactionReceipt | null = null;
    for (const hash of json.read<string[]>(entry.hashes) ?? [entry.tx_hash]) {
      receipt = await provider.getTransactionReceipt(hash);
      if (receipt) break;
    }
    if (receipt) {
      if (head - receipt.blockNumber < chain.config.confirmations) return;
      const ok = receipt.status === 1;
      let error: string | null = null;
      if (!ok) error = await revertReason(entry, receipt.blockNumber);
      await db
        .updateTable("outbox")
        .set({ status: ok ? "mined" : "reverted", tx_hash: receipt.hash, mined_block: receipt.blockNumber, error, updated_at: now() })
        .where("id", "=", entry.id)
        .execute();
      settle(
        entry.id,
        ok
          ? { sent: { id: entry.id, txHash: receipt.hash, receipt } }
          : { error: new OutboxRevert(entry.purpose, undefined, `${entry.purpose}: ${error ?? "reverted"}`, receipt.hash) },
      );
      return;
    }
    if (entry.nonce < used) {
      // The nonce is mined, by none of this entry's transactions: another transaction of the key took it. The entry
      // ends, and the next nonce is read from the chain again (the key is evidently used elsewhere too).
      const error = `nonce ${entry.nonce} was used by another transaction of ${entry.sender}`;
      await db.updateTable("outbox").set({ status: "reverted", error, updated_at: now() }).where("id", "=", entry.id).execute();
      floorChecked = false;
      settle(entry.id, { error: new OutboxRevert(entry.purpose, undefined, `${entry.purpose}: ${error}`) });
      return;
    }
    const waited = now() - (entry.sent_at ?? entry.created_at);
    if (waited >= bumpAfterMs * entry.attempts) await bump(entry);
    else if (entry.status === "signed" || waited >= resendAfterMs) await broadcast(entry);
  }

  /** Why a mined transaction reverted, by replaying its call at the block before. */
  async function revertReason(entry: SignedEntry, block: number): Promise<string> {
    try {
      await provider.call({ from: entry.sender, to: entry.to_address, data: entry.data, blockTag: block - 1 });
      return "reverted";
    } catch (error) {
      const revert = decodeRevert(chain.escrow.interface, error);
      return revert ? `${revert.name}(${revert.args.join(", ")})` : "reverted";
    }
  }

  return {
    drain,
    poll,
    leading: () => leading,
    /** This process becomes the key's sender (or stops being it). */
    lead(on: boolean) {
      leading = on;
      if (on) floorChecked = false;
    },
  };
}
