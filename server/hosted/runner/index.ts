import type { Db } from "../../db";
import type { HostedConfig } from "../../config";
import type { PinnedEscrows, RpcUrls } from "../../../sdk/src";
import { json } from "../../db";
import type { HostedStore, RunningConfig } from "../store";
import type { GasSponsor } from "../sponsor";
import { sha256Hex, type AgentTokens } from "../../auth";
import { createWindows } from "../../http/rate-limit";
import { createFairSemaphore, type Semaphore } from "./bounds";
import { startAgentRun, type AgentRun, type RunnerLogger } from "./agent";
import type { Sandbox } from "../../sandbox";

export interface RunnerEndpoints {
  /** The API on loopback, which runners call as their agents. */
  apiUrl: string;
  rpcUrls: RpcUrls;
  escrows: PinnedEscrows;
}

export type HostedRunners = ReturnType<typeof createHostedRunners>;

/**
 * The unit the server's task slots are shared between (issue 23 item 4): one that costs something. An agent whose
 * deploy paid the fee is a unit of its own; an owner's agents that paid nothing (free deploys) are one unit together,
 * so sign-ins and free agents add no share beyond one per account.
 */
export async function fairnessUnit(db: Db, agentId: number, accountId: number): Promise<string> {
  const paid = await db.selectFrom("deploy_fee_credits").select("agent_id").where("agent_id", "=", agentId).executeTakeFirst();
  return paid ? `agent:${agentId}` : `owner:${accountId}`;
}

/**
 * Runs the hosted agents whose state is `running`, in this process: each a WorkerRuntime over loopback HTTP. Until
 * `attach` names the API's address nothing runs (state changes are only recorded); `attach` starts every running
 * agent, so running agents come back after a restart. With several API processes only the one holding the runners'
 * lease attaches, and `reconcile` follows the states the others record. Tasks are bounded per agent and across the
 * server.
 */
export function createHostedRunners(deps: {
  db: Db;
  store: HostedStore;
  tokens: Pick<AgentTokens, "issue" | "revoke">;
  config: HostedConfig;
  sponsor: GasSponsor;
  logger: RunnerLogger;
  now: () => number;
  sandbox: Sandbox;
}) {
  const { db, store, config } = deps;
  const runs = new Map<number, AgentRun>();
  /**
   * The tokens this process's runs hold (SHA-256 of each, by agent): the API exempts them from its per-IP window (every
   * run calls it from this host), never any other token.
   */
  const ownTokens = new Map<number, string>();
  const tokens: Pick<AgentTokens, "issue" | "revoke"> = {
    async issue(agentId) {
      const token = await deps.tokens.issue(agentId);
      ownTokens.set(agentId, sha256Hex(token));
      return token;
    },
    async revoke(agentId) {
      ownTokens.delete(agentId);
      await deps.tokens.revoke(agentId);
    },
  };
  /** Starts and stops of one agent happen one after another. */
  const transitions = new Map<number, Promise<unknown>>();
  /** Each running agent's fairness unit (`fairnessUnit`): the server's task slots are shared fairly between units. */
  const owners = new Map<number, string>();
  const serverSlots = createFairSemaphore(config.serverConcurrency, () => new Set(owners.values()).size);
  /** The server's slots as one agent sees them: its unit's share. */
  const slotsOf = (unit: string): Semaphore => ({
    acquire: (signal) => serverSlots.acquire(unit, signal),
    available: () => serverSlots.available(unit),
  });
  const modelCalls = createWindows(60_000);
  let endpoints: RunnerEndpoints | undefined;

  /** The agent no longer runs: its owner's share of the slots goes to the others when it was its owner's last. */
  function forget(agentId: number) {
    runs.delete(agentId);
    owners.delete(agentId);
    serverSlots.recheck();
  }

  function serially<T>(agentId: number, work: () => Promise<T>): Promise<T> {
    const previous = transitions.get(agentId) ?? Promise.resolve();
    const next = previous.then(work, work);
    transitions.set(
      agentId,
      next.catch(() => undefined),
    );
    return next;
  }

  /**
   * Brings the agent's run in line with its recorded state, after any start or stop of it before: runs it (with the
   * configuration it was started with, taken when the start was asked for) when its state is `running`, stops its run
   * when it is anything else. Every state change is followed by this call, and the last one reads the last state, so a
   * run exists exactly while the state is `running`. A run that cannot start (its secrets cannot be opened, its
   * registration fails) leaves the agent `stopped` with the reason, unless it was deleted meanwhile.
   */
  function launch(agentId: number): Promise<void> {
    return serially(agentId, async () => {
      if (!endpoints) return;
      const row = await store.find(agentId);
      if (!row || row.state !== "running") {
        const run = runs.get(agentId);
        if (run) {
          forget(agentId);
          await run.stop();
          await tokens.revoke(agentId);
        }
        return;
      }
      if (runs.has(agentId)) return;
      try {
        const running = json.read<RunningConfig>(row.running_config) ?? (await store.runningConfig(row));
        const secrets = await store.openSecrets(agentId);
        // Counted in its unit before it browses, so the shares are right before it takes a task.
        const unit = await fairnessUnit(db, agentId, row.account_id);
        owners.set(agentId, unit);
        serverSlots.recheck();
        // Cleared before it runs: what the run meets from its first browse on (no gas...) is its own lastError.
        await store.setState(agentId, { last_error: null });
        runs.set(
          agentId,
          await startAgentRun(agentId, row.address, running, secrets, {
            ...deps,
            tokens,
            serverSlots: slotsOf(unit),
            modelCalls,
            ...endpoints,
          }),
        );
      } catch (error) {
        forget(agentId);
        await store.transition(agentId, ["running"], "stopped", { last_error: (error as Error).message.slice(0, 1000) });
        deps.logger.warn({ hostedAgent: agentId, error: (error as Error).message }, "hosted agent did not start");
        throw error;
      }
    });
  }

  function halt(agentId: number): Promise<void> {
    return serially(agentId, async () => {
      const run = runs.get(agentId);
      forget(agentId);
      await run?.stop();
      await tokens.revoke(agentId);
    });
  }

  return {
    launch,
    halt,
    isRunning: (agentId: number) => runs.has(agentId),
    /** Whether the token is one a run of this process holds now (a hosted agent's token issued here, not revoked). */
    isOwnToken(token: string): boolean {
      if (ownTokens.size === 0) return false;
      const hash = sha256Hex(token);
      for (const own of ownTokens.values()) if (own === hash) return true;
      return false;
    },
    /** Starts every agent recorded as running; a failing one is recorded as stopped and the others go on. */
    async attach(at: RunnerEndpoints): Promise<void> {
      endpoints = at;
      const rows = await db.selectFrom("hosted_agents").select("id").where("state", "=", "running").orderBy("id").execute();
      await Promise.allSettled(rows.map((r) => launch(r.id)));
    },
    /**
     * Brings the runs in line with the recorded states, for starts, stops and restarts another API process recorded
     * (its runners are not attached; this process runs every hosted agent): an agent recorded as running starts, a
     * run whose agent is recorded otherwise stops and its token goes, and a run whose token was revoked (a stop, then
     * a start) starts again with the configuration recorded.
     */
    async reconcile(): Promise<void> {
      if (!endpoints) return;
      const ids = [...runs.keys()];
      const rows = await db
        .selectFrom("hosted_agents")
        .select(["id", "state"])
        .where((eb) => (ids.length > 0 ? eb.or([eb("state", "=", "running"), eb("id", "in", ids)]) : eb("state", "=", "running")))
        .execute();
      const recorded = new Map(rows.map((r) => [r.id, r.state]));
      const tokened =
        ids.length === 0
          ? new Set<number>()
          : new Set((await db.selectFrom("hosted_agent_tokens").select("agent_id").where("agent_id", "in", ids).execute()).map((r) => r.agent_id));
      await Promise.allSettled([
        ...rows.filter((r) => r.state === "running" && !runs.has(r.id)).map((r) => launch(r.id)),
        ...ids.filter((id) => recorded.get(id) !== "running").map((id) => halt(id)),
        ...ids.filter((id) => recorded.get(id) === "running" && !tokened.has(id)).map((id) => halt(id).then(() => launch(id))),
      ]);
    },
    /** Stops every run; their state stays `running`, so they start again with the server. */
    async close(): Promise<void> {
      const ids = [...runs.keys()];
      await Promise.allSettled(
        ids.map((id) =>
          serially(id, async () => {
            const run = runs.get(id);
            forget(id);
            await run?.stop();
          }),
        ),
      );
      endpoints = undefined;
    },
  };
}
