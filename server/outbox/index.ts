import { Transaction, type Signer, type TransactionReceipt, type TransactionRequest } from "ethers";
import { chainCall, chainUnavailable, type Chain } from "../chains";
import { isUniqueViolation, json, type Db } from "../db";
import type { OutboxTable } from "../db/schema";
import { sql, type Selectable } from "kysely";
import { decodeRevert, isAlreadySent, isCallRevert } from "../../core/revert";
import { MarketError } from "../../core/errors";

type Entry = Selectable<OutboxTable>;
/** An entry the sender has signed: it has a nonce and a transaction. */
type SignedEntry = Entry & { nonce: number; raw: string; tx_hash: string; hashes: string; gas_limit: string; max_fee: string; priority_fee: string };

function signedEntry(entry: Entry): SignedEntry {
  if (entry.nonce === null || entry.raw === null || entry.tx_hash === null) throw new Error(`outbox entry ${entry.id} is not signed`);
  return entry as SignedEntry;
}

export interface OutboxOptions {
  db: Db;
  chain: Chain;
  /** The marketplace verifier key, connected to the chain's provider. */
  signer: Signer;
  now: () => number;
  logger?: { warn(obj: object, msg: string): void; error(obj: object, msg: string): void };
  /** How often the sender signs what is queued and checks receipts, and a waiter looks for its entry's end (ms). */
  pollMs?: number;
  /** A transaction neither mined nor known after this long is broadcast again (ms). */
  resendAfterMs?: number;
  /**
   * A transaction still not mined after this long (or still refused by the node, never sent) is replaced with higher
   * fees, same nonce (ms); the wait grows with each replacement.
   */
  bumpAfterMs?: number;
  /**
   * Whether this process sends the key's transactions from the start (default true: the only process). With several
   * API processes on one database each starts as a follower, and the one holding the key's sender lease is made the
   * sender with `lead()` (server/index.ts, docs/scaling.md).
   */
  leading?: boolean;
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

/** Custom error arguments as JSON (uint arguments are bigints: kept as decimal strings). */
const revertJson = (revert: { name: string; args: unknown[] }) =>
  JSON.stringify(revert, (_key, value: unknown) => (typeof value === "bigint" ? value.toString() : value));

/**
 * Every transaction of the service's verifier key goes through here, one nonce after another:
 * - a call is simulated first (a refusal, or a node that does not answer, costs no nonce and records nothing), then
 *   recorded as a request (`queued`); the sender simulates it again, signs it at the key's next nonce and records the
 *   signed transaction before it is broadcast, so a crash never loses a signed transaction, and whoever sends next
 *   broadcasts what was recorded but not mined;
 * - one purpose (e.g. `assign:<task>:<agent>`) has at most one entry that is not reverted (a unique index): retrying a
 *   request, from any process, waits for the recorded one instead of sending a second transaction;
 * - a dropped transaction is broadcast again; a stuck one, or one the node keeps refusing, is replaced with higher
 *   fees at the same nonce;
 * - a nonce taken by another transaction of the key (none of the entry's transactions mined) ends the entry as
 *   reverted, so asking for its purpose again sends a new transaction.
 * Any number of processes may record requests and wait for them; one signs and sends (the leader, `lead()`). The
 * key's next nonce is a database row moved in the transaction that signs, which also claims the request (a second
 * sender can neither take the same nonce nor sign the same request). Only the current key's entries are followed;
 * those of a previous key are left as they are.
 */
export function createOutbox(options: OutboxOptions) {
  const { db, chain, signer, now } = options;
  const pollMs = options.pollMs ?? 200;
  const resendAfterMs = options.resendAfterMs ?? 10_000;
  const bumpAfterMs = options.bumpAfterMs ?? 60_000;
  const provider = chain.provider;
  let sender: string | undefined;
  let leading = options.leading ?? true;
  /** Whether the key's nonce row has been raised to the chain's count since this process became the sender. */
  let floorChecked = false;
  let timer: NodeJS.Timeout | undefined;
  let started = false;
  let polling: Promise<void> | undefined;
  let again = false;
  const waiters = new Map<number, Waiter[]>();

  async function address(): Promise<string> {
    sender ??= await signer.getAddress();
    return sender;
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

  /** The call's gas limit, or OutboxRevert when the escrow would refuse it (CHAIN_UNAVAILABLE when the node fails). */
  async function simulate(purpose: string, request: TransactionRequest): Promise<bigint> {
    try {
      return ((await provider.estimateGas(request)) * 12n) / 10n;
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

  function settle(id: number, outcome: { sent?: Sent; error?: Error }) {
    const list = waiters.get(id) ?? [];
    waiters.delete(id);
    for (const w of list) {
      if (outcome.sent) w.resolve(outcome.sent);
      else w.reject(outcome.error!);
    }
  }

  /** How an entry recorded as reverted ends its callers' wait. */
  function revertOf(entry: Entry): OutboxRevert {
    return new OutboxRevert(
      entry.purpose,
      json.read<{ name: string; args: unknown[] }>(entry.revert) ?? undefined,
      `${entry.purpose}: ${entry.error ?? "reverted"}`,
      entry.mined_block === null ? undefined : (entry.tx_hash ?? undefined),
    );
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
        options.logger?.error({ err: error, chain: chain.name, purpose: entry.purpose, nonce: entry.nonce }, "outbox: checking a transaction failed");
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

  /** One round: the sender signs what is queued and follows what is sent; every process settles its waiters. */
  async function round(): Promise<void> {
    if (leading) {
      try {
        await drain();
      } catch (error) {
        options.logger?.error({ err: error, chain: chain.name }, "outbox: signing a queued transaction failed; will retry");
      }
      try {
        if (leading) await poll();
      } catch (error) {
        options.logger?.error({ err: error, chain: chain.name }, "outbox poll failed");
      }
    }
    await settleEnded();
  }

  /** Runs rounds while the loop is started or someone waits for a transaction. */
  function schedule(delay = pollMs) {
    if (timer !== undefined || polling !== undefined || (!started && waiters.size === 0)) return;
    timer = setTimeout(() => {
      timer = undefined;
      polling = round()
        .catch((error: unknown) => options.logger?.error({ err: error, chain: chain.name }, "outbox: waiting for transactions failed"))
        .finally(() => {
          polling = undefined;
          const soon = again;
          again = false;
          schedule(soon ? 0 : pollMs);
        });
    }, delay);
  }

  /** A round now, or right after the running one. */
  function wake() {
    if (polling !== undefined) {
      again = true;
      return;
    }
    clearTimeout(timer);
    timer = undefined;
    schedule(0);
  }

  return {
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

    /** The latest recorded entry for a purpose (queued, signed or ended). */
    latest,

    /** Starts the background loop; anything recorded but not mined (e.g. before a restart) is resumed by the sender. */
    start() {
      started = true;
      schedule();
    },

    /** This process becomes the key's sender (it holds the sender lease): it signs, sends and follows from now on. */
    lead() {
      leading = true;
      floorChecked = false;
      wake();
    },

    /** This process stops sending (the lease is gone); resolves once the round under way has ended. */
    async follow() {
      leading = false;
      await polling;
    },

    /** Whether this process is the key's sender. */
    leading: () => leading,

    async stop() {
      started = false;
      for (const id of [...waiters.keys()]) settle(id, { error: new Error("outbox stopped") });
      clearTimeout(timer);
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
