import type { Selectable, Transaction } from "kysely";
import { Ending, EscrowStatus } from "../../core/escrow";
import type { Database, EscrowStateTable, EscrowTasksTable } from "../db/schema";
import { argsOf, compareEvents, fromEventRow, type ChainEvent } from "./events";
import type { Projection } from "./projection";

/** One row of escrow_tasks. */
export type TaskRow = Selectable<EscrowTasksTable>;
/** One row of escrow_state without its key. */
export type EscrowStateRow = Omit<Selectable<EscrowStateTable>, "chain">;

const ZERO_ADDRESS = "0x0000000000000000000000000000000000000000";
const STATE_EVENTS: ReadonlySet<string> = new Set(["FeeUpdated", "EscrowPausedAt", "EscrowUnpaused"]);
/** Rows (20 columns) or keys per statement: under SQLite's 32,766 and PostgreSQL's 65,535 bound parameters. */
const CHUNK = 1_000;

/**
 * The task a single event leaves behind: the one rule of the projection, used both when events arrive and when a
 * reorg rebuilds a task from its remaining events. Returns the same object when the event changes nothing.
 */
export function applyTaskEvent(task: TaskRow | undefined, event: ChainEvent): TaskRow | undefined {
  if (event.event === "TaskCreated") {
    const a = argsOf(event, "TaskCreated");
    return {
      chain: event.chain,
      task_hash: a.taskHash,
      poster: a.poster,
      token: a.token,
      amount: a.amount,
      verifier: a.verifier === ZERO_ADDRESS ? null : a.verifier,
      worker: null,
      assigned_by: null,
      deadline: Number(a.deadline),
      status: EscrowStatus.Funded,
      rounds: 0,
      ending: Ending.None,
      result_hash: null,
      phase_at: null,
      last_score: null,
      payout: null,
      fee: null,
      created_block: event.blockNumber,
      created_tx: event.txHash,
      updated_block: event.blockNumber,
    };
  }
  // Without its TaskCreated the task started before the indexer's start block: nothing to update.
  if (!task) return task;
  const update = (changes: Partial<TaskRow>): TaskRow => ({ ...task, ...changes, updated_block: event.blockNumber });
  switch (event.event) {
    case "WorkerAssigned": {
      // assignedBy tells a marketplace assignment (the verifier key) from the poster's own `assignWorker`.
      const a = argsOf(event, "WorkerAssigned");
      return update({ worker: a.worker, assigned_by: a.assignedBy, status: EscrowStatus.Assigned });
    }
    case "WorkerReleased":
      // The worker handed the task back before delivering: open (Funded) again, assigned by no one.
      return update({ worker: null, assigned_by: null, status: EscrowStatus.Funded });
    case "EvidenceSubmitted": {
      const a = argsOf(event, "EvidenceSubmitted");
      return update({ status: EscrowStatus.Submitted, rounds: Number(a.round), result_hash: a.resultHash });
    }
    case "VerificationCompleted": {
      const a = argsOf(event, "VerificationCompleted");
      // A pass is followed by TaskCompleted in the same transaction, which sets the status.
      return a.passed
        ? update({ last_score: Number(a.score) })
        : update({ last_score: Number(a.score), status: EscrowStatus.Failed, phase_at: event.blockTime });
    }
    case "DisputeRaised":
      return update({ status: EscrowStatus.Disputed, phase_at: event.blockTime });
    case "UnjudgedWorkEscalated":
      return update({ status: EscrowStatus.Escalated, phase_at: event.blockTime });
    case "TaskCompleted": {
      const a = argsOf(event, "TaskCompleted");
      const ending = Number(a.ending);
      return update({
        status: ending === Ending.VerificationPassed ? EscrowStatus.Verified : EscrowStatus.Paid,
        ending,
        payout: a.payout,
        fee: a.fee,
      });
    }
    case "TaskCancelled":
      return update({ status: EscrowStatus.Cancelled, ending: Number(argsOf(event, "TaskCancelled").ending) });
    case "DeadlineExpired":
      return update({ status: EscrowStatus.Refunded, ending: Number(argsOf(event, "DeadlineExpired").ending) });
    case "TaskRefunded":
      return update({ status: EscrowStatus.Refunded, ending: Number(argsOf(event, "TaskRefunded").ending) });
    default:
      // DisputeResolved: the ending event of the same transaction carries the change.
      return task;
  }
}

/**
 * A finished pause moves every live deadline and window by its length, as the escrow's views project them. Ended
 * tasks keep the times they ended with.
 */
export function shiftForPause(task: TaskRow | undefined, pausedFor: number): TaskRow | undefined {
  if (!task || task.ending !== Ending.None) return task;
  return { ...task, deadline: task.deadline + pausedFor, phase_at: task.phase_at === null ? null : task.phase_at + pausedFor };
}

export function applyStateEvent(state: EscrowStateRow | undefined, event: ChainEvent): EscrowStateRow | undefined {
  const current = state ?? { paused_at: null, total_paused: 0, fee_bps: 0 };
  switch (event.event) {
    case "FeeUpdated":
      return { ...current, fee_bps: Number(argsOf(event, "FeeUpdated").feeBps) };
    case "EscrowPausedAt":
      return { ...current, paused_at: Number(argsOf(event, "EscrowPausedAt").at) };
    case "EscrowUnpaused":
      return { ...current, paused_at: null, total_paused: Number(argsOf(event, "EscrowUnpaused").totalPaused) };
    default:
      return state;
  }
}

/**
 * escrow_tasks and escrow_state. Applying works in memory per range (one read of the touched tasks, one upsert
 * back); an unpause flushes and moves every live task of the chain in one UPDATE. Rolling back rebuilds only the
 * affected tasks from their remaining events and the remaining pause history.
 */
export function createTaskProjection(): Projection {
  return {
    name: "escrow-tasks",

    async apply(trx, chain, events) {
      const tasks = new Map<string, TaskRow | undefined>();
      const dirty = new Set<string>();
      let state: EscrowStateRow | undefined;
      let stateLoaded = false;
      let stateDirty = false;

      const flush = async () => {
        await upsertTasks(trx, [...dirty].flatMap((hash) => tasks.get(hash) ?? []));
        dirty.clear();
      };

      await loadTasks(trx, chain, taskHashesOf(events), tasks);
      for (const [i, event] of events.entries()) {
        if (event.taskHash !== null) {
          const before = tasks.get(event.taskHash);
          const after = applyTaskEvent(before, event);
          if (after !== before) {
            tasks.set(event.taskHash, after);
            dirty.add(event.taskHash);
          }
        } else if (STATE_EVENTS.has(event.event)) {
          if (!stateLoaded) {
            state = await readState(trx, chain);
            stateLoaded = true;
          }
          state = applyStateEvent(state, event);
          stateDirty = true;
          if (event.event === "EscrowUnpaused") {
            await flush();
            await shiftLiveTasks(trx, chain, Number(argsOf(event, "EscrowUnpaused").pausedFor));
            tasks.clear();
            await loadTasks(trx, chain, taskHashesOf(events.slice(i + 1)), tasks);
          }
        }
      }
      await flush();
      if (stateDirty) await writeState(trx, chain, state);
    },

    async rollback(trx, chain, removed) {
      const affected = new Set(taskHashesOf(removed));
      const unpauses = removed.filter((e) => e.event === "EscrowUnpaused");
      if (unpauses.length > 0) {
        // Every task live at a removed unpause was moved by it.
        const since = Math.min(...unpauses.map((e) => e.blockNumber));
        const moved = await trx
          .selectFrom("escrow_tasks")
          .select("task_hash")
          .where("chain", "=", chain)
          .where((eb) => eb.or([eb("ending", "=", Ending.None), eb("updated_block", ">=", since)]))
          .execute();
        for (const row of moved) affected.add(row.task_hash);
      }
      if (removed.some((e) => STATE_EVENTS.has(e.event))) await rebuildState(trx, chain);
      await rebuildTasks(trx, chain, [...affected]);
    },
  };
}

function taskHashesOf(events: readonly ChainEvent[]): string[] {
  return [...new Set(events.flatMap((e) => (e.taskHash === null ? [] : [e.taskHash])))];
}

async function loadTasks(
  trx: Transaction<Database>,
  chain: string,
  hashes: readonly string[],
  into: Map<string, TaskRow | undefined>,
): Promise<void> {
  for (let i = 0; i < hashes.length; i += CHUNK) {
    const chunk = hashes.slice(i, i + CHUNK);
    const rows = await trx.selectFrom("escrow_tasks").selectAll().where("chain", "=", chain).where("task_hash", "in", chunk).execute();
    for (const hash of chunk) into.set(hash, undefined);
    for (const row of rows) into.set(row.task_hash, normalizeTask(row));
  }
}

/** bigint columns may come back as strings from some drivers; the projection compares numbers. */
function normalizeTask(row: TaskRow): TaskRow {
  return {
    ...row,
    deadline: Number(row.deadline),
    phase_at: row.phase_at === null ? null : Number(row.phase_at),
    created_block: Number(row.created_block),
    updated_block: Number(row.updated_block),
  };
}

async function upsertTasks(trx: Transaction<Database>, rows: readonly TaskRow[]): Promise<void> {
  for (let i = 0; i < rows.length; i += CHUNK) {
    await trx
      .insertInto("escrow_tasks")
      .values(rows.slice(i, i + CHUNK))
      .onConflict((oc) =>
        oc.columns(["chain", "task_hash"]).doUpdateSet((eb) => ({
          worker: eb.ref("excluded.worker"),
          assigned_by: eb.ref("excluded.assigned_by"),
          deadline: eb.ref("excluded.deadline"),
          status: eb.ref("excluded.status"),
          rounds: eb.ref("excluded.rounds"),
          ending: eb.ref("excluded.ending"),
          result_hash: eb.ref("excluded.result_hash"),
          phase_at: eb.ref("excluded.phase_at"),
          last_score: eb.ref("excluded.last_score"),
          payout: eb.ref("excluded.payout"),
          fee: eb.ref("excluded.fee"),
          updated_block: eb.ref("excluded.updated_block"),
        })),
      )
      .execute();
  }
}

async function shiftLiveTasks(trx: Transaction<Database>, chain: string, pausedFor: number): Promise<void> {
  if (pausedFor === 0) return;
  await trx
    .updateTable("escrow_tasks")
    .set((eb) => ({ deadline: eb("deadline", "+", pausedFor), phase_at: eb("phase_at", "+", pausedFor) }))
    .where("chain", "=", chain)
    .where("ending", "=", Ending.None)
    .execute();
}

/** Replays each task's remaining events, with the remaining unpauses in between, and replaces its row. */
async function rebuildTasks(trx: Transaction<Database>, chain: string, hashes: readonly string[]): Promise<void> {
  if (hashes.length === 0) return;
  const unpauses = (await stateEvents(trx, chain)).filter((e) => e.event === "EscrowUnpaused");
  for (let i = 0; i < hashes.length; i += CHUNK) {
    const chunk = hashes.slice(i, i + CHUNK);
    const rows = await trx
      .selectFrom("escrow_events")
      .selectAll()
      .where("chain", "=", chain)
      .where("task_hash", "in", chunk)
      .execute();
    const byTask = new Map<string, ChainEvent[]>(chunk.map((hash) => [hash, []]));
    for (const row of rows) byTask.get(row.task_hash ?? "")?.push(fromEventRow(row));

    const rebuilt: TaskRow[] = [];
    for (const events of byTask.values()) {
      let task: TaskRow | undefined;
      for (const event of [...events, ...unpauses].sort(compareEvents)) {
        task =
          event.event === "EscrowUnpaused"
            ? shiftForPause(task, Number(argsOf(event, "EscrowUnpaused").pausedFor))
            : applyTaskEvent(task, event);
      }
      if (task) rebuilt.push(task);
    }
    await trx.deleteFrom("escrow_tasks").where("chain", "=", chain).where("task_hash", "in", chunk).execute();
    await upsertTasks(trx, rebuilt);
  }
}

/** The chain's escrow-wide events (no task hash) still stored, in chain order. */
async function stateEvents(trx: Transaction<Database>, chain: string): Promise<ChainEvent[]> {
  const rows = await trx
    .selectFrom("escrow_events")
    .selectAll()
    .where("chain", "=", chain)
    .where("task_hash", "is", null)
    .where("event", "in", [...STATE_EVENTS])
    .orderBy("block_number")
    .orderBy("log_index")
    .execute();
  return rows.map(fromEventRow);
}

async function rebuildState(trx: Transaction<Database>, chain: string): Promise<void> {
  let state: EscrowStateRow | undefined;
  for (const event of await stateEvents(trx, chain)) state = applyStateEvent(state, event);
  await writeState(trx, chain, state);
}

async function readState(trx: Transaction<Database>, chain: string): Promise<EscrowStateRow | undefined> {
  const row = await trx
    .selectFrom("escrow_state")
    .select(["paused_at", "total_paused", "fee_bps"])
    .where("chain", "=", chain)
    .executeTakeFirst();
  if (!row) return undefined;
  return { paused_at: row.paused_at === null ? null : Number(row.paused_at), total_paused: Number(row.total_paused), fee_bps: row.fee_bps };
}

async function writeState(trx: Transaction<Database>, chain: string, state: EscrowStateRow | undefined): Promise<void> {
  if (!state) {
    await trx.deleteFrom("escrow_state").where("chain", "=", chain).execute();
    return;
  }
  await trx
    .insertInto("escrow_state")
    .values({ chain, ...state })
    .onConflict((oc) => oc.column("chain").doUpdateSet(state))
    .execute();
}
