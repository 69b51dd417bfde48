import type { Selectable, Transaction } from "kysely";
import {
  applyStateEvent,
  applyTaskEvent,
  Ending,
  ESCROW_STATE_EVENTS,
  shiftForPause,
  snapshotOf,
  toEnding,
  toEscrowStatus,
  type EscrowState,
  type ProjectedTask,
  type TaskSnapshot,
} from "@market/core/escrow";
import type { Database, EscrowStateTable, EscrowTasksTable } from "../db/schema";
import { compareEvents, fromEventRow, type ChainEvent } from "./events";
import type { Projection } from "./projection";
import { everyColumn, rowStatement } from "./row-statements";

/** One row of escrow_tasks. */
export type TaskRow = Selectable<EscrowTasksTable>;
/** One row of escrow_state without its key. */
export type EscrowStateRow = Omit<Selectable<EscrowStateTable>, "chain">;

const STATE_EVENTS: ReadonlySet<string> = new Set(ESCROW_STATE_EVENTS);
/** Rows (20 columns) or keys per statement: under SQLite's 32,766 and PostgreSQL's 65,535 bound parameters. */
const CHUNK = 1_000;

/** A row as the fold reads it (core/escrow `ProjectedTask`); bigint columns may come back as strings from some drivers. */
export function projectedTaskOf(row: TaskRow): ProjectedTask {
  return {
    chain: row.chain,
    taskHash: row.task_hash,
    poster: row.poster,
    token: row.token,
    amount: BigInt(row.amount),
    verifier: row.verifier,
    worker: row.worker,
    assignedBy: row.assigned_by,
    deadline: Number(row.deadline),
    status: toEscrowStatus(row.status),
    rounds: row.rounds,
    ending: toEnding(row.ending),
    resultHash: row.result_hash,
    phaseAt: row.phase_at === null ? null : Number(row.phase_at),
    lastScore: row.last_score,
    payout: row.payout === null ? null : BigInt(row.payout),
    fee: row.fee === null ? null : BigInt(row.fee),
    createdBlock: Number(row.created_block),
    createdTx: row.created_tx,
    updatedBlock: Number(row.updated_block),
  };
}

export function taskRowOf(task: ProjectedTask): TaskRow {
  return {
    chain: task.chain,
    task_hash: task.taskHash,
    poster: task.poster,
    token: task.token,
    amount: task.amount.toString(),
    verifier: task.verifier,
    worker: task.worker,
    assigned_by: task.assignedBy,
    deadline: task.deadline,
    status: task.status,
    rounds: task.rounds,
    ending: task.ending,
    result_hash: task.resultHash,
    phase_at: task.phaseAt,
    last_score: task.lastScore,
    payout: task.payout === null ? null : task.payout.toString(),
    fee: task.fee === null ? null : task.fee.toString(),
    created_block: task.createdBlock,
    created_tx: task.createdTx,
    updated_block: task.updatedBlock,
  };
}

/** What the escrow's preconditions (core/escrow) read of an indexed task. */
export function taskSnapshotOf(row: TaskRow): TaskSnapshot {
  return snapshotOf(projectedTaskOf(row));
}

function stateOf(row: EscrowStateRow): EscrowState {
  return { pausedAt: row.paused_at === null ? null : Number(row.paused_at), totalPaused: Number(row.total_paused), feeBps: row.fee_bps };
}

function stateRowOf(state: EscrowState): EscrowStateRow {
  return { paused_at: state.pausedAt, total_paused: state.totalPaused, fee_bps: state.feeBps };
}

/**
 * escrow_tasks and escrow_state. Applying works in memory per range (one read of the touched tasks, one upsert
 * back); an unpause flushes and moves every live task of the chain in one UPDATE. Rolling back rebuilds only the
 * affected tasks from their remaining events and the remaining pause history.
 */
export function createTaskProjection(): Projection {
  return {
    name: "escrow-tasks",

    prepare(db) {
      upsertTaskRows.prepare(db);
    },

    async apply(trx, chain, events) {
      const tasks = new Map<string, ProjectedTask | undefined>();
      const dirty = new Set<string>();
      let state: EscrowState | undefined;
      let stateLoaded = false;
      let stateDirty = false;

      // In task-hash order: the table's indexes on the hash (random keys) are then written leaf after leaf, not a
      // leaf at random per row (half the statements' time on a catch-up).
      const flush = async () => {
        await upsertTasks(
          trx,
          [...dirty]
            .sort()
            .flatMap((hash) => tasks.get(hash) ?? [])
            .map(taskRowOf),
        );
        dirty.clear();
      };

      await loadTasks(trx, chain, events, tasks);
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
            await shiftLiveTasks(trx, chain, Number(event.args.pausedFor));
            tasks.clear();
            await loadTasks(trx, chain, events.slice(i + 1), tasks);
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

/**
 * Reads the stored tasks the events touch into `into`. A task the events create first is not read: the escrow funds a
 * hash once, and TaskCreated replaces whatever came before it (a catch-up is mostly creations).
 */
async function loadTasks(
  trx: Transaction<Database>,
  chain: string,
  events: readonly ChainEvent[],
  into: Map<string, ProjectedTask | undefined>,
): Promise<void> {
  const created = new Set<string>();
  const read = new Set<string>();
  for (const event of events) {
    if (event.taskHash === null || created.has(event.taskHash) || read.has(event.taskHash)) continue;
    (event.event === "TaskCreated" ? created : read).add(event.taskHash);
  }
  for (const hash of created) into.set(hash, undefined);
  const hashes = [...read];
  for (let i = 0; i < hashes.length; i += CHUNK) {
    const chunk = hashes.slice(i, i + CHUNK);
    const rows = await trx.selectFrom("escrow_tasks").selectAll().where("chain", "=", chain).where("task_hash", "in", chunk).execute();
    for (const hash of chunk) into.set(hash, undefined);
    for (const row of rows) into.set(row.task_hash, projectedTaskOf(row));
  }
}

/** Inserts new tasks and replaces the changing columns of known ones. */
const upsertTaskRows = rowStatement<TaskRow>(
  everyColumn<TaskRow>()([
    "chain",
    "task_hash",
    "poster",
    "token",
    "amount",
    "verifier",
    "worker",
    "assigned_by",
    "deadline",
    "status",
    "rounds",
    "ending",
    "result_hash",
    "phase_at",
    "last_score",
    "payout",
    "fee",
    "created_block",
    "created_tx",
    "updated_block",
  ]),
  (db, rows) =>
    db
      .insertInto("escrow_tasks")
      .values(rows)
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
      ),
);

async function upsertTasks(trx: Transaction<Database>, rows: readonly TaskRow[]): Promise<void> {
  if (rows.length > 0) await upsertTaskRows(trx, rows);
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
    const rows = await trx.selectFrom("escrow_events").selectAll().where("chain", "=", chain).where("task_hash", "in", chunk).execute();
    const byTask = new Map<string, ChainEvent[]>(chunk.map((hash) => [hash, []]));
    for (const row of rows) byTask.get(row.task_hash ?? "")?.push(fromEventRow(row));

    const rebuilt: TaskRow[] = [];
    for (const events of byTask.values()) {
      let task: ProjectedTask | undefined;
      for (const event of [...events, ...unpauses].sort(compareEvents)) {
        task = event.event === "EscrowUnpaused" ? shiftForPause(task, Number(event.args.pausedFor)) : applyTaskEvent(task, event);
      }
      if (task) rebuilt.push(taskRowOf(task));
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
  let state: EscrowState | undefined;
  for (const event of await stateEvents(trx, chain)) state = applyStateEvent(state, event);
  await writeState(trx, chain, state);
}

async function readState(trx: Transaction<Database>, chain: string): Promise<EscrowState | undefined> {
  const row = await trx.selectFrom("escrow_state").select(["paused_at", "total_paused", "fee_bps"]).where("chain", "=", chain).executeTakeFirst();
  return row ? stateOf(row) : undefined;
}

async function writeState(trx: Transaction<Database>, chain: string, state: EscrowState | undefined): Promise<void> {
  if (!state) {
    await trx.deleteFrom("escrow_state").where("chain", "=", chain).execute();
    return;
  }
  const row = stateRowOf(state);
  await trx
    .insertInto("escrow_state")
    .values({ chain, ...row })
    .onConflict((oc) => oc.column("chain").doUpdateSet(row))
    .execute();
}
