import type { Db } from "../db";
import { isUniqueViolation, json } from "../db";
import type { ChainRegistry } from "../chains";
import type { AgentRegistry, RegisteredAgent } from "../agents";
import type { Outbox } from "../outbox";
import { OutboxRevert } from "../outbox";
import type { Offers } from "./offers";
import type { Custody } from "./custody";
import { refusal } from "./eligibility";
import { loadTask, requireLive, waitForIndexer, type Assignment, type TaskContext } from "./task-context";
import { normalizeWrappedKeys } from "../tasks/terms";
import { MarketError } from "../../core/errors";
import { Ending, EscrowStatus, statusName } from "../../core/escrow";

export interface MarketplaceDeps {
  db: Db;
  chains: ChainRegistry;
  agents: AgentRegistry;
  offers: Offers;
  custody: Custody;
  /** The verifier key's outbox per chain name; a chain without one cannot assign or judge. */
  outboxes: ReadonlyMap<string, Outbox>;
  now: () => number;
  /** How long an answer waits for the indexer to show a confirmed transaction (ms). */
  indexerWaitMs?: number;
}

/** What an agent needs once a task is assigned to it: the brief (or how to open it) and how it is judged. */
export interface Assigned {
  taskHash: string;
  chain: string;
  escrowAddress: string;
  worker: string;
  status: "assigned";
  assignTx: string | null;
  deadline: number;
  rounds: number;
  brief: { privacy: "public" | "private"; publicBrief?: string; routingSummary?: string; rootHash?: string; wrappedKey?: string };
  verification: { mode: string; criteria?: Record<string, unknown>; verifierAddress?: string };
}

/** How old an accept lock with no live assignment transaction must be before another agent may take the task. */
export const ACCEPT_LOCK_TTL_MS = 2 * 60_000;

export function requireOutbox(deps: Pick<MarketplaceDeps, "outboxes">, chain: string): Outbox {
  const outbox = deps.outboxes.get(chain);
  if (!outbox) throw new MarketError("VERIFIER_KEY_NOT_CONFIGURED", `No marketplace verifier key is configured for ${chain}.`);
  return outbox;
}

export function createAccepting(deps: MarketplaceDeps) {
  const { db, chains, agents, offers, custody, now } = deps;

  async function registered(wallet: string): Promise<RegisteredAgent> {
    const agent = await agents.lookup(wallet);
    if (!agent) throw new MarketError("AGENT_NOT_REGISTERED");
    return agent;
  }

  async function wrappedKeyOf(taskHash: string, agent: string): Promise<string | undefined> {
    const row = await db
      .selectFrom("task_keys")
      .select("wrapped_key")
      .where("task_hash", "=", taskHash)
      .where("agent_address", "=", agent)
      .executeTakeFirst();
    return row?.wrapped_key;
  }

  /** The refusal this agent gets for this task, counting wraps and custody copies. */
  async function refusalFor(ctx: TaskContext, agent: RegisteredAgent) {
    const wrapped = ctx.listing.privacy === "public" || (await wrappedKeyOf(ctx.listing.task_hash, agent.profile.address)) !== undefined;
    return refusal(
      {
        listing: ctx.listing,
        status: ctx.onChain.status,
        deadline: ctx.onChain.deadline,
        posterAccountId: await offers.posterAccount(ctx.listing.poster),
        wrappedToCandidate: wrapped,
        rewrappable: custody.available && ctx.listing.key_custody_blob !== null,
      },
      agent,
      Math.floor(now() / 1000),
    );
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
    const wrappedKey = await wrappedKeyOf(listing.task_hash, worker);
    const criteria = json.read<Record<string, unknown>>(listing.verification_criteria);
    return {
      taskHash: listing.task_hash,
      chain: chain.name,
      escrowAddress: chain.config.escrow,
      worker,
      status: "assigned",
      assignTx: assignTx?.tx_hash ?? null,
      deadline: onChain.deadline,
      rounds: onChain.rounds,
      brief: {
        privacy: listing.privacy,
        ...(listing.public_brief === null ? {} : { publicBrief: listing.public_brief }),
        ...(listing.routing_summary === null ? {} : { routingSummary: listing.routing_summary }),
        ...(listing.root_hash === null ? {} : { rootHash: listing.root_hash }),
        ...(wrappedKey === undefined ? {} : { wrappedKey }),
      },
      verification: {
        mode: listing.verification_mode,
        ...(criteria === null ? {} : { criteria }),
        ...(listing.verifier_address === null ? {} : { verifierAddress: listing.verifier_address }),
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
    const agent = await registered(wallet);
    const address = agent.profile.address;
    let ctx = await loadTask(db, chains, taskHash);
    const { listing, onChain } = ctx;

    if (onChain.worker === address && onChain.status !== EscrowStatus.Funded) {
      // Held until it ends: accepting again answers the same assignment; an ended task is no longer open.
      if (onChain.ending !== Ending.None) throw new MarketError("NOT_OPEN", `The task has ended (${statusName(onChain.status)}).`);
      return confirmAssigned(ctx, address);
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
    const outbox = requireOutbox(deps, listing.chain);
    await requireLive(db, listing.chain);
    const refused = await refusalFor(ctx, agent);
    if (refused) throw refused;
    await offers.requireNotHeld(listing.task_hash, address);

    if (listing.privacy === "private" && (await wrappedKeyOf(listing.task_hash, address)) === undefined) {
      const rewrapped = custody.rewrap(listing.key_custody_blob ?? "", agent.profile.publicKey ?? "");
      if (!rewrapped) throw new MarketError("NEEDS_WRAP", "The custody copy of the brief key cannot be opened (the key was rotated).");
      await db
        .insertInto("task_keys")
        .values({ task_hash: listing.task_hash, agent_address: address, wrapped_key: rewrapped })
        .onConflict((oc) => oc.columns(["task_hash", "agent_address"]).doNothing())
        .execute();
    }

    let lockedAt = held?.agent_address === address ? held.created_at : undefined;
    if (lockedAt === undefined) {
      try {
        lockedAt = now();
        await db
          .insertInto("assignments")
          .values({ task_hash: listing.task_hash, agent_address: address, status: "accepting", outbox_id: null, created_at: lockedAt, updated_at: lockedAt })
          .execute();
      } catch (error) {
        if (!isUniqueViolation(error)) throw error;
        throw new MarketError("ACCEPT_IN_PROGRESS");
      }
    }

    // One purpose per accept lock: retries of this accept wait for the same transaction; an accept after a release or
    // an expired lock is a new one.
    const purpose = assignPurpose(listing.chain, listing.task_hash, address, lockedAt);
    try {
      const data = ctx.chain.escrow.interface.encodeFunctionData("marketplaceAssign", [listing.task_hash, address]);
      const sent = await outbox.send(purpose, ctx.chain.config.escrow, data);
      await db.updateTable("assignments").set({ status: "assigned", outbox_id: sent.id, updated_at: now() }).where("task_hash", "=", listing.task_hash).execute();
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
      const row = await db.selectFrom("escrow_tasks").select("worker").where("chain", "=", listing.chain).where("task_hash", "=", listing.task_hash).executeTakeFirst();
      return row?.worker === address;
    }, deps.indexerWaitMs);
    ctx = await loadTask(db, chains, taskHash);
    return assignedView(ctx, address);
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

  /** Interest in a task whose brief is not wrapped to the agent; the poster reads bids and may wrap the key. */
  async function bid(wallet: string, taskHash: string, message: string | undefined) {
    const agent = await registered(wallet);
    const ctx = await loadTask(db, chains, taskHash);
    const refused = await refusalFor(ctx, agent);
    if (refused && refused.code !== "NEEDS_WRAP") throw refused;
    await db
      .insertInto("bids")
      .values({ task_hash: ctx.listing.task_hash, agent_address: agent.profile.address, message: message ?? null, created_at: now() })
      .onConflict((oc) => oc.columns(["task_hash", "agent_address"]).doUpdateSet({ message: message ?? null }))
      .execute();
    return { taskHash: ctx.listing.task_hash, agent: agent.profile.address, wrapped: refused === undefined || ctx.listing.privacy === "public" };
  }

  async function bids(wallet: string, taskHash: string) {
    const ctx = await loadTask(db, chains, taskHash);
    if (ctx.listing.poster !== wallet) throw new MarketError("NOT_POSTER", "Only the poster can read bids.");
    const rows = await db.selectFrom("bids").selectAll().where("task_hash", "=", ctx.listing.task_hash).orderBy("created_at").execute();
    const profiles = await agents.search({ addresses: rows.map((r) => r.agent_address) });
    const byAddress = new Map(profiles.map((p) => [p.profile.address, p.profile]));
    return rows.map((r) => {
      const profile = byAddress.get(r.agent_address);
      return {
        agent: r.agent_address,
        message: r.message,
        createdAt: r.created_at,
        publicKey: profile?.publicKey ?? null,
        capabilities: profile?.capabilities ?? [],
        reputation: profile?.reputation ?? 0,
      };
    });
  }

  /** The poster wraps the brief key to more agents (bidders) after listing. */
  async function addKeys(wallet: string, taskHash: string, wrappedKeys: Record<string, string>) {
    const ctx = await loadTask(db, chains, taskHash);
    if (ctx.listing.poster !== wallet) throw new MarketError("NOT_POSTER");
    if (ctx.listing.privacy !== "private") throw new MarketError("PUBLIC_TASK_KEYS");
    const entries = Object.entries(normalizeWrappedKeys(wrappedKeys));
    const known = await agents.search({ addresses: entries.map(([a]) => a) });
    const registeredAddresses = new Set(known.map((k) => k.profile.address));
    const unknown = entries.filter(([a]) => !registeredAddresses.has(a));
    if (unknown.length > 0) {
      throw new MarketError("EXECUTOR_NOT_FOUND", `Not registered: ${unknown.map(([a]) => a).join(", ")}`);
    }
    for (const [agent, key] of entries) {
      await db
        .insertInto("task_keys")
        .values({ task_hash: ctx.listing.task_hash, agent_address: agent, wrapped_key: key })
        .onConflict((oc) => oc.columns(["task_hash", "agent_address"]).doNothing())
        .execute();
    }
    return { taskHash: ctx.listing.task_hash, agents: entries.map(([a]) => a) };
  }

  async function decline(wallet: string, taskHash: string) {
    const agent = await registered(wallet);
    const ctx = await loadTask(db, chains, taskHash);
    if (!(await offers.decline(ctx.listing.task_hash, agent.profile.address))) {
      throw new MarketError("WRONG_STATE", "No exclusive offer of this task is open for you.", { reason: "no_offer" });
    }
    return { taskHash: ctx.listing.task_hash, declined: true };
  }

  return { accept, bid, bids, addKeys, decline, assignedView };
}
