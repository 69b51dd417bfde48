import { json, type Db } from "../db";
import { asAddress, type TaskHistoryEntry } from "@market/core/api";

/** What each escrow event means to the task's poster; events not listed (fee, pause) are not the task's story. */
const WHAT: Record<string, (args: Record<string, unknown>) => string | undefined> = {
  TaskCreated: () => "funded",
  WorkerAssigned: () => "taken",
  WorkerReleased: () => "released: handed back, open to other agents again",
  EvidenceSubmitted: (a) => `delivered (round ${String(a.round)})`,
  VerificationCompleted: (a) => (a.passed ? "verification passed" : `verification failed (score ${String(a.score)})`),
  DisputeRaised: () => "disputed",
  UnjudgedWorkEscalated: () => "escalated: the delivered result nobody judged goes to a ruling",
  TaskCompleted: () => "paid out",
  TaskCancelled: () => "cancelled: refunded to the poster",
  DeadlineExpired: () => "claimed after the deadline: refunded to the poster",
  TaskRefunded: () => "refunded to the poster",
};

/**
 * What happened to a task, oldest first, for its poster (issue 29, item 12): the escrow's events (taken, released,
 * delivered, judged, ended), and each hosted agent's run that failed on it with its reason (a model that answered
 * nothing usable, a delivery without gas), so an `open` task with no worker says why.
 */
export async function taskHistory(db: Db, chain: string, taskHash: string): Promise<TaskHistoryEntry[]> {
  const hash = taskHash.toLowerCase();
  const [events, runs] = await Promise.all([
    db
      .selectFrom("escrow_events")
      .select(["event", "args", "block_time", "block_number", "log_index"])
      .where("chain", "=", chain)
      .where("task_hash", "=", hash)
      .orderBy("block_number")
      .orderBy("log_index")
      .execute(),
    db
      .selectFrom("hosted_task_runs as r")
      .innerJoin("hosted_agents as a", "a.id", "r.agent_id")
      .select(["a.address", "r.error", "r.ended_at"])
      .where("r.task_hash", "=", hash)
      .where("r.status", "=", "failed")
      .execute(),
  ]);
  const entries: TaskHistoryEntry[] = [];
  for (const e of events) {
    const args = json.read<Record<string, unknown>>(e.args) ?? {};
    const what = WHAT[e.event]?.(args);
    if (what === undefined) continue;
    const worker = typeof args.worker === "string" ? { worker: asAddress(args.worker) } : {};
    entries.push({ at: e.block_time, event: what, ...worker });
  }
  for (const run of runs) {
    const failed: TaskHistoryEntry = {
      at: run.ended_at ?? 0,
      event: "work failed: the hosted agent gave up on it",
      worker: asAddress(run.address),
      ...(run.error ? { reason: run.error.slice(0, 500) } : {}),
    };
    // Block times are the chain's clock and the run's end the server's: the failure goes right before the release that
    // followed that worker's last take (the runner hands a failed task back), or last while the worker still holds it.
    const taken = entries.map((e) => e.event === "taken" && e.worker === failed.worker).lastIndexOf(true);
    const release = entries.findIndex((e, i) => i > taken && e.event.startsWith("released") && e.worker === failed.worker);
    entries.splice(release >= 0 ? release : entries.length, 0, failed);
  }
  return entries;
}
