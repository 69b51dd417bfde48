/**
 * `market tasks` (the wallet's posted tasks, or with `--assigned` the tasks it works on) and `market status <taskHash>`
 * (one task): what is where, with status names, amounts in token units beside raw, and dates.
 */
import { MarketClient, type TaskView } from "../../sdk/src/client";
import { clientError } from "../../sdk/src/errors";
import { formatDecimalAmount } from "@market/core/money";
import { TASK_STATUSES, type TaskStatus } from "@market/core/status";
import { MAX_SUBMISSIONS } from "@market/core/limits";
import type { AssignedTaskView } from "@market/core/api";
import { clientOptions, type CliConfig } from "./config";
import { requireTaskHash } from "./task-hash";
import type { Terminal } from "./terminal";

export interface TasksFlags {
  assigned?: boolean;
  status?: string[];
  limit?: number;
}

/** The most tasks `market tasks` reads by default (the posted list is read page by page). */
export const DEFAULT_TASKS_LIMIT = 100;
const PAGE = 100;

/** `--status` values: names the API shows (core/status), each checked; a comma-separated list is split. */
export function statusFilter(values: readonly string[] | undefined): Set<TaskStatus> | undefined {
  if (!values || values.length === 0) return undefined;
  const wanted = new Set<TaskStatus>();
  for (const value of values.flatMap((v) => v.split(","))) {
    const name = value.trim().toLowerCase();
    if (!(TASK_STATUSES as readonly string[]).includes(name)) {
      throw clientError("VALIDATION_FAILED", `--status ${value} is not a task status (${TASK_STATUSES.join(", ")})`);
    }
    wanted.add(name as TaskStatus);
  }
  return wanted;
}

export async function tasksCommand(flags: TasksFlags, config: CliConfig, terminal: Terminal): Promise<number> {
  const wanted = statusFilter(flags.status);
  const limit = flags.limit ?? DEFAULT_TASKS_LIMIT;
  const client = new MarketClient(clientOptions(config, { signs: false }));
  const keep = (t: TaskView) => !wanted || wanted.has(t.state.status);
  let tasks: Array<TaskView | AssignedTaskView>;
  let more = false;
  if (flags.assigned) {
    const all = (await client.assignedTasks()).tasks.filter(keep);
    tasks = all.slice(0, limit);
    more = all.length > limit;
  } else {
    tasks = [];
    let cursor: string | undefined;
    for (;;) {
      const page = await client.postedTasks({ limit: PAGE, ...(cursor ? { cursor } : {}) });
      tasks.push(...page.tasks.filter(keep));
      if (tasks.length > limit) {
        more = true;
        tasks = tasks.slice(0, limit);
        break;
      }
      if (!page.nextCursor) break;
      cursor = page.nextCursor;
    }
  }
  terminal.data({ role: flags.assigned ? "worker" : "poster", tasks, more });
  const what = flags.assigned ? "tasks you work on (not ended)" : "tasks you posted, newest first";
  terminal.say(
    `${tasks.length} ${what}${wanted ? ` with status ${[...wanted].join(" or ")}` : ""}${more ? ` (the first ${limit}; --limit for more)` : ""}`,
  );
  for (const task of tasks) terminal.say(taskLine(task));
  return 0;
}

/** One task on one line: hash, status, reward, rounds, deadline, chain. */
function taskLine(task: TaskView | AssignedTaskView): string {
  const { meta, state } = task;
  const left = "roundsLeft" in task ? `, ${task.roundsLeft} left` : "";
  return `${meta.taskHash}  ${state.status.padEnd(21)}  ${reward(meta)}  rounds ${state.rounds}/${MAX_SUBMISSIONS}${left}  deadline ${date(meta.deadline)}  on ${meta.chain}`;
}

export async function statusCommand(taskHash: string, config: CliConfig, terminal: Terminal, flags: { wait?: number } = {}): Promise<number> {
  requireTaskHash(taskHash);
  // A key shows the delivered output and the verdict to the poster, the worker and the verifier; without, the public view.
  const client = new MarketClient(
    config.apiKey ? clientOptions(config, { signs: false }) : { apiKey: "", baseUrl: config.apiUrl, escrows: config.escrows },
  );
  if (flags.wait) {
    // Woken by the task's events (the stream needs a key; without one, read every 2 s).
    const waited = await client.waitForResult({
      taskHash,
      waitMs: flags.wait * 1000,
      pollMs: 2_000,
      onProgress: ({ status, elapsedMs }) => terminal.say(`${(elapsedMs / 1000).toFixed(1)} s: ${status}`),
    });
    if (!waited.done) terminal.say(`still ${waited.status} after ${flags.wait} s`);
  }
  const task = await client.getTask(taskHash);
  terminal.data(task);
  const { meta, state } = task;
  terminal.say(`task: ${meta.taskHash}`);
  terminal.say(`status: ${state.status}${state.ending ? ` (ended: ${state.ending})` : ""}`);
  terminal.say(`chain: ${meta.chain}; privacy: ${meta.privacy}; verification: ${meta.verificationMode}`);
  terminal.say(`reward: ${reward(meta)}`);
  terminal.say(`poster: ${meta.poster}`);
  terminal.say(`worker: ${state.worker ?? "none"}`);
  if (meta.verifierAddress) terminal.say(`verifier: ${meta.verifierAddress}`);
  if (meta.targetExecutor) terminal.say(`pinned to: ${meta.targetExecutor}`);
  terminal.say(`rounds used: ${state.rounds} of ${MAX_SUBMISSIONS}`);
  terminal.say(`deadline: ${date(meta.deadline)}`);
  terminal.say(`listed: ${new Date(meta.listedAt).toISOString()}`);
  const result = state.resultData;
  const verdict = result?.verificationResult;
  if (verdict) {
    const score = verdict.score === null ? "" : `, score ${verdict.score}`;
    terminal.say(`verdict: ${verdict.passed ? "passed" : "failed"}${score}${verdict.reasons.length > 0 ? ` (${verdict.reasons.join("; ")})` : ""}`);
  }
  if (result?.output !== undefined) terminal.say(`result: delivered (market review ${meta.taskHash} shows it)`);
  else if (result?.resultHash) terminal.say(`result hash: ${result.resultHash}`);
  if (state.paid)
    terminal.say(`paid: ${formatDecimalAmount(BigInt(state.paid.worker), meta.reward.unit.decimals)} ${meta.reward.unit.symbol} to the worker`);
  // The poster's own view: what happened to the task (taken, work failed and why, released...).
  if (state.history && state.history.length > 0) {
    terminal.say("history:");
    for (const h of state.history) terminal.say(`  ${date(h.at)}  ${h.event}${h.worker ? ` by ${h.worker}` : ""}${h.reason ? `: ${h.reason}` : ""}`);
  }
  return 0;
}

/** `2.5 USDC (2500000 raw)`. */
export function reward(meta: TaskView["meta"]): string {
  const raw = BigInt(meta.reward.amount);
  return `${formatDecimalAmount(raw, meta.reward.unit.decimals)} ${meta.reward.unit.symbol} (${raw} raw)`;
}

/** Unix milliseconds as an ISO date (UTC). */
export function date(ms: number): string {
  return new Date(ms).toISOString().replace(".000Z", "Z");
}
