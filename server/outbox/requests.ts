/**
 * The outbox's requests (server/outbox/index.ts): a call simulated, then recorded once per purpose, and this process's
 * callers waiting for their entries to end, whoever sends them.
 */
import type { TransactionRequest } from "ethers";
import { chainCall, chainUnavailable } from "../chains";
import { isUniqueViolation, type Db } from "../db";
import { decodeRevert, isCallRevert } from "@market/core/revert";
import { MarketError } from "@market/core/errors";
import { withGasMargin } from "../../sdk/src";
import type { Chain } from "../chains";
import { OutboxRevert, revertOf, type Entry, type Sent } from "./types";

interface Waiter {
  resolve: (s: Sent) => void;
  reject: (e: Error) => void;
}

export type Requests = ReturnType<typeof createRequests>;

export function createRequests({
  db,
  chain,
  now,
  address,
  wake,
}: {
  db: Db;
  chain: Chain;
  now: () => number;
  address(): Promise<string>;
  wake(): void;
}) {
  const provider = chain.provider;
  const waiters = new Map<number, Waiter[]>();

  async function latest(purpose: string): Promise<Entry | undefined> {
    return db
      .selectFrom("outbox")
      .selectAll()
      .where("chain", "=", chain.name)
      .where("purpose", "=", purpose)
      .orderBy("id", "desc")
      .executeTakeFirst();
  }

  /**
   * The call's gas limit, or OutboxRevert when the escrow would refuse it (CHAIN_UNAVAILABLE when the node fails): the
   * estimate with a fifth more, and never less than the SDK's state margin above it (a storage slot another transaction
   * empties between the estimate and the mining costs 17,100 more: withGasMargin).
   */
  async function simulate(purpose: string, request: TransactionRequest): Promise<bigint> {
    try {
      const estimate = await provider.estimateGas(request);
      const proportional = (estimate * 12n) / 10n;
      const margined = withGasMargin(estimate);
      return margined > proportional ? margined : proportional;
    } catch (error) {
      const revert = decodeRevert(chain.escrow.interface, error);
      if (!revert && !isCallRevert(error)) throw chainUnavailable(error, chain.name);
      throw new OutboxRevert(
        purpose,
        revert,
        `${purpose} would revert: ${revert ? `${revert.name}(${revert.args.join(", ")})` : (error as Error).message}`,
      );
    }
  }

  /** Records the request; when another caller recorded the same purpose first, answers that entry. */
  async function enqueue(purpose: string, from: string, to: string, data: string): Promise<Entry> {
    const at = now();
    try {
      return await db
        .insertInto("outbox")
        .values({
          chain: chain.name,
          sender: from,
          nonce: null,
          purpose,
          to_address: to,
          data,
          gas_limit: null,
          max_fee: null,
          priority_fee: null,
          raw: null,
          tx_hash: null,
          hashes: null,
          status: "queued",
          attempts: 0,
          mined_block: null,
          error: null,
          revert: null,
          created_at: at,
          sent_at: null,
          updated_at: at,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
    } catch (error) {
      if (!isUniqueViolation(error)) throw error;
      const live = await latest(purpose);
      if (!live || live.status === "reverted") throw error;
      return live;
    }
  }

  function settle(id: number, outcome: { sent?: Sent; error?: Error }) {
    const list = waiters.get(id) ?? [];
    waiters.delete(id);
    for (const w of list) {
      if (outcome.sent) w.resolve(outcome.sent);
      else w.reject(outcome.error!);
    }
  }

  /** Ends the waits of this process's callers whose entries ended, whoever sent them. */
  async function settleEnded(): Promise<void> {
    const ids = [...waiters.keys()];
    if (ids.length === 0) return;
    const ended = await db.selectFrom("outbox").selectAll().where("id", "in", ids).where("status", "in", ["mined", "reverted"]).execute();
    for (const entry of ended) {
      if (entry.status === "reverted") {
        settle(entry.id, { error: revertOf(entry) });
        continue;
      }
      const receipt = await chainCall(() => provider.getTransactionReceipt(entry.tx_hash!));
      if (receipt?.status === 1) settle(entry.id, { sent: { id: entry.id, txHash: receipt.hash, receipt } });
    }
  }

  return {
    latest,
    simulate,
    settle,
    settleEnded,
    /**
     * Sends `data` to `to` for `purpose` and resolves once it is mined (with the chain's confirmations), or rejects
     * with OutboxRevert when the escrow refuses it. Calling again with the same purpose, from any process, waits for
     * the same transaction. A wait longer than `timeoutMs` ends with TX_PENDING; the request stays recorded.
     */
    async send(purpose: string, to: string, data: string, timeoutMs = 60_000): Promise<Sent> {
      let entry = await latest(purpose);
      if (!entry || entry.status === "reverted") {
        // What the sender asks the node for, asked first: a call the escrow refuses (OutboxRevert), or a node that
        // does not answer (CHAIN_UNAVAILABLE), records nothing.
        const from = await address();
        await simulate(purpose, { from, to, data });
        await chainCall(() => provider.getFeeData());
        entry = await enqueue(purpose, from, to, data);
      }
      if (entry.status === "mined") {
        const receipt = await chainCall(() => provider.getTransactionReceipt(entry.tx_hash!));
        if (receipt?.status === 1) return { id: entry.id, txHash: entry.tx_hash!, receipt };
        // A reorg took the receipt away (or the transaction was mined again and reverted there): follow the nonce
        // again, so the sender rebroadcasts it, bumps it, or records how it ended this time.
        const at = now();
        await db
          .updateTable("outbox")
          .set({ status: "sent", mined_block: null, sent_at: at, updated_at: at })
          .where("id", "=", entry.id)
          .where("status", "=", "mined")
          .execute();
      }
      const id = entry.id;
      let waiter: Waiter | undefined;
      const result = new Promise<Sent>((resolve, reject) => {
        waiter = { resolve, reject };
        waiters.set(id, [...(waiters.get(id) ?? []), waiter]);
      });
      // Settled before the race below starts: not an unhandled rejection, the race still sees it.
      result.catch(() => undefined);
      let timeout: NodeJS.Timeout | undefined;
      try {
        wake();
        const expired = new Promise<never>((_, reject) => {
          timeout = setTimeout(
            () => reject(new MarketError("TX_PENDING", `${purpose}: not confirmed within ${timeoutMs} ms; retry shortly.`)),
            timeoutMs,
          );
        });
        return await Promise.race([result, expired]);
      } finally {
        clearTimeout(timeout);
        // Settled or given up on: either way this caller waits no more.
        const rest = (waiters.get(id) ?? []).filter((w) => w !== waiter);
        if (rest.length > 0) waiters.set(id, rest);
        else waiters.delete(id);
      }
    },

    /** Whether a caller of this process waits for a transaction. */
    hasWaiters: () => waiters.size > 0,

    /** Ends every wait (the outbox stops). */
    settleAll(error: Error) {
      for (const id of [...waiters.keys()]) settle(id, { error });
    },

    /** Callers waiting for a transaction. */
    waiting(): number {
      let count = 0;
      for (const list of waiters.values()) count += list.length;
      return count;
    },
  };
}
