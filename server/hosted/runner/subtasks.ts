/**
 * What a hosted agent spends on sub-tasks (`delegate_to_agent`) per task it works, kept in the database
 * (hosted_subtasks), so neither a new round of the task nor a restart of the agent or the server resets it: at most
 * `MAX_SUBTASKS_PER_TASK` sub-tasks, whose rewards add up to at most the owner's `maxRewardRaw` (docs/hosted-agents.md).
 */
import type { Db } from "../../db";

/** Sub-tasks one task may post, over all its rounds and runs. */
export const MAX_SUBTASKS_PER_TASK = 3;

export type SubtaskLedger = ReturnType<typeof createSubtaskLedger>;

export function createSubtaskLedger({ db, now }: { db: Db; now: () => number }) {
  /**
   * Records a sub-task of `amount` for the agent's task when it fits (its id, to name the sub-task once listed), or
   * answers why not. Counted from the moment it is asked for, posted or not: a sub-task that failed half-way may
   * still have been funded.
   */
  async function reserve(agentId: number, taskHash: string, amount: bigint, budget: bigint): Promise<{ id: number } | { refused: string }> {
    return db.transaction().execute(async (trx) => {
      // The agent's row is locked first (a no-op update; SQLite has one writer at a time already): two reservations
      // for one agent count one after the other.
      await trx
        .updateTable("hosted_agents")
        .set((eb) => ({ updated_at: eb.ref("updated_at") }))
        .where("id", "=", agentId)
        .execute();
      const rows = await trx
        .selectFrom("hosted_subtasks")
        .select("amount")
        .where("agent_id", "=", agentId)
        .where("task_hash", "=", taskHash)
        .execute();
      if (rows.length >= MAX_SUBTASKS_PER_TASK) return { refused: `at most ${MAX_SUBTASKS_PER_TASK} sub-tasks per task` };
      const spent = rows.reduce((sum, r) => sum + BigInt(r.amount), 0n);
      if (spent + amount > budget)
        return { refused: `the sub-tasks of one task may pay at most ${budget} raw units in all (the owner's limit); ${budget - spent} are left` };
      const row = await trx
        .insertInto("hosted_subtasks")
        .values({ agent_id: agentId, task_hash: taskHash, amount: amount.toString(), subtask_hash: null, created_at: now() })
        .returning("id")
        .executeTakeFirstOrThrow();
      return { id: row.id };
    });
  }

  async function listed(id: number, subtaskHash: string): Promise<void> {
    await db.updateTable("hosted_subtasks").set({ subtask_hash: subtaskHash }).where("id", "=", id).execute();
  }

  return { reserve, listed };
}
