import type { Transaction } from "kysely";
import type { Database } from "../db/schema";
import { json } from "../db";
import { fromEventRow, type ChainEvent } from "../indexer/events";
import type { Projection } from "../indexer/projection";
import { projectedTaskOf } from "../indexer/task-projection";
import { applyReputation, FRESH_REPUTATION, type ReputationEvent, type ReputationState } from "../../core/reputation";
import { applyTaskEvent, Ending, toEnding, type EscrowEventName, type ProjectedTask } from "../../core/escrow";

type Trx = Transaction<Database>;
/** Rows or keys per statement, as the task projection reads them. */
const CHUNK = 1_000;

/** What one escrow event means for the task's worker: a reputation event and/or a per-tag outcome. */
interface WorkerFact {
  worker: string;
  taskHash: string;
  reputation?: ReputationEvent;
  tagOutcome?: "completion" | "failure";
}

const RELEVANT = [
  "WorkerReleased",
  "VerificationCompleted",
  "DisputeRaised",
  "TaskCompleted",
  "TaskRefunded",
  "DeadlineExpired",
] as const satisfies readonly EscrowEventName[];
const isRelevant = (event: ChainEvent) => (RELEVANT as readonly string[]).includes(event.event);
/** Events that decide who a task's credited worker is, or what it earns: the tasks the range must follow. */
const followed = (event: ChainEvent) => event.event === "WorkerAssigned" || event.event === "WorkerReleased" || isRelevant(event);

/**
 * The worker a task's outcomes count for: its worker when the marketplace assigned it (WorkerAssigned.assignedBy is
 * not the poster: `marketplaceAssign` by the verifier key, after the API's accept checks, which refuse the poster and
 * the agents of the poster's account). A task the poster assigned directly with `assignWorker` counts for no one:
 * two wallets and a task small enough to pay no fee would otherwise buy reputation and the decayed score that ranks
 * agents for offers. Undefined (a task created before the start block) counts for no one either.
 */
export function creditedWorker(task: Pick<ProjectedTask, "poster" | "worker" | "assignedBy"> | undefined): string | null {
  if (!task?.worker || task.assignedBy === null || task.assignedBy === task.poster) return null;
  return task.worker;
}

/** The tasks as the task projection has them before the range (it runs after this one); absent when not indexed. */
async function indexedTasks(trx: Trx, chain: string, hashes: readonly string[]): Promise<Map<string, ProjectedTask>> {
  const tasks = new Map<string, ProjectedTask>();
  for (let i = 0; i < hashes.length; i += CHUNK) {
    const rows = await trx
      .selectFrom("escrow_tasks")
      .selectAll()
      .where("chain", "=", chain)
      .where("task_hash", "in", hashes.slice(i, i + CHUNK))
      .execute();
    for (const row of rows) tasks.set(row.task_hash, projectedTaskOf(row));
  }
  return tasks;
}

/** The worker fact of an event, or undefined when the event does not concern a worker's record. */
function factOf(event: ChainEvent, worker: string | null): WorkerFact | undefined {
  if (!worker || !event.taskHash) return undefined;
  const base = { worker, taskHash: event.taskHash };
  switch (event.event) {
    case "WorkerReleased":
      // Handing back an accepted task (it read the brief, held the task, committed nothing): docs/security.md.
      return { ...base, reputation: { kind: "released" } };
    case "VerificationCompleted":
      return event.args.passed ? undefined : { ...base, reputation: { kind: "failedRound" } };
    case "DisputeRaised":
      return { ...base, reputation: { kind: "disputeRaised" } };
    case "TaskCompleted":
      return {
        ...base,
        reputation: { kind: "settled", payout: BigInt(event.args.payout), at: event.blockTime },
        tagOutcome: "completion",
      };
    case "TaskRefunded":
      return toEnding(event.args.ending) === Ending.DisputeWonByPoster
        ? { ...base, reputation: { kind: "disputeLost" }, tagOutcome: "failure" }
        : undefined;
    case "DeadlineExpired":
      // A dispute left without a ruling refunds the poster: a failure for the task's tags, no ruling against the agent.
      if (toEnding(event.args.ending) === Ending.DisputeUnruled) return { ...base, tagOutcome: "failure" };
      // An assignment that ends never delivered costs the agent as a failed round does (task hoarding).
      if (toEnding(event.args.ending) === Ending.NeverDelivered) return { ...base, reputation: { kind: "neverDelivered" }, tagOutcome: "failure" };
      return undefined;
    default:
      return undefined;
  }
}

/**
 * Locks the agents' rows (creating fresh ones where missing) before they are read, in one order. Every chain has its
 * own indexer: on PostgreSQL two of them (or one rebuilding after a reorg) may update the same agent at once, and a
 * read-modify-write of an unlocked row would lose one of the updates. SQLite has one writer at a time already.
 */
async function lockStates(trx: Trx, addresses: Iterable<string>): Promise<void> {
  for (const address of [...new Set(addresses)].sort()) {
    await trx
      .insertInto("reputation")
      .values({ address, ...toRow(FRESH_REPUTATION) })
      .onConflict((oc) => oc.column("address").doUpdateSet((eb) => ({ address: eb.ref("excluded.address") })))
      .execute();
  }
}

async function loadState(trx: Trx, address: string): Promise<ReputationState> {
  const row = await trx.selectFrom("reputation").selectAll().where("address", "=", address).executeTakeFirst();
  if (!row) return { ...FRESH_REPUTATION };
  return {
    reputation: row.reputation,
    tasksCompleted: row.tasks_completed,
    failedRounds: row.failed_rounds,
    disputes: row.disputes,
    disputesLost: row.disputes_lost,
    earnings: row.earnings,
    rawScore: row.raw_score,
    lastSettledAt: row.last_settled_at,
  };
}

function toRow(s: ReputationState) {
  return {
    reputation: s.reputation,
    tasks_completed: s.tasksCompleted,
    failed_rounds: s.failedRounds,
    disputes: s.disputes,
    disputes_lost: s.disputesLost,
    earnings: s.earnings,
    raw_score: s.rawScore,
    last_settled_at: s.lastSettledAt,
  };
}

async function saveState(trx: Trx, address: string, s: ReputationState): Promise<void> {
  const values = toRow(s);
  await trx
    .insertInto("reputation")
    .values({ address, ...values })
    .onConflict((oc) => oc.column("address").doUpdateSet(values))
    .execute();
}

async function countTags(trx: Trx, fact: WorkerFact): Promise<void> {
  if (!fact.tagOutcome) return;
  const listing = await trx.selectFrom("listings").select("required_capabilities").where("task_hash", "=", fact.taskHash).executeTakeFirst();
  const tags = json.read<string[]>(listing?.required_capabilities ?? null) ?? [];
  const completion = fact.tagOutcome === "completion" ? 1 : 0;
  for (const tag of tags) {
    await trx
      .insertInto("capability_stats")
      .values({ address: fact.worker, tag, completions: completion, failures: 1 - completion })
      .onConflict((oc) =>
        oc.columns(["address", "tag"]).doUpdateSet((eb) => ({
          completions: eb("capability_stats.completions", "+", completion),
          failures: eb("capability_stats.failures", "+", 1 - completion),
        })),
      )
      .execute();
  }
}

async function applyFacts(trx: Trx, facts: readonly WorkerFact[]): Promise<void> {
  await lockStates(
    trx,
    facts.flatMap((fact) => (fact.reputation ? [fact.worker] : [])),
  );
  const states = new Map<string, ReputationState>();
  for (const fact of facts) {
    if (fact.reputation) {
      const state = states.get(fact.worker) ?? (await loadState(trx, fact.worker));
      states.set(fact.worker, applyReputation(state, fact.reputation));
    }
    await countTags(trx, fact);
  }
  for (const [address, state] of states) await saveState(trx, address, state);
}

/**
 * Replays every remaining event of every task the agent was ever assigned, on every chain, in time order, folding
 * each task as the task projection does: a released task no longer names the agent, and its release still counts.
 */
async function rebuild(trx: Trx, worker: string): Promise<void> {
  await lockStates(trx, [worker]);
  await trx.deleteFrom("reputation").where("address", "=", worker).execute();
  await trx.deleteFrom("capability_stats").where("address", "=", worker).execute();
  const assigned = await trx
    .selectFrom("escrow_events")
    .select(["chain", "task_hash"])
    .distinct()
    .where("event", "=", "WorkerAssigned")
    .where("args", "like", `%"worker":"${worker}"%`)
    .execute();
  const byChain = new Map<string, string[]>();
  for (const row of assigned) if (row.task_hash) byChain.set(row.chain, [...(byChain.get(row.chain) ?? []), row.task_hash]);
  const events: ChainEvent[] = [];
  for (const [chain, hashes] of byChain) {
    for (let i = 0; i < hashes.length; i += CHUNK) {
      const rows = await trx
        .selectFrom("escrow_events")
        .selectAll()
        .where("chain", "=", chain)
        .where("task_hash", "in", hashes.slice(i, i + CHUNK))
        .execute();
      events.push(...rows.map(fromEventRow));
    }
  }
  events.sort((a, b) => a.blockTime - b.blockTime || a.chain.localeCompare(b.chain) || a.blockNumber - b.blockNumber || a.logIndex - b.logIndex);
  const tasks = new Map<string, ProjectedTask | undefined>();
  const facts: WorkerFact[] = [];
  for (const event of events) {
    const key = `${event.chain}:${event.taskHash}`;
    const task = tasks.get(key);
    if (isRelevant(event)) {
      const fact = factOf(event, creditedWorker(task));
      if (fact?.worker === worker) facts.push(fact);
    }
    tasks.set(key, applyTaskEvent(task, event));
  }
  await applyFacts(trx, facts);
}

/**
 * Keeps `reputation` and `capability_stats` in step with the escrow's events: applied incrementally, and rebuilt
 * for each affected worker when a reorg removes events (the clamping at 0 and 100 makes the result depend on order).
 * Only marketplace-assigned tasks count (`creditedWorker`). It runs before the task projection, so the stored task
 * is the one before the range; the range's own creations, assignments and releases are followed event by event with
 * the task projection's rule (`applyTaskEvent`), so assignment and payout count alike in one range or in two.
 */
export function createReputationProjection(): Projection {
  return {
    name: "reputation",
    async apply(trx, chain, events) {
      const hashes = [...new Set(events.flatMap((e) => (e.taskHash !== null && followed(e) ? [e.taskHash] : [])))];
      if (hashes.length === 0) return;
      const tracked = new Set(hashes);
      const tasks: Map<string, ProjectedTask | undefined> = await indexedTasks(trx, chain, hashes);
      const facts: WorkerFact[] = [];
      for (const event of events) {
        if (event.taskHash === null || !tracked.has(event.taskHash)) continue;
        const task = tasks.get(event.taskHash);
        if (isRelevant(event)) {
          const fact = factOf(event, creditedWorker(task));
          if (fact) facts.push(fact);
        }
        // A task created before the start block stays undefined: a rebuild never counts it, so whether its
        // assignment and ending fall into one range must not decide whether they count.
        tasks.set(event.taskHash, applyTaskEvent(task, event));
      }
      await applyFacts(trx, facts);
    },
    async rollback(trx, chain, removed) {
      // Runs after the task projection rolled back: the stored workers and assignments are the canonical ones again,
      // and the removed assignments and payouts name the workers the removed events may have credited.
      const workers = new Set<string>();
      const outcomes = new Set<string>();
      for (const event of removed) {
        if (!event.taskHash) continue;
        if (event.event === "WorkerAssigned" || event.event === "WorkerReleased") workers.add(event.args.worker);
        if (event.event === "TaskCompleted") workers.add(event.args.worker);
        if (isRelevant(event)) outcomes.add(event.taskHash);
      }
      for (const task of (await indexedTasks(trx, chain, [...outcomes])).values()) if (task.worker) workers.add(task.worker);
      for (const worker of [...workers].sort()) await rebuild(trx, worker);
    },
  };
}
