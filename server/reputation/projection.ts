import type { Transaction } from "kysely";
import { sameAccount as accountsShared } from "../db/same-account";
import type { Database } from "../db/schema";
import { json } from "../db";
import { fromEventRow, type ChainEvent } from "../indexer/events";
import type { Projection } from "../indexer/projection";
import { projectedTaskOf } from "../indexer/task-projection";
import {
  applyReputation,
  bestMatchingSkill,
  creditRefusal,
  DEFAULT_CREDIT_RULE,
  FRESH_REPUTATION,
  type CreditRule,
  type ReputationEvent,
  type ReputationState,
} from "@market/core/reputation";
import { applyTaskEvent, Ending, toEnding, type EscrowEventName, type ProjectedTask } from "@market/core/escrow";

type Trx = Transaction<Database>;
/** Rows or keys per statement, as the task projection reads them. */
const CHUNK = 1_000;

/** What one escrow event means for the task's worker: a reputation event and/or a per-tag outcome. */
interface WorkerFact {
  worker: string;
  chain: string;
  taskHash: string;
  reputation?: ReputationEvent;
  tagOutcome?: "completion" | "failure";
  /** A payout: it credits the worker only as `creditRefusal` allows (decided in order, in `applyFacts`). */
  settlement?: { poster: string; amount: bigint; at: number };
}

/** Who raised each task's dispute (`chain:taskHash`): a worker's dispute left unruled counts as lost. */
type Raisers = Map<string, string>;
const taskKey = (chain: string, taskHash: string) => `${chain}:${taskHash}`;

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
function factOf(event: ChainEvent, task: ProjectedTask | undefined, raisers: Raisers): WorkerFact | undefined {
  const worker = creditedWorker(task);
  if (!worker || !task || !event.taskHash) return undefined;
  const base = { worker, chain: event.chain, taskHash: event.taskHash };
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
        settlement: { poster: task.poster, amount: task.amount, at: event.blockTime },
      };
    case "TaskRefunded":
      return toEnding(event.args.ending) === Ending.DisputeWonByPoster
        ? { ...base, reputation: { kind: "disputeLost" }, tagOutcome: "failure" }
        : undefined;
    case "DeadlineExpired":
      // A dispute left without a ruling refunds the poster: a failure for the task's tags; when the worker raised it
      // (disputes as a weapon: docs/security.md), it costs the worker as a dispute lost.
      if (toEnding(event.args.ending) === Ending.DisputeUnruled) {
        return raisers.get(taskKey(event.chain, event.taskHash)) === worker
          ? { ...base, reputation: { kind: "disputeLost" }, tagOutcome: "failure" }
          : { ...base, tagOutcome: "failure" };
      }
      // An assignment that ends never delivered costs the agent as a failed round does (task hoarding).
      if (toEnding(event.args.ending) === Ending.NeverDelivered) return { ...base, reputation: { kind: "neverDelivered" }, tagOutcome: "failure" };
      return undefined;
    default:
      return undefined;
  }
}

/** Remembers who raised a dispute, before the events that follow it are read. */
function noteRaiser(event: ChainEvent, raisers: Raisers): void {
  if (event.event === "DisputeRaised" && event.taskHash) raisers.set(taskKey(event.chain, event.taskHash), event.args.raisedBy);
}

/**
 * Whether the poster's account holds the agent's wallet, registered the agent, or runs it as a hosted agent: such a
 * poster never credits the agent (two wallets of one person). The poster's account counts its hosted agents' wallets
 * too (a task posted over /mcp by one of the account's hosted agents; issue 23 item 5). Read as the accounts are when
 * the payout is indexed.
 */
async function sameAccount(trx: Trx, poster: string, worker: string): Promise<boolean> {
  return accountsShared(trx, poster, worker);
}

/** Tasks the poster credited the worker with in the period up to `at`. */
async function pairCredits(trx: Trx, poster: string, worker: string, at: number, rule: CreditRule): Promise<number> {
  const row = await trx
    .selectFrom("reputation_credits")
    .select((eb) => eb.fn.countAll<number | string>().as("n"))
    .where("worker", "=", worker)
    .where("poster", "=", poster)
    .where("credited_at", ">", at - rule.periodSeconds)
    .where("credited_at", "<=", at)
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

/** A payout as it counts: credited (recorded, and the fact as it is), or only paid (earnings, no tag completion). */
async function settle(trx: Trx, fact: WorkerFact, rule: CreditRule): Promise<WorkerFact> {
  const settlement = fact.settlement;
  if (!settlement || fact.reputation?.kind !== "settled") return fact;
  const refused = creditRefusal(
    { amount: settlement.amount },
    {
      sameAccount: await sameAccount(trx, settlement.poster, fact.worker),
      pairCreditsInPeriod: await pairCredits(trx, settlement.poster, fact.worker, settlement.at, rule),
    },
    rule,
  );
  if (refused)
    return { worker: fact.worker, chain: fact.chain, taskHash: fact.taskHash, reputation: { kind: "paid", payout: fact.reputation.payout } };
  await trx
    .insertInto("reputation_credits")
    .values({ chain: fact.chain, task_hash: fact.taskHash, worker: fact.worker, poster: settlement.poster, credited_at: settlement.at })
    .onConflict((oc) => oc.columns(["chain", "task_hash"]).doNothing())
    .execute();
  return fact;
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

/**
 * The installed public skill of the worker (a hosted agent) that best matches the task's tags, if any (issue 25 item
 * 7): the skills as installed when the outcome is indexed (a rebuild reads them as they are then), public ones only.
 */
async function creditedSkill(trx: Trx, worker: string, tags: readonly string[]): Promise<number | undefined> {
  if (tags.length === 0) return undefined;
  const rows = await trx
    .selectFrom("hosted_agent_skills")
    .innerJoin("hosted_agents", "hosted_agents.id", "hosted_agent_skills.agent_id")
    .innerJoin("skills", "skills.id", "hosted_agent_skills.skill_id")
    .select(["hosted_agent_skills.skill_id", "hosted_agent_skills.snapshot"])
    .where("hosted_agents.address", "=", worker)
    .where("skills.is_public", "=", 1)
    .orderBy("hosted_agent_skills.installed_at")
    .orderBy("hosted_agent_skills.skill_id")
    .execute();
  const skills = rows.map((r) => ({ id: r.skill_id, capabilities: json.read<{ capabilities?: string[] }>(r.snapshot)?.capabilities ?? [] }));
  return bestMatchingSkill(skills, tags)?.id;
}

async function countTags(trx: Trx, fact: WorkerFact): Promise<void> {
  if (!fact.tagOutcome) return;
  const listing = await trx.selectFrom("listings").select("required_capabilities").where("task_hash", "=", fact.taskHash).executeTakeFirst();
  const tags = json.read<string[]>(listing?.required_capabilities ?? null) ?? [];
  const completion = fact.tagOutcome === "completion" ? 1 : 0;
  const skillId = await creditedSkill(trx, fact.worker, tags);
  if (skillId !== undefined) {
    await trx
      .insertInto("skill_stats")
      .values({ address: fact.worker, skill_id: skillId, completions: completion, failures: 1 - completion })
      .onConflict((oc) =>
        oc.columns(["address", "skill_id"]).doUpdateSet((eb) => ({
          completions: eb("skill_stats.completions", "+", completion),
          failures: eb("skill_stats.failures", "+", 1 - completion),
        })),
      )
      .execute();
  }
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

async function applyFacts(trx: Trx, facts: readonly WorkerFact[], rule: CreditRule): Promise<void> {
  await lockStates(
    trx,
    facts.flatMap((fact) => (fact.reputation ? [fact.worker] : [])),
  );
  const states = new Map<string, ReputationState>();
  for (const given of facts) {
    const fact = await settle(trx, given, rule);
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
async function rebuild(trx: Trx, worker: string, rule: CreditRule): Promise<void> {
  await lockStates(trx, [worker]);
  await trx.deleteFrom("reputation").where("address", "=", worker).execute();
  await trx.deleteFrom("capability_stats").where("address", "=", worker).execute();
  await trx.deleteFrom("skill_stats").where("address", "=", worker).execute();
  await trx.deleteFrom("reputation_credits").where("worker", "=", worker).execute();
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
  const raisers: Raisers = new Map();
  const facts: WorkerFact[] = [];
  for (const event of events) {
    const key = taskKey(event.chain, event.taskHash ?? "");
    const task = tasks.get(key);
    noteRaiser(event, raisers);
    if (isRelevant(event)) {
      const fact = factOf(event, task, raisers);
      if (fact?.worker === worker) facts.push(fact);
    }
    tasks.set(key, applyTaskEvent(task, event));
  }
  await applyFacts(trx, facts, rule);
}

/** Who raised the disputes of these tasks, from the stored events (the range's own are stored before projections run). */
async function storedRaisers(trx: Trx, chain: string, hashes: readonly string[]): Promise<Raisers> {
  const raisers: Raisers = new Map();
  for (let i = 0; i < hashes.length; i += CHUNK) {
    const rows = await trx
      .selectFrom("escrow_events")
      .selectAll()
      .where("chain", "=", chain)
      .where("event", "=", "DisputeRaised")
      .where("task_hash", "in", hashes.slice(i, i + CHUNK))
      .orderBy("block_number")
      .orderBy("log_index")
      .execute();
    for (const row of rows) noteRaiser(fromEventRow(row), raisers);
  }
  return raisers;
}

/**
 * Keeps `reputation`, `capability_stats`, `skill_stats` and `reputation_credits` in step with the escrow's events: applied
 * incrementally, and rebuilt for each affected worker when a reorg removes events (the clamping at 0 and 100, and the
 * credits per pair and period, make the result depend on order). Only marketplace-assigned tasks count
 * (`creditedWorker`), and a payout credits only as `rule` allows (`creditRefusal`). It runs before the task projection, so the stored task
 * is the one before the range; the range's own creations, assignments and releases are followed event by event with
 * the task projection's rule (`applyTaskEvent`), so assignment and payout count alike in one range or in two.
 */
export function createReputationProjection(rule: CreditRule = DEFAULT_CREDIT_RULE): Projection {
  return {
    name: "reputation",
    async apply(trx, chain, events) {
      const hashes = [...new Set(events.flatMap((e) => (e.taskHash !== null && followed(e) ? [e.taskHash] : [])))];
      if (hashes.length === 0) return;
      const tracked = new Set(hashes);
      const tasks: Map<string, ProjectedTask | undefined> = await indexedTasks(trx, chain, hashes);
      const expiring = [...new Set(events.flatMap((e) => (e.event === "DeadlineExpired" && e.taskHash !== null ? [e.taskHash] : [])))];
      const raisers = await storedRaisers(trx, chain, expiring);
      const facts: WorkerFact[] = [];
      for (const event of events) {
        if (event.taskHash === null || !tracked.has(event.taskHash)) continue;
        const task = tasks.get(event.taskHash);
        noteRaiser(event, raisers);
        if (isRelevant(event)) {
          const fact = factOf(event, task, raisers);
          if (fact) facts.push(fact);
        }
        // A task created before the start block stays undefined: a rebuild never counts it, so whether its
        // assignment and ending fall into one range must not decide whether they count.
        tasks.set(event.taskHash, applyTaskEvent(task, event));
      }
      await applyFacts(trx, facts, rule);
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
      for (const worker of [...workers].sort()) await rebuild(trx, worker, rule);
    },
  };
}
