import { Transaction, type Signer, type TransactionReceipt, type TransactionRequest } from "ethers";
import { chainCall, chainUnavailable, type Chain } from "../chains";
import { json, type Db } from "../db";
import type { OutboxTable } from "../db/schema";
import type { Selectable } from "kysely";
import { decodeRevert, isAlreadySent, isCallRevert } from "../../core/revert";
import { MarketError } from "../../core/errors";

type Entry = Selectable<OutboxTable>;

export interface OutboxOptions {
  db: Db;
  chain: Chain;
  /** The marketplace verifier key, connected to the chain's provider. */
  signer: Signer;
  now: () => number;
  logger?: { warn(obj: object, msg: string): void; error(obj: object, msg: string): void };
  /** How often receipts of sent transactions are checked (ms). */
  pollMs?: number;
  /** A transaction neither mined nor known after this long is broadcast again (ms). */
  resendAfterMs?: number;
  /**
   * A transaction still not mined after this long (or still refused by the node, never sent) is replaced with higher
   * fees, same nonce (ms); the wait grows with each replacement.
   */
  bumpAfterMs?: number;
}

/** The escrow refused the call; nothing was sent (or the transaction was mined and reverted). */
export class OutboxRevert extends Error {
  override readonly name = "OutboxRevert";
  constructor(
    readonly purpose: string,
    readonly revert: { name: string; args: unknown[] } | undefined,
    message: string,
    readonly txHash?: string,
  ) {
    super(message);
  }
}

export interface Sent {
  id: number;
  txHash: string;
  receipt: TransactionReceipt;
}

export type Outbox = ReturnType<typeof createOutbox>;

/**
 * Every transaction of the service's verifier key goes through here, one nonce after another:
 * - a call is simulated first (a refusal costs no nonce), then signed and recorded before it is broadcast, so a crash
 *   never loses a signed transaction, and a restart broadcasts what was recorded but not mined;
 * - one purpose (e.g. `assign:<task>:<agent>`) is sent at most once unless it reverted: retrying a request after a
 *   crash waits for the recorded transaction instead of sending a second one;
 * - a dropped transaction is broadcast again; a stuck one, or one the node keeps refusing, is replaced with higher
 *   fees at the same nonce;
 * - a nonce taken by another transaction of the key (none of the entry's transactions mined) ends the entry as
 *   reverted, so asking for its purpose again sends a new transaction.
 * One process holds a verifier key: nonces are allocated in memory after reading the chain and the table once. Only
 * the current key's entries are followed; those of a previous key are left as they are.
 */
export function createOutbox(options: OutboxOptions) {
  const { db, chain, signer, now } = options;
  const pollMs = options.pollMs ?? 200;
  const resendAfterMs = options.resendAfterMs ?? 10_000;
  const bumpAfterMs = options.bumpAfterMs ?? 60_000;
  const provider = chain.provider;
  let sender: string | undefined;
  let nextNonce: number | undefined;
  let signing: Promise<unknown> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;
  let started = false;
  let polling: Promise<void> | undefined;
  const waiters = new Map<number, Waiter[]>();

  async function address(): Promise<string> {
    sender ??= await signer.getAddress();
    return sender;
  }

  /** Runs `work` after every earlier signing step: nonces are handed out in order. */
  function serially<T>(work: () => Promise<T>): Promise<T> {
    const run = signing.then(work, work);
    signing = run.catch(() => undefined);
    return run;
  }

  async function allocateNonce(from: string): Promise<number> {
    if (nextNonce === undefined) {
      const pending = await chainCall(() => provider.getTransactionCount(from, "pending"));
      const last = await db
        .selectFrom("outbox")
        .select((eb) => eb.fn.max("nonce").as("nonce"))
        .where("chain", "=", chain.name)
        .where("sender", "=", from)
        .executeTakeFirst();
      const recorded = last?.nonce === null || last?.nonce === undefined ? -1 : Number(last.nonce);
      nextNonce = Math.max(pending, recorded + 1);
    }
    return nextNonce++;
  }

  async function latest(purpose: string): Promise<Entry | undefined> {
    return db
      .selectFrom("outbox")
      .selectAll()
      .where("chain", "=", chain.name)
      .where("purpose", "=", purpose)
      .orderBy("id", "desc")
      .executeTakeFirst();
  }

  async function sign(purpose: string, to: string, data: string): Promise<Entry> {
    return serially(async () => {
      const existing = await latest(purpose);
      if (existing && existing.status !== "reverted") return existing;
      const from = await address();
      const request: TransactionRequest = { from, to, data };
      let gasLimit: bigint;
      try {
        gasLimit = ((await provider.estimateGas(request)) * 12n) / 10n;
      } catch (error) {
        const revert = decodeRevert(chain.escrow.interface, error);
        if (!revert && !isCallRevert(error)) throw chainUnavailable(error, chain.name);
        throw new OutboxRevert(
          purpose,
          revert,
          `${purpose} would revert: ${revert ? `${revert.name}(${revert.args.join(", ")})` : (error as Error).message}`,
        );
      }
      const fees = await chainCall(() => provider.getFeeData());
      const maxFee = fees.maxFeePerGas ?? fees.gasPrice ?? 0n;
      const priorityFee = fees.maxPriorityFeePerGas ?? 0n;
      const nonce = await allocateNonce(from);
      try {
        const raw = await signer.signTransaction({
          ...request,
          nonce,
          gasLimit,
          maxFeePerGas: maxFee,
          maxPriorityFeePerGas: priorityFee,
          chainId: chain.config.chainId,
          type: 2,
        });
        const txHash = Transaction.from(raw).hash!;
        const at = now();
        const inserted = await db
          .insertInto("outbox")
          .values({
            chain: chain.name,
            sender: from,
            nonce,
            purpose,
            to_address: to,
            data,
            gas_limit: gasLimit.toString(),
            max_fee: maxFee.toString(),
            priority_fee: priorityFee.toString(),
            raw,
            tx_hash: txHash,
            hashes: json.write([txHash]),
            status: "signed",
            attempts: 1,
            mined_block: null,
            error: null,
            created_at: at,
            sent_at: null,
            updated_at: at,
          })
          .returningAll()
          .executeTakeFirstOrThrow();
        return inserted;
      } catch (error) {
        // Nothing may be recorded at this nonce: read it again from the chain and the table, or every later
        // transaction would wait behind the gap (and a restart, taking the recorded maximum, would not close it).
        nextNonce = undefined;
        throw error;
      }
    });
  }

  async function broadcast(entry: Entry): Promise<void> {
    try {
      await provider.broadcastTransaction(entry.raw);
    } catch (error) {
      // Already in the pool, already mined, or the nonce taken by another transaction: the poll settles it.
      if (!isAlreadySent(error)) {
        options.logger?.warn({ err: error, purpose: entry.purpose, nonce: entry.nonce }, "broadcast failed; will retry");
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
  async function bump(entry: Entry): Promise<void> {
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

  function settle(id: number, outcome: { sent?: Sent; error?: Error }) {
    const list = waiters.get(id) ?? [];
    waiters.delete(id);
    for (const w of list) {
      if (outcome.sent) w.resolve(outcome.sent);
      else w.reject(outcome.error!);
    }
  }

  /** Checks every unsettled transaction of the current key once, each on its own: receipts, rebroadcasts, fee bumps. */
  async function poll(): Promise<void> {
    const from = await address();
    const unsettled = () =>
      db
        .selectFrom("outbox")
        .selectAll()
        .where("chain", "=", chain.name)
        .where("sender", "=", from)
        .where("status", "in", ["signed", "sent"])
        .orderBy("nonce")
        .execute();
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
        options.logger?.error({ err: error, chain: chain.name, purpose: entry.purpose, nonce: entry.nonce }, "outbox: checking a transaction failed");
      }
    }
  }

  async function check(entry: Entry, head: number, used: number): Promise<void> {
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
          : { error: new OutboxRevert(entry.purpose, undefined, error ?? "reverted", receipt.hash) },
      );
      return;
    }
    if (entry.nonce < used) {
      // The nonce is mined, by none of this entry's transactions: another transaction of the key took it. The entry
      // ends, and the next nonce is read from the chain again (the key is evidently used elsewhere too).
      const error = `nonce ${entry.nonce} was used by another transaction of ${entry.sender}`;
      await db.updateTable("outbox").set({ status: "reverted", error, updated_at: now() }).where("id", "=", entry.id).execute();
      nextNonce = undefined;
      settle(entry.id, { error: new OutboxRevert(entry.purpose, undefined, `${entry.purpose}: ${error}`) });
      return;
    }
    const waited = now() - (entry.sent_at ?? entry.created_at);
    if (waited >= bumpAfterMs * entry.attempts) await bump(entry);
    else if (entry.status === "signed" || waited >= resendAfterMs) await broadcast(entry);
  }

  /** Why a mined transaction reverted, by replaying its call at the block before. */
  async function revertReason(entry: Entry, block: number): Promise<string> {
    try {
      await provider.call({ from: entry.sender, to: entry.to_address, data: entry.data, blockTag: block - 1 });
      return "reverted";
    } catch (error) {
      const revert = decodeRevert(chain.escrow.interface, error);
      return revert ? `${revert.name}(${revert.args.join(", ")})` : "reverted";
    }
  }

  /** Polls while the loop is started or someone waits for a transaction. */
  function schedule() {
    if (timer !== undefined || polling !== undefined || (!started && waiters.size === 0)) return;
    timer = setTimeout(() => {
      timer = undefined;
      polling = poll()
        .catch((error: unknown) => options.logger?.error({ err: error, chain: chain.name }, "outbox poll failed"))
        .finally(() => {
          polling = undefined;
          schedule();
        });
    }, pollMs);
  }

  return {
    /**
     * Sends `data` to `to` for `purpose` and resolves once it is mined (with the chain's confirmations), or rejects
     * with OutboxRevert when the escrow refuses it. Calling again with the same purpose waits for the same transaction.
     */
    async send(purpose: string, to: string, data: string, timeoutMs = 60_000): Promise<Sent> {
      const entry = await sign(purpose, to, data);
      if (entry.status === "mined") {
        const receipt = await chainCall(() => provider.getTransactionReceipt(entry.tx_hash));
        if (receipt?.status === 1) return { id: entry.id, txHash: entry.tx_hash, receipt };
        // A reorg took the receipt away (or the transaction was mined again and reverted there): follow the nonce
        // again, so the poll rebroadcasts it, bumps it, or records how it ended this time.
        const at = now();
        await db
          .updateTable("outbox")
          .set({ status: "sent", mined_block: null, sent_at: at, updated_at: at })
          .where("id", "=", entry.id)
          .where("status", "=", "mined")
          .execute();
      }
      let waiter: Waiter | undefined;
      const result = new Promise<Sent>((resolve, reject) => {
        waiter = { resolve, reject };
        waiters.set(entry.id, [...(waiters.get(entry.id) ?? []), waiter]);
      });
      // Settled while the broadcast below is awaited: not an unhandled rejection, the race still sees it.
      result.catch(() => undefined);
      let timeout: NodeJS.Timeout | undefined;
      try {
        if (entry.status === "signed") await broadcast(entry);
        schedule();
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
        const rest = (waiters.get(entry.id) ?? []).filter((w) => w !== waiter);
        if (rest.length > 0) waiters.set(entry.id, rest);
        else waiters.delete(entry.id);
      }
    },

    /** The latest recorded transaction for a purpose. */
    latest,

    /** Starts the background loop; anything recorded but not mined (e.g. before a restart) is resumed. */
    start() {
      started = true;
      schedule();
    },

    async stop() {
      started = false;
      for (const id of [...waiters.keys()]) settle(id, { error: new Error("outbox stopped") });
      if (timer) clearTimeout(timer);
      timer = undefined;
      await polling;
    },

    /** One check of every unsettled transaction (tests drive it by hand). */
    poll,

    /** Callers waiting for a transaction. */
    waiting(): number {
      let count = 0;
      for (const list of waiters.values()) count += list.length;
      return count;
    },
  };
}

interface Waiter {
  resolve: (s: Sent) => void;
  reject: (e: Error) => void;
}

/** The marketplace verifier key's outbox on a chain, or `VERIFIER_KEY_NOT_CONFIGURED`: without one a chain cannot assign or judge. */
export function requireOutbox(outboxes: ReadonlyMap<string, Outbox>, chain: string): Outbox {
  const outbox = outboxes.get(chain);
  if (!outbox) throw new MarketError("VERIFIER_KEY_NOT_CONFIGURED", `No marketplace verifier key is configured for ${chain}.`);
  return outbox;
}
