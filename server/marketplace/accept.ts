import { isUniqueViolation, type Db } from "../db";
import { withNameLocked } from "../db/locks";
import { listedFields, loadTask, requireLive, waitForIndexer, type Assignment, type TaskContext } from "../tasks";
import { OutboxRevert, requireOutbox } from "../outbox";
import { refusalFor, registeredAgent, wrappedKeyOf, type MarketplaceDeps } from "./deps";
import { asAddress, asTaskHash, type Assigned, type DeclineAnswer } from "@market/core/api";
import { MarketError } from "@market/core/errors";
import { Ending, EscrowStatus, statusName } from "@market/core/escrow";
import { undeliveredAssignmentCap } from "@market/core/reputation";
import { createSharedWindows, rateLimited } from "../http/rate-limit";
import { DEFAULT_ABUSE } from "../config";

export type { MarketplaceDeps } from "./deps";

/** How old an accept lock with no live assignment transaction must be before another agent may take the task. */
export const ACCEPT_LOCK_TTL_MS = 2 * 60_000;

export type Accepting = ReturnType<typeof createAccepting>;

/** Taking a task: accepting it (assigned on chain by the marketplace verifier key) or declining its exclusive offer. */
export function createAccepting(deps: MarketplaceDeps) {
  const { db, chains, agents, offers, custody, now } = deps;
  const abuse = deps.abuse ?? DEFAULT_ABUSE;
  /** Accepts per agent per minute, counted in the database: every API process shares the count. */
  const acceptWindows = createSharedWindows(db, "accepts", 60_000);

  /**
   * The tasks the agent holds undelivered: assigned on chain with no evidence yet, or being assigned (an accept lock,
   * or an assignment sent and not indexed yet). Read through `db`: the accept's transaction.
   */
  async function undelivered(db: Db, address: string): Promise<number> {
    const onChain = await db
      .selectFrom("escrow_tasks")
      .select(["chain", "task_hash"])
      .where("worker", "=", address)
      .where("status", "=", EscrowStatus.Assigned)
      .execute();
    const pending = await db
      .selectFrom("assignments as a")
      .leftJoin("listings as l", "l.task_hash", "a.task_hash")
      .leftJoin("escrow_tasks as t", (join) => join.onRef("t.task_hash", "=", "a.task_hash").onRef("t.chain", "=", "l.chain"))
      .select(["a.task_hash", "a.status as lock", "a.updated_at", "t.status", "t.worker"])
      .where("a.agent_address", "=", address)
      .execute();
    const held = new Set(onChain.map((row) => row.task_hash));
    const sent: string[] = [];
    for (const row of pending) {
      if (row.worker === address || (row.status !== null && row.status !== EscrowStatus.Funded)) continue;
      // An accept lock counts; an assignment sent but not indexed yet counts while recent (an old one was released).
      if (row.lock === "accepting") held.add(row.task_hash);
      else if (now() - row.updated_at < ACCEPT_LOCK_TTL_MS) sent.push(row.task_hash);
    }
    if (sent.length > 0) {
      // Indexed and open again: the agent handed it back.
      const released = await db
        .selectFrom("escrow_events")
        .select("task_hash")
        .where("event", "=", "WorkerReleased")
        .where("task_hash", "in", sent)
        .where("args", "like", `%"worker":"${address}"%`)
        .execute();
      const back = new Set(released.map((row) => row.task_hash));
      for (const taskHash of sent) if (!back.has(taskHash)) held.add(taskHash);
    }
    return held.size;
  }

  /** HOARDING_CAP when the agent already holds as many undelivered tasks as its record allows. */
  async function requireUnderCap(db: Db, address: string): Promise<void> {
    const record = await db.selectFrom("reputation").select("tasks_completed").where("address", "=", address).executeTakeFirst();
    const cap = undeliveredAssignmentCap(record?.tasks_completed ?? 0, abuse.assignmentCap);
    const held = await undelivered(db, address);
    if (held >= cap) {
      throw new MarketError("ASSIGNMENT_CAP_REACHED", `The agent holds ${held} undelivered tasks; its record allows ${cap} at once.`, {
        details: [{ message: "deliver or hand back a task first", held, cap }],
      });
    }
  }

  async function assignedView(ctx: TaskContext, worker: string): Promise<Assigned> {
    const { listing, chain, onChain } = ctx;
    const assignTx = await db
      .selectFrom("escrow_events")
      .select("tx_hash")
      .where("chain", "=", chain.name)
      .where("task_hash", "=", listing.task_hash)
      .where("event", "=", "WorkerAssigned")
      .orderBy("block_number", "desc")
      .executeTakeFirst();
    const wrappedKey = await wrappedKeyOf(db, listing.task_hash, worker);
    const fields = listedFields(listing);
    return {
      taskHash: asTaskHash(listing.task_hash),
      chain: chain.name,
      escrowAddress: asAddress(chain.config.escrow),
      worker: asAddress(worker),
      status: "assigned",
      assignTx: assignTx?.tx_hash ?? null,
      deadline: onChain.deadline * 1000,
      rounds: onChain.rounds,
      brief: {
        privacy: fields.privacy,
        ...(fields.publicBrief === null ? {} : { publicBrief: fields.publicBrief }),
        ...(fields.routingSummary === null ? {} : { routingSummary: fields.routingSummary }),
        ...(fields.rootHash === null ? {} : { rootHash: fields.rootHash }),
        ...(wrappedKey === undefined ? {} : { wrappedKey }),
      },
      verification: {
        mode: fields.verificationMode,
        ...(fields.verificationCriteria === null ? {} : { criteria: fields.verificationCriteria }),
        ...(fields.verifierAddress === null ? {} : { verifierAddress: asAddress(fields.verifierAddress) }),
      },
    };
  }

  const assignPurpose = (chain: string, taskHash: string, agent: string, lockedAt: number) => `assign:${chain}:${taskHash}:${agent}:${lockedAt}`;

  /**
   * True when another agent's accept lock is older than ACCEPT_LOCK_TTL_MS and its assignment never got a live
   * transaction (nothing recorded, or it reverted): the accept died with the lock taken. A recorded transaction keeps
   * the lock; the escrow settles who gets the task.
   */
  async function abandoned(held: Assignment, chain: string): Promise<boolean> {
    if (now() - held.updated_at < ACCEPT_LOCK_TTL_MS) return false;
    const recorded = await deps.outboxes.get(chain)?.latest(assignPurpose(chain, held.task_hash, held.agent_address, held.created_at));
    return !recorded || recorded.status === "reverted";
  }

  const releaseLock = (taskHash: string, agent: string) =>
    db.deleteFrom("assignments").where("task_hash", "=", taskHash).where("agent_address", "=", agent).where("status", "=", "accepting").execute();

  /**
   * Takes a task: every accept condition, the exclusive offer, one accept at a time per task; then the marketplace
   * verifier key sends `marketplaceAssign` (the agent pays nothing) and the answer comes once it is confirmed.
   * Accepting again a task the agent already holds answers the same assignment.
   */
  async function accept(wallet: string, taskHash: string): Promise<Assigned> {
    const agent = await registeredAgent(agents, wallet);
    const address = agent.profile.address;
    let ctx = await loadTask(db, chains, taskHash);
    const { listing, onChain } = ctx;

    if (onChain.worker === address && onChain.status !== EscrowStatus.Funded) {
      // Held until it ends: accepting again answers the same assignment; an ended task is no longer open.
      if (onChain.ending !== Ending.None) throw new MarketError("NOT_OPEN", `The task has ended (${statusName(onChain.status)}).`);
      return { ...(await confirmAssigned(ctx, address)), alreadyHeld: true };
    }
    let held = ctx.assignment;
    if (held && held.status === "assigned" && onChain.status === EscrowStatus.Funded && onChain.worker === null) {
      // The holder released the task on chain: the lock is stale, and this accept takes a new one.
      await db.deleteFrom("assignments").where("task_hash", "=", listing.task_hash).execute();
      held = undefined;
    } else if (held && held.agent_address !== address) {
      if (held.status !== "accepting") throw new MarketError("NOT_OPEN", "Taken by another agent.");
      if (!(await abandoned(held, listing.chain))) throw new MarketError("ACCEPT_IN_PROGRESS");
      // The other agent's accept died before its transaction was recorded (or it reverted): its lock goes.
      await releaseLock(listing.task_hash, held.agent_address);
      held = undefined;
    }
    const wait = await acceptWindows.hit(address, abuse.acceptsPerMinute, now());
    if (wait !== undefined) throw rateLimited(wait, "accepts by this agent");
    const outbox = requireOutbox(deps.outboxes, listing.chain);
    await requireLive(db, listing.chain);
    const refused = await refusalFor(deps, ctx, agent);
    if (refused) throw refused;
    await offers.requireNotHeld(listing.task_hash, address);

    if (listing.privacy === "private" && (await wrappedKeyOf(db, listing.task_hash, address)) === undefined) {
      const rewrapped = custody.rewrap(listing.key_custody_blob ?? "", agent.profile.publicKey ?? "");
      if (!rewrapped) throw new MarketError("NEEDS_WRAP", "The custody copy of the brief key cannot be opened (the key was rotated).");
      await db
        .insertInto("task_keys")
        .values({ task_hash: listing.task_hash, agent_address: address, wrapped_key: rewrapped })
        .onConflict((oc) => oc.columns(["task_hash", "agent_address"]).doNothing())
        .execute();
    }

    // An accept of this agent was under way already (a retry, or a second runtime with the same key): it joins it.
    const alreadyHeld = held?.agent_address === address;
    let lockedAt = held?.agent_address === address ? held.created_at : undefined;
    if (lockedAt === undefined) {
      // The cap check and the accept lock's insert hold the agent's name: one at a time per agent, on every API
      // process, so two accepts at once cannot both pass a cap with one slot left.
      lockedAt = await withNameLocked(db, `accept:${address}`, now(), async (trx) => {
        await requireUnderCap(trx, address);
        const at = now();
        try {
          await trx
            .insertInto("assignments")
            .values({ task_hash: listing.task_hash, agent_address: address, status: "accepting", outbox_id: null, created_at: at, updated_at: at })
            .execute();
        } catch (error) {
          if (!isUniqueViolation(error)) throw error;
          throw new MarketError("ACCEPT_IN_PROGRESS");
        }
        return at;
      });
    }

    // One purpose per accept lock: retries of this accept wait for the same transaction; an accept after a release or
    // an expired lock is a new one.
    const purpose = assignPurpose(listing.chain, listing.task_hash, address, lockedAt);
    try {
      const data = ctx.chain.escrow.interface.encodeFunctionData("marketplaceAssign", [listing.task_hash, address]);
      const sent = await outbox.send(purpose, ctx.chain.config.escrow, data);
      await db
        .updateTable("assignments")
        .set({ status: "assigned", outbox_id: sent.id, updated_at: now() })
        .where("task_hash", "=", listing.task_hash)
        .execute();
    } catch (error) {
      if (error instanceof OutboxRevert) {
        await releaseLock(listing.task_hash, address);
        // Paused after the indexer last looked: the task is still open, the agent retries after the unpause.
        if (error.revert?.name === "EscrowPaused") throw new MarketError("ESCROW_PAUSED", undefined, { cause: error });
        throw new MarketError("NOT_OPEN", `The escrow refused the assignment: ${error.message}`, { cause: error });
      }
      // Nothing recorded: the lock goes. Recorded but unconfirmed: the lock stays and a retry waits for that transaction.
      const recorded = await outbox.latest(purpose);
      if (!recorded || recorded.status === "reverted") await releaseLock(listing.task_hash, address);
      throw error;
    }
    await waitForIndexer(async () => {
      const row = await db
        .selectFrom("escrow_tasks")
        .select("worker")
        .where("chain", "=", listing.chain)
        .where("task_hash", "=", listing.task_hash)
        .executeTakeFirst();
      return row?.worker === address;
    }, deps.indexerWaitMs);
    ctx = await loadTask(db, chains, taskHash);
    return { ...(await assignedView(ctx, address)), ...(alreadyHeld ? { alreadyHeld: true } : {}) };
  }

  async function confirmAssigned(ctx: TaskContext, address: string): Promise<Assigned> {
    const at = now();
    await db
      .insertInto("assignments")
      .values({ task_hash: ctx.listing.task_hash, agent_address: address, status: "assigned", outbox_id: null, created_at: at, updated_at: at })
      .onConflict((oc) => oc.column("task_hash").doUpdateSet({ agent_address: address, status: "assigned", updated_at: at }))
      .execute();
    return assignedView(ctx, address);
  }

  /** The agent gives up its exclusive offer: the task opens to every eligible agent at once. */
  async function decline(wallet: string, taskHash: string): Promise<DeclineAnswer> {
    const agent = await registeredAgent(agents, wallet);
    const ctx = await loadTask(db, chains, taskHash);
    if (!(await offers.decline(ctx.listing.task_hash, agent.profile.address))) {
      throw new MarketError("WRONG_STATE", "No exclusive offer of this task is open for you.", { reason: "no_offer" });
    }
    return { taskHash: asTaskHash(ctx.listing.task_hash), declined: true };
  }

  return { accept, decline };
}
