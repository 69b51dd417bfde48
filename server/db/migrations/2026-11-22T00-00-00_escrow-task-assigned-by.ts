import type { Kysely } from "kysely";

/**
 * escrow_tasks.assigned_by: who assigned the task's current worker on chain (WorkerAssigned.assignedBy), null while
 * the task has none. Reputation counts a task only when the marketplace assigned it, not when its poster did
 * (`assignWorker`).
 *
 * Existing rows are filled in from the stored WorkerAssigned events. Then every agent credited by a task its poster
 * assigned directly is recomputed from the events of its marketplace-assigned tasks, as the reputation projection's
 * rebuild does. The rules are copied here as they stand at this migration (a migration never imports the
 * application, whose rules may change later); every other agent's rows are left as they are.
 */
export async function up(db: Kysely<any>): Promise<void> {
  // All or nothing: the migrator runs PostgreSQL's migrations in a transaction, not SQLite's.
  const atomically = (work: (trx: Kysely<any>) => Promise<void>) => (db.isTransaction ? work(db) : db.transaction().execute(work));
  await atomically(async (trx) => {
    await trx.schema.alterTable("escrow_tasks").addColumn("assigned_by", "varchar(42)").execute();
    await backfillAssignedBy(trx);
    for (const worker of await workersCreditedByPosters(trx)) await recompute(trx, worker);
  });
}

export async function down(db: Kysely<any>): Promise<void> {
  // Reputation recomputed by `up` stays as it is: the rule it follows is the one the escrow's events support.
  await db.schema.alterTable("escrow_tasks").dropColumn("assigned_by").execute();
}

const CHUNK = 1_000;
const RELEVANT = ["VerificationCompleted", "DisputeRaised", "TaskCompleted", "TaskRefunded", "DeadlineExpired"];
/** Ending numbers of the escrow (contracts/interfaces/ITaskEscrow.sol). */
const DISPUTE_WON_BY_POSTER = 7;
const DISPUTE_UNRULED = 8;

/** The latest WorkerAssigned of each task that has a worker names who assigned it. */
async function backfillAssignedBy(db: Kysely<any>): Promise<void> {
  const rows: Array<{ chain: string; task_hash: string; args: string }> = await db
    .selectFrom("escrow_tasks as t")
    .innerJoin("escrow_events as e", (join) => join.onRef("e.chain", "=", "t.chain").onRef("e.task_hash", "=", "t.task_hash"))
    .select(["t.chain", "t.task_hash", "e.args"])
    .where("t.worker", "is not", null)
    .where("e.event", "=", "WorkerAssigned")
    .orderBy("e.block_number")
    .orderBy("e.log_index")
    .execute();
  const latest = new Map<string, { chain: string; taskHash: string; by: string }>();
  for (const row of rows) {
    const args = JSON.parse(row.args) as { assignedBy?: string };
    if (typeof args.assignedBy === "string") {
      latest.set(`${row.chain}:${row.task_hash}`, { chain: row.chain, taskHash: row.task_hash, by: args.assignedBy });
    }
  }
  // A few distinct assigners (the verifier key, the posters that assign directly): one UPDATE per chunk of each.
  const groups = new Map<string, { chain: string; by: string; hashes: string[] }>();
  for (const { chain, taskHash, by } of latest.values()) {
    const key = `${chain}:${by}`;
    const group = groups.get(key) ?? { chain, by, hashes: [] };
    group.hashes.push(taskHash);
    groups.set(key, group);
  }
  for (const { chain, by, hashes } of groups.values()) {
    for (let i = 0; i < hashes.length; i += CHUNK) {
      await db
        .updateTable("escrow_tasks")
        .set({ assigned_by: by })
        .where("chain", "=", chain)
        .where("task_hash", "in", hashes.slice(i, i + CHUNK))
        .execute();
    }
  }
}

/** Workers of a task their poster assigned that has an outcome reputation counted. */
async function workersCreditedByPosters(db: Kysely<any>): Promise<string[]> {
  const rows: Array<{ worker: string }> = await db
    .selectFrom("escrow_tasks as t")
    .select("t.worker")
    .distinct()
    .whereRef("t.assigned_by", "=", "t.poster")
    .where("t.worker", "is not", null)
    .where((eb) =>
      eb.exists(
        eb
          .selectFrom("escrow_events as e")
          .select("e.task_hash")
          .whereRef("e.chain", "=", "t.chain")
          .whereRef("e.task_hash", "=", "t.task_hash")
          .where("e.event", "in", RELEVANT),
      ),
    )
    .execute();
  return rows.map((r) => r.worker).sort();
}

interface State {
  reputation: number;
  tasks_completed: number;
  failed_rounds: number;
  disputes: number;
  disputes_lost: number;
  earnings: bigint;
  raw_score: number;
  last_settled_at: number | null;
}

/** The worker's reputation and per-tag stats from its marketplace-assigned tasks' events, in time order. */
async function recompute(db: Kysely<any>, worker: string): Promise<void> {
  type Row = { task_hash: string; event: string; args: string; block_time: number | string; poster: string; assigned_by: string | null };
  const events: Row[] = await db
    .selectFrom("escrow_events as e")
    .innerJoin("escrow_tasks as t", (join) => join.onRef("t.chain", "=", "e.chain").onRef("t.task_hash", "=", "e.task_hash"))
    .select(["e.task_hash", "e.event", "e.args", "e.block_time", "t.poster", "t.assigned_by"])
    .where("t.worker", "=", worker)
    .where("e.event", "in", RELEVANT)
    .orderBy("e.block_time")
    .orderBy("e.chain")
    .orderBy("e.block_number")
    .orderBy("e.log_index")
    .execute();

  const clamp = (n: number) => Math.min(100, Math.max(0, n));
  const state: State = {
    reputation: 50,
    tasks_completed: 0,
    failed_rounds: 0,
    disputes: 0,
    disputes_lost: 0,
    earnings: 0n,
    raw_score: 0,
    last_settled_at: null,
  };
  let counted = false;
  const tags = new Map<string, { completions: number; failures: number }>();
  const countTags = async (taskHash: string, completion: boolean) => {
    const listing: { required_capabilities: string } | undefined = await db
      .selectFrom("listings")
      .select("required_capabilities")
      .where("task_hash", "=", taskHash)
      .executeTakeFirst();
    for (const tag of listing ? (JSON.parse(listing.required_capabilities) as string[]) : []) {
      const stats = tags.get(tag) ?? { completions: 0, failures: 0 };
      if (completion) stats.completions += 1;
      else stats.failures += 1;
      tags.set(tag, stats);
    }
  };

  for (const e of events) {
    if (e.assigned_by === null || e.assigned_by === e.poster) continue;
    const args = JSON.parse(e.args) as Record<string, string | boolean>;
    if (e.event === "VerificationCompleted" && args.passed === false) {
      state.reputation = clamp(state.reputation - 10);
      state.failed_rounds += 1;
      counted = true;
    } else if (e.event === "DisputeRaised") {
      state.disputes += 1;
      counted = true;
    } else if (e.event === "TaskCompleted") {
      const at = Math.floor(Number(e.block_time) / 1000);
      state.reputation = clamp(state.reputation + 1);
      state.tasks_completed += 1;
      state.earnings += BigInt(String(args.payout));
      state.raw_score += 10;
      state.last_settled_at = Math.max(state.last_settled_at ?? 0, at);
      counted = true;
      await countTags(e.task_hash, true);
    } else if (e.event === "TaskRefunded" && Number(args.ending) === DISPUTE_WON_BY_POSTER) {
      state.reputation = clamp(state.reputation - 10);
      state.disputes_lost += 1;
      counted = true;
      await countTags(e.task_hash, false);
    } else if (e.event === "DeadlineExpired" && Number(args.ending) === DISPUTE_UNRULED) {
      await countTags(e.task_hash, false);
    }
  }

  await db.deleteFrom("reputation").where("address", "=", worker).execute();
  await db.deleteFrom("capability_stats").where("address", "=", worker).execute();
  if (counted)
    await db
      .insertInto("reputation")
      .values({ address: worker, ...state, earnings: state.earnings.toString() })
      .execute();
  for (const [tag, stats] of tags)
    await db
      .insertInto("capability_stats")
      .values({ address: worker, tag, ...stats })
      .execute();
}
