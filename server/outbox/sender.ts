/**
 * The outbox's sender (server/outbox/index.ts): signs queued requests (signing.ts) and follows what is sent (receipts,
 * rebroadcasts, fee bumps, nonces taken by another transaction of the key).
 */
import { type TransactionReceipt, type TransactionRequest } from "ethers";
import { json } from "../db";
import { decodeRevert } from "@market/core/revert";
import { OutboxRevert, signedEntry, type OutboxContext, type SignedEntry } from "./types";
import { createSigning, type NonceFloor } from "./signing";

export interface SenderOptions {
  resendAfterMs: number;
  bumpAfterMs: number;
  leading: boolean;
  /** The call's gas limit, or OutboxRevert when the escrow would refuse it (the requests' simulation). */
  simulate(purpose: string, request: TransactionRequest): Promise<bigint>;
}

export type Sender = ReturnType<typeof createSender>;

export function createSender(ctx: OutboxContext, { resendAfterMs, bumpAfterMs, simulate, ...initial }: SenderOptions) {
  const { db, chain, now, address, settle } = ctx;
  const provider = chain.provider;
  let leading = initial.leading;
  const floor: NonceFloor = { checked: false };
  const { signQueued, broadcast, bump } = createSigning(ctx, { simulate, floor });

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
      floor.checked = false;
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
      if (on) floor.checked = false;
    },
  };
}
