import { MarketError } from "@market/core/errors";
import { createRequests } from "./requests";
import { createSender } from "./sender";
import type { OutboxOptions } from "./types";

export { OutboxRevert, type OutboxOptions, type Sent } from "./types";

export type Outbox = ReturnType<typeof createOutbox>;

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
 *
 * Its parts: requests.ts (simulate, record, wait), sender.ts (sign, broadcast, follow), types.ts (the records); this
 * file runs the loop that drives them.
 */
export function createOutbox(options: OutboxOptions) {
  const { db, chain, signer, now } = options;
  const pollMs = options.pollMs ?? 200;
  let sender: string | undefined;
  let timer: NodeJS.Timeout | undefined;
  let started = false;
  let polling: Promise<void> | undefined;
  let again = false;

  async function address(): Promise<string> {
    sender ??= await signer.getAddress();
    return sender;
  }

  const requests = createRequests({ db, chain, now, address, wake });
  const sending = createSender(
    { db, chain, signer, now, ...(options.logger ? { logger: options.logger } : {}), address, settle: requests.settle },
    {
      resendAfterMs: options.resendAfterMs ?? 10_000,
      bumpAfterMs: options.bumpAfterMs ?? 60_000,
      leading: options.leading ?? true,
      simulate: requests.simulate,
    },
  );

  /** One round: the sender signs what is queued and follows what is sent; every process settles its waiters. */
  async function round(): Promise<void> {
    if (sending.leading()) {
      try {
        await sending.drain();
      } catch (error) {
        options.logger?.error({ err: error, chain: chain.name }, "outbox: signing a queued transaction failed; will retry");
      }
      try {
        if (sending.leading()) await sending.poll();
      } catch (error) {
        options.logger?.error({ err: error, chain: chain.name }, "outbox poll failed");
      }
    }
    await requests.settleEnded();
  }

  /** Runs rounds while the loop is started or someone waits for a transaction. */
  function schedule(delay = pollMs) {
    if (timer !== undefined || polling !== undefined || (!started && !requests.hasWaiters())) return;
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
    send: requests.send,

    /** The latest recorded entry for a purpose (queued, signed or ended). */
    latest: requests.latest,

    /** Starts the background loop; anything recorded but not mined (e.g. before a restart) is resumed by the sender. */
    start() {
      started = true;
      schedule();
    },

    /** This process becomes the key's sender (it holds the sender lease): it signs, sends and follows from now on. */
    lead() {
      sending.lead(true);
      wake();
    },

    /** This process stops sending (the lease is gone); resolves once the round under way has ended. */
    async follow() {
      sending.lead(false);
      await polling;
    },

    /** Whether this process is the key's sender. */
    leading: sending.leading,

    async stop() {
      started = false;
      requests.settleAll(new Error("outbox stopped"));
      clearTimeout(timer);
      timer = undefined;
      await polling;
    },

    /** One check of every unsettled transaction (tests drive it by hand). */
    poll: sending.poll,

    /** Callers waiting for a transaction. */
    waiting: requests.waiting,
  };
}

/** The marketplace verifier key's outbox on a chain, or `VERIFIER_KEY_NOT_CONFIGURED`: without one a chain cannot assign or judge. */
export function requireOutbox(outboxes: ReadonlyMap<string, Outbox>, chain: string): Outbox {
  const outbox = outboxes.get(chain);
  if (!outbox) throw new MarketError("VERIFIER_KEY_NOT_CONFIGURED", `No marketplace verifier key is configured for ${chain}.`);
  return outbox;
}
