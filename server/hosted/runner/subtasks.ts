/**
 * What a hosted agent spends on sub-tasks (`delegate_to_agent`) per task it works, kept in the database
 * (hosted_subtasks), so neither a new round of the task nor a restart of the agent or the server resets it: at most
 * `MAX_SUBTASKS_PER_TASK` sub-tasks, whose rewards add up to at most the task's budget (the owner's `maxRewardRaw`,
 * and a share of what the task pays: `subtaskBudget`), and at most a daily cap per agent over any 24 hours
 * (docs/hosted-agents.md, docs/security.md issue 23 item 1). A model obeys whoever wrote its brief: these bounds hold
 * whatever it asks for.
 */
import type { Db } from "../../db";
import { sameAccount } from "../../db/same-account";

/** The window of the daily cap on an agent's sub-tasks. */
export const SUBTASK_DAY_MS = 24 * 60 * 60_000;

/**
 * What all the sub-tasks of one task may pay: the owner's limit, and at most `shareBps` of the task's own reward;
 * nothing for a task paying under `minParentReward` (an agent with sub-tasks on does not take one, and a task it was
 * given anyway funds none).
 */
export function subtaskBudget(ownerMax: bigint, parentReward: bigint, rules: { shareBps: number; minParentReward: bigint }): bigint {
  if (parentReward < rules.minParentReward) return 0n;
  const share = (parentReward * BigInt(rules.shareBps)) / 10_000n;
  return share < ownerMax ? share : ownerMax;
}

/** Sub-tasks one task may post, over all its rounds and runs. */
export const MAX_SUBTASKS_PER_TASK = 3;

export type SubtaskLedger = ReturnType<typeof createSubtaskLedger>;

export function createSubtaskLedger({ db, now }: { db: Db; now: () => number }) {
  /**
   * Records a sub-task of `amount` for the agent's task when it fits (its id, to name the sub-task once listed), or
   * answers why not (`CODE: message`, the code one of core/errors.ts's SUBTASK_* codes). Counted from the moment it is
   * asked for, posted or not: a sub-task that failed half-way may still have been funded.
   */
  async function reserve(
    agentId: number,
    taskHash: string,
    amount: bigint,
    { budget, dailyCap }: { budget: bigint; dailyCap: bigint },
  ): Promise<{ id: number } | { refused: string }> {
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
      if (rows.length >= MAX_SUBTASKS_PER_TASK) return { refused: `SUBTASK_COUNT_EXCEEDED: at most ${MAX_SUBTASKS_PER_TASK} sub-tasks per task` };
      const spent = rows.reduce((sum, r) => sum + BigInt(r.amount), 0n);
      if (spent + amount > budget)
        return {
          refused: `SUBTASK_BUDGET_EXCEEDED: the sub-tasks of one task may pay at most ${budget} raw units in all (the owner's limit and a share of the task's reward); ${budget > spent ? budget - spent : 0n} are left`,
        };
      const today = await trx
        .selectFrom("hosted_subtasks")
        .select("amount")
        .where("agent_id", "=", agentId)
        .where("created_at", ">", now() - SUBTASK_DAY_MS)
        .execute();
      const spentToday = today.reduce((sum, r) => sum + BigInt(r.amount), 0n);
      if (spentToday + amount > dailyCap)
        return {
          refused: `SUBTASK_DAILY_CAP: the agent's sub-tasks may pay at most ${dailyCap} raw units a day; ${dailyCap > spentToday ? dailyCap - spentToday : 0n} are left today`,
        };
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

  /**
   * Why the sub-task of the agent's task may not be pinned to `target`, or undefined when it may: never the poster of
   * the task being worked, nor an agent of that poster's account (its linked wallets, registered and hosted agents).
   * An open sub-task is refused to them when they accept (server/marketplace eligibility).
   */
  async function targetRefusal(taskHash: string, target: string): Promise<string | undefined> {
    const parent = await db.selectFrom("listings").select("poster").where("task_hash", "=", taskHash).executeTakeFirst();
    if (!parent) return "the task being worked is not listed";
    if (await sameAccount(db, parent.poster, target))
      return "SUBTASK_TO_POSTER_ACCOUNT: a sub-task may not go to the task's poster nor to an agent of the poster's account";
    return undefined;
  }

  return { reserve, listed, targetRefusal };
}
