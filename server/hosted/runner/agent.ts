/**
 * One running hosted agent: the SDK's WorkerRuntime (browse, accept, decrypt, deliver, retry schedule) over loopback
 * HTTP with the agent's own token, signing with the custodied key held in memory only while it runs; `executeTask`
 * is the model's tool-call loop.
 */
import type { ChatCompletionMessageParam } from "openai/resources/chat/completions";
import { MarketClient, WorkerRuntime, type PinnedEscrows, type RpcUrls, type TaskContext } from "../../../sdk/src";
import type { AgentTokens } from "../../auth";
import type { Db } from "../../db";
import type { HostedConfig } from "../../config";
import type { RunningConfig, OpenedSecrets } from "../store";
import type { GasSponsor } from "../sponsor";
import { createWindows } from "../../http/rate-limit";
import { redactUrls } from "@market/core/text";
import { createRedactor, redactFields, runWithinBudget, type Semaphore } from "./bounds";
import { modelClient, runToolLoop, ModelFailure } from "./model";
import { builtinToolSpecs, builtinTools } from "./tools";
import { toolset } from "./tool-types";
import { createSubtaskLedger, subtaskBudget } from "./subtasks";
import type { Sandbox } from "../../sandbox";

export interface RunnerLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface AgentRunDeps {
  db: Db;
  /** Issues the run's own token (`ha_...`) and ends it. */
  tokens: Pick<AgentTokens, "issue" | "revoke">;
  config: HostedConfig;
  sponsor: GasSponsor;
  /** Tasks across every hosted agent of the server. */
  serverSlots: Semaphore;
  /** Model calls per agent per minute. */
  modelCalls: ReturnType<typeof createWindows>;
  logger: RunnerLogger;
  now: () => number;
  apiUrl: string;
  rpcUrls: RpcUrls;
  escrows: PinnedEscrows;
  /** Runs JS Eval and Sandbox tools (issue 26). */
  sandbox: Sandbox;
}

export interface AgentRun {
  agentId: number;
  stop(): Promise<void>;
}

const SYSTEM_PREAMBLE =
  "You are a hosted agent on a task marketplace. You are given one task brief; answer it completely in your final " +
  "message, which is delivered as the result and checked automatically. Use your tools when they help.";

/**
 * The least reward the agent takes (issue 23): its owner's `minReward` (the server's default when none was set), and
 * with sub-tasks on at least `subtaskMinParentRewardRaw`, so a brief paying next to nothing cannot make it fund
 * sub-tasks.
 */
export function effectiveMinReward(running: Pick<RunningConfig, "minReward" | "subtaskMaxReward">, config: HostedConfig): bigint {
  const own = running.minReward === null ? config.defaultMinRewardRaw : BigInt(running.minReward);
  if (running.subtaskMaxReward === null) return own;
  return own > config.subtaskMinParentRewardRaw ? own : config.subtaskMinParentRewardRaw;
}

/** Starts the agent: a fresh token, registration (its key and chains), then browsing. */
export async function startAgentRun(
  agentId: number,
  address: string,
  running: RunningConfig,
  secrets: OpenedSecrets,
  deps: AgentRunDeps,
): Promise<AgentRun> {
  const { db, config, now } = deps;
  const token = await deps.tokens.issue(agentId);
  const redact = createRedactor([...secrets.all(), token]);
  // Each value is redacted before the logger serialises it (a redaction of the JSON text would miss a secret with a
  // quote or a backslash, which JSON writes escaped).
  const log = (level: "info" | "warn", fields: Record<string, unknown>, msg: string) =>
    deps.logger[level](
      redactFields({ hostedAgent: agentId, ...fields }, (text) => redact(redactUrls(text))),
      redact(msg),
    );

  const failed = new Set(
    (await db.selectFrom("hosted_task_runs").select("task_hash").where("agent_id", "=", agentId).where("status", "=", "failed").execute()).map(
      (r) => r.task_hash,
    ),
  );
  const stopping = new AbortController();
  const background = new Set<Promise<void>>();
  // Sub-tasks per task (count and total) are kept in the database, across rounds, runs and restarts.
  const ledger = createSubtaskLedger({ db, now });
  const model = modelClient(
    { ...running.model, ...(secrets.modelKey ? { apiKey: secrets.modelKey } : {}) },
    { timeoutMs: config.modelTimeoutMs, allowPrivateNetworks: config.allowPrivateNetworks },
  );
  const subtaskMaxReward = running.subtaskMaxReward === null ? null : BigInt(running.subtaskMaxReward);
  const agentTools = toolset(running.tools);
  const toolSpecs = [...agentTools.specs, ...builtinToolSpecs(subtaskMaxReward !== null)];

  const beforeSend = async (tx: { chain: string; from: string; to: string; data: string }) => {
    try {
      const outcome = await deps.sponsor.topUp(tx);
      if (outcome.sponsored) log("info", { txHash: outcome.txHash }, "gas sponsored");
    } catch (error) {
      log("warn", { error: (error as Error).message }, "gas sponsor check failed");
    }
  };

  const client = new MarketClient({
    apiKey: token,
    baseUrl: deps.apiUrl,
    executor: { privateKey: secrets.walletKey, rpcUrls: deps.rpcUrls, beforeSend },
    escrows: deps.escrows,
    timeoutMs: 60_000,
  });

  async function recordRun(taskHash: string, fields: { status: "running" | "delivered" | "failed"; steps?: number; error?: string | null }) {
    const at = now();
    const ended = fields.status === "running" ? null : at;
    await db
      .insertInto("hosted_task_runs")
      .values({
        agent_id: agentId,
        task_hash: taskHash,
        status: fields.status,
        steps: fields.steps ?? 0,
        error: fields.error ?? null,
        started_at: at,
        ended_at: ended,
      })
      .onConflict((oc) =>
        oc.columns(["agent_id", "task_hash"]).doUpdateSet({
          status: fields.status,
          ...(fields.steps === undefined ? {} : { steps: fields.steps }),
          error: fields.error ?? null,
          ended_at: ended,
        }),
      )
      .execute();
  }

  async function executeTask(context: TaskContext): Promise<{ output: string }> {
    const release = await deps.serverSlots.acquire(stopping.signal);
    let steps = 0;
    try {
      await recordRun(context.taskId, { status: "running" });
      const deadline = Math.min(now() + config.taskBudgetMs, context.deadline - 30_000);
      const ctx = {
        agentId,
        sandbox: deps.sandbox,
        taskHash: context.taskId,
        client,
        secret: (name: string) => secrets.tools.get(name),
        redact,
        allowPrivateNetworks: config.allowPrivateNetworks,
        subtaskMaxReward,
        deadline,
        now,
        background: (work: (signal: AbortSignal) => Promise<void>) => {
          const running = work(stopping.signal).catch(() => undefined);
          background.add(running);
          void running.finally(() => background.delete(running));
        },
        subtasks: {
          reserve: (amount: bigint) =>
            ledger.reserve(agentId, context.taskId, amount, {
              budget: subtaskBudget(subtaskMaxReward ?? 0n, context.reward.amountRaw, {
                shareBps: config.subtaskShareBps,
                minParentReward: config.subtaskMinParentRewardRaw,
              }),
              dailyCap: config.subtaskDailyCapRaw,
            }),
          listed: (id: number, subtaskHash: string) => ledger.listed(id, subtaskHash),
          targetRefusal: (target: string) => ledger.targetRefusal(context.taskId, target),
        },
      };
      const builtins = builtinTools(ctx);
      const previous = context.previousAttempt
        ? `\n\nYour previous answer failed verification (${context.previousAttempt.reasons.join("; ") || "no reasons given"}):\n${context.previousAttempt.output}`
        : "";
      const messages: ChatCompletionMessageParam[] = [
        { role: "system", content: `${SYSTEM_PREAMBLE}\n\n${running.instructions}` },
        {
          role: "user",
          content: `Task ${context.taskId} (reward ${context.reward.amount} raw ${context.reward.symbol}, round ${context.round}).\n\n${context.instructions}${previous}`,
        },
      ];
      // Bounded whatever happens inside (issue 23 item 4): past its budget the run ends and its slot is freed.
      const output = await runWithinBudget(
        deadline,
        AbortSignal.any([stopping.signal, context.signal]),
        (signal) =>
          runToolLoop({
            client: model,
            model: running.model.name,
            messages,
            tools: toolSpecs,
            maxSteps: config.maxSteps,
            deadline,
            callTimeoutMs: config.modelTimeoutMs,
            signal,
            beforeCall: () => {
              if (deps.modelCalls.hit(`agent:${agentId}`, config.modelCallsPerMinute, now()) !== undefined) {
                throw new ModelFailure(`the agent's quota of ${config.modelCallsPerMinute} model calls per minute is used up`);
              }
            },
            onStep: (step) => (steps = step),
            async callTool(name, args, signal) {
              const own = agentTools.calls.get(name);
              if (own) return own(args, ctx, signal);
              const answer = await builtins.call(name, args, signal);
              return answer ?? `Error: no tool named ${name}`;
            },
          }),
        { now },
      );
      await recordRun(context.taskId, { status: "running", steps });
      return { output: redact(output) };
    } catch (error) {
      if (!stopping.signal.aborted) {
        const message = redact(redactUrls((error as Error).message ?? String(error)));
        failed.add(context.taskId);
        await recordRun(context.taskId, { status: "failed", steps, error: message }).catch(() => undefined);
        log("warn", { task: context.taskId, steps, error: message }, "task failed");
      }
      throw error;
    } finally {
      release();
    }
  }

  const runtime = new WorkerRuntime({
    apiKey: token,
    baseUrl: deps.apiUrl,
    privateKey: secrets.walletKey,
    rpcUrls: deps.rpcUrls,
    escrows: deps.escrows,
    displayName: running.displayName,
    capabilities: running.capabilities,
    minReward: effectiveMinReward(running, config).toString(),
    maxConcurrentTasks: config.agentConcurrency,
    browseIntervalMs: config.browseIntervalMs,
    // Hosted runners browse on their interval: a stream per agent would count against its owner's stream quota.
    followEvents: false,
    resubmitRentals: false,
    // The runner records a failed run and releases the task itself (below), and a model failure is not tried again.
    executeAttempts: 1,
    releaseFailed: false,
    skipTask: (task) => failed.has(task.state.taskId),
    hasCapacity: () => deps.serverSlots.available() > 0,
    beforeSend,
    // No task is taken that the agent could not deliver: its wallet pays the evidence, or the sponsor does.
    gasSponsored: (chain) => deps.sponsor.coversFirstEvidence(chain, address),
    executeTask,
  });
  /** What went wrong last, where the owner looks (`lastError` of GET /api/v1/agents/{id}). */
  const setLastError = (message: string) =>
    db
      .updateTable("hosted_agents")
      .set({ last_error: message.slice(0, 1000), updated_at: now() })
      .where("id", "=", agentId)
      .execute();
  /** Tasks assigned in this run and not delivered yet. */
  const inHand = new Set<string>();
  runtime.on((event) => {
    switch (event.type) {
      case "task_assigned":
        inHand.add(event.taskId);
        log("info", { task: event.taskId }, "task assigned");
        break;
      case "task_finalized":
        inHand.delete(event.taskId);
        log("info", { task: event.taskId, status: event.finalize.status }, "task delivered");
        void recordRun(event.taskId, { status: "delivered" }).catch(() => undefined);
        break;
      case "task_failed":
        if (!inHand.has(event.taskId)) log("info", { task: event.taskId, code: event.error.code }, "task not taken");
        else if (inHand.delete(event.taskId) && !failed.has(event.taskId) && !stopping.signal.aborted) {
          // Answered, then the delivery could not go through (no gas, a refused transaction): the run fails with its
          // reason where the owner sees it, and the task is handed back below.
          const message = redact(`${event.error.code}: ${event.error.message}`);
          failed.add(event.taskId);
          void recordRun(event.taskId, { status: "failed", error: message }).catch(() => undefined);
          void setLastError(`task ${event.taskId}: ${message}`).catch(() => undefined);
          log("warn", { task: event.taskId, error: message }, "task failed");
        }
        // A task this agent failed goes back to the market (best effort: the release costs the agent's gas).
        if (failed.has(event.taskId) && !stopping.signal.aborted) {
          void client.settle({ taskHash: event.taskId, action: "release" }).then(
            () => log("info", { task: event.taskId }, "failed task released"),
            (error: unknown) => log("warn", { task: event.taskId, error: (error as Error).message }, "releasing the failed task failed"),
          );
        }
        break;
      case "error": {
        const code = (event.error as { code?: string }).code;
        log("warn", { ...(code ? { code } : {}), error: event.error.message }, "runtime error");
        // What keeps the agent from taking work is the owner's to fix: shown as its lastError.
        if (code === "INSUFFICIENT_GAS" || code === "KEY_SHARED") void setLastError(`${code}: ${event.error.message}`).catch(() => undefined);
        break;
      }
      default:
        break;
    }
  });

  /**
   * Escalated work nobody judged is the agent's to collect 14 days after the escalation: the API refuses
   * (DEADLINE_NOT_REACHED) until then, and the sponsor may pay the gas of each release once. A failed task still held
   * (its release found no gas) is released here too.
   */
  let releasing = false;
  async function releaseEscalated() {
    if (releasing || stopping.signal.aborted) return;
    releasing = true;
    try {
      const { tasks } = await client.assignedTasks();
      // A failed task whose release could not be sent (no gas then) is handed back once it can be.
      for (const task of tasks.filter((t) => t.state.status === "assigned" && failed.has(t.state.taskId))) {
        try {
          await client.settle({ taskHash: task.state.taskId, action: "release" });
          log("info", { task: task.state.taskId }, "failed task released");
        } catch (error) {
          log("warn", { task: task.state.taskId, error: (error as Error).message }, "releasing the failed task failed");
        }
      }
      for (const task of tasks.filter((t) => t.state.status === "escalated")) {
        try {
          await client.settle({ taskHash: task.state.taskId, action: "release-unjudged" });
          log("info", { task: task.state.taskId }, "unjudged work released");
        } catch {
          // Not yet (the 14 days run), or ruled meanwhile: looked at again next time.
        }
      }
    } catch (error) {
      log("warn", { error: (error as Error).message }, "looking for escalated work failed");
    } finally {
      releasing = false;
    }
  }
  const releaseTimer = setInterval(() => void releaseEscalated(), config.releaseCheckMs);
  releaseTimer.unref();

  try {
    await runtime.start();
  } catch (error) {
    clearInterval(releaseTimer);
    await deps.tokens.revoke(agentId);
    throw new Error(redact(`starting failed: ${(error as Error).message}`), { cause: error });
  }
  log("info", { address }, "hosted agent started");

  return {
    agentId,
    async stop() {
      stopping.abort(new Error("the agent stopped"));
      clearInterval(releaseTimer);
      await runtime.stop();
      await Promise.allSettled([...background]);
      await deps.tokens.revoke(agentId);
      log("info", {}, "hosted agent stopped");
    },
  };
}
