import type { Insertable, Transaction } from "kysely";
import type { Database, ListingsTable } from "../db/schema";
import type { ChainEvent } from "../indexer/events";
import type { EventType } from "@market/core/api/events";
import { isPayout, toEnding, type EscrowEventName } from "@market/core/escrow";
import type { EventDraft } from "./log";

/** The escrow events that become log events, by the type they become. Escrow-wide events (fees, pauses) do not. */
const TYPE_OF: Partial<Record<EscrowEventName, EventType>> = {
  TaskCreated: "task.funded",
  WorkerAssigned: "task.assigned",
  WorkerReleased: "task.released",
  EvidenceSubmitted: "task.delivered",
  VerificationCompleted: "task.verified",
  DisputeRaised: "task.disputed",
  DisputeResolved: "task.ruled",
  UnjudgedWorkEscalated: "task.escalated",
  TaskCompleted: "task.paid",
  TaskCancelled: "task.cancelled",
  DeadlineExpired: "task.expired",
  TaskRefunded: "task.refunded",
};

/** The type an escrow event becomes in the log, if any. */
export function eventTypeOf(name: string): EventType | undefined {
  return TYPE_OF[name as EscrowEventName];
}

/**
 * The log events of a batch of escrow events, in chain order, read inside the indexer's transaction after the task
 * projection applied them: the task's poster, worker and verifier as projected see an event, the event's own worker
 * too (a released worker sees its release); everyone sees it when the task's listing is public. A task not listed
 * (yet) is private: its listing event says so when it comes.
 */
export async function draftsOf(trx: Transaction<Database>, chain: string, events: readonly ChainEvent[]): Promise<EventDraft[]> {
  const kept = events.filter((e) => e.taskHash !== null && eventTypeOf(e.event) !== undefined);
  if (kept.length === 0) return [];
  const hashes = [...new Set(kept.map((e) => e.taskHash!))];
  const [tasks, listings] = await Promise.all([
    trx
      .selectFrom("escrow_tasks")
      .select(["task_hash", "poster", "worker", "verifier"])
      .where("chain", "=", chain)
      .where("task_hash", "in", hashes)
      .execute(),
    trx.selectFrom("listings").select(["task_hash", "privacy", "service_id"]).where("chain", "=", chain).where("task_hash", "in", hashes).execute(),
  ]);
  const parties = new Map(tasks.map((t) => [t.task_hash, [t.poster, t.worker, t.verifier].filter((w): w is string => w !== null)]));
  const publicTasks = new Set(listings.filter((l) => l.privacy === "public").map((l) => l.task_hash));
  const rentals = new Map(listings.filter((l) => l.service_id !== null).map((l) => [l.task_hash, Number(l.service_id)]));
  return kept.flatMap((e) => {
    const { taskHash: _taskHash, ...fields } = e.args as Record<string, unknown>;
    const own = ["worker", "poster", "raisedBy", "verifier"].map((k) => fields[k]).filter((w): w is string => typeof w === "string");
    const draft: EventDraft = {
      type: eventTypeOf(e.event)!,
      taskHash: e.taskHash,
      // A funding is the poster's own business until the listing says whether the task is public.
      public: e.event !== "TaskCreated" && publicTasks.has(e.taskHash!),
      audience: [...(parties.get(e.taskHash!) ?? []), ...own],
      data: fields,
      log: { blockNumber: e.blockNumber, blockHash: e.blockHash, logIndex: e.logIndex, txHash: e.txHash },
    };
    const serviceId = rentals.get(e.taskHash!);
    if (e.event !== "TaskCompleted" || serviceId === undefined || !isPayout(toEnding(e.args.ending))) return [draft];
    // A paid rental settles (the service's sold count, server/services/projection.ts): the same log, so a reorg that
    // takes the payout back reverts both.
    const { worker, payout, fee } = e.args;
    const settled: EventDraft = {
      ...draft,
      type: "rental.settled",
      data: { serviceId, worker, renter: parties.get(e.taskHash!)?.[0] ?? null, amount: (BigInt(payout) + BigInt(fee)).toString(), payout, fee },
    };
    return [draft, settled];
  });
}

/**
 * The compensating events of a reorg: one `event.reverted` per logged event whose log the reorg removed, newest first,
 * seen by whoever saw the original and naming it. The originals stay in the log (a replay shows both).
 */
export async function compensationsOf(trx: Transaction<Database>, chain: string, removed: readonly ChainEvent[]): Promise<EventDraft[]> {
  const logged = removed.filter((e) => e.taskHash !== null && eventTypeOf(e.event) !== undefined);
  if (logged.length === 0) return [];
  const blocks = [...new Set(logged.map((e) => e.blockHash))];
  const originals = await trx
    .selectFrom("events")
    .select(["seq", "id", "type", "task_hash", "public", "block_hash", "log_index", "block_number", "tx_hash"])
    .where("chain", "=", chain)
    .where("block_hash", "in", blocks)
    .where("type", "!=", "event.reverted")
    .orderBy("seq", "desc")
    .execute();
  if (originals.length === 0) return [];
  const audience = await trx
    .selectFrom("event_audience")
    .select(["seq", "wallet"])
    .where("chain", "=", chain)
    .where(
      "seq",
      "in",
      originals.map((o) => o.seq),
    )
    .execute();
  const removedKeys = new Set(logged.map((e) => `${e.blockHash}:${e.logIndex}`));
  return originals
    .filter((o) => removedKeys.has(`${o.block_hash}:${o.log_index}`))
    .map((o) => ({
      type: "event.reverted" as const,
      taskHash: o.task_hash,
      public: o.public === 1,
      audience: audience.filter((a) => Number(a.seq) === Number(o.seq)).map((a) => a.wallet),
      data: { reverts: o.id, revertedType: o.type, blockNumber: Number(o.block_number), txHash: o.tx_hash },
    }));
}

/**
 * `task.listed` of the tasks this batch funds that were listed before their funding was indexed: the listing left it
 * to the indexing (a worker's browse shows a task once both are stored). Once per task, even when a reorg replays the
 * funding.
 */
export async function listedOnIndexing(trx: Transaction<Database>, chain: string, events: readonly ChainEvent[]): Promise<EventDraft[]> {
  const funded = [...new Set(events.filter((e) => e.event === "TaskCreated" && e.taskHash !== null).map((e) => e.taskHash!))];
  if (funded.length === 0) return [];
  const listings = await trx.selectFrom("listings").selectAll().where("chain", "=", chain).where("task_hash", "in", funded).execute();
  if (listings.length === 0) return [];
  const hashes = listings.map((l) => l.task_hash);
  const [logged, tasks, keys] = await Promise.all([
    trx
      .selectFrom("events")
      .select("task_hash")
      .where("chain", "=", chain)
      .where("type", "=", "task.listed")
      .where("task_hash", "in", hashes)
      .execute(),
    trx.selectFrom("escrow_tasks").select(["task_hash", "deadline", "amount"]).where("chain", "=", chain).where("task_hash", "in", hashes).execute(),
    trx.selectFrom("task_keys").select(["task_hash", "agent_address"]).where("task_hash", "in", hashes).execute(),
  ]);
  const done = new Set(logged.map((e) => e.task_hash));
  const deadlines = new Map(tasks.map((t) => [t.task_hash, Number(t.deadline)]));
  const amounts = new Map(tasks.map((t) => [t.task_hash, t.amount]));
  return listings
    .filter((l) => !done.has(l.task_hash) && deadlines.has(l.task_hash))
    .map((l) =>
      listedDraft(
        { ...l, amount: amounts.get(l.task_hash)! },
        keys.filter((k) => k.task_hash === l.task_hash).map((k) => k.agent_address),
        deadlines.get(l.task_hash)!,
      ),
    );
}

/**
 * The event of a first listing, recorded in the listing's transaction: public for a public listing (with what a
 * worker routes on, never a brief), otherwise seen by the poster and the agents its brief is wrapped to.
 */
export function listedDraft(listing: Insertable<ListingsTable> & { amount: string }, invited: readonly string[], deadline: number): EventDraft {
  return {
    type: "task.listed",
    taskHash: listing.task_hash,
    public: listing.privacy === "public",
    audience: [listing.poster, ...invited],
    data: {
      poster: listing.poster,
      privacy: listing.privacy,
      amount: listing.amount,
      token: listing.token,
      deadline,
      verificationMode: listing.verification_mode,
      requiredCapabilities: JSON.parse(listing.required_capabilities) as unknown,
      targetExecutor: listing.target_executor ?? null,
      serviceId: listing.service_id ?? null,
    },
  };
}
