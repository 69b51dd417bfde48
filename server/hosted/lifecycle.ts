/** A hosted agent's lifecycle (server/hosted/service.ts binds the operations): start, stop, restart and delete. */
import { Contract } from "ethers";
import { json } from "../db";
import { chainCall } from "../chains";
import type { Principal } from "../auth";
import type { OwnedAgentView } from "@market/core/api";
import { MarketError } from "@market/core/errors";
import { Ending } from "@market/core/escrow";
import { forgetMessages } from "./messages";
import { ERC20, type HostedAgentsDeps } from "./agent-deps";

export type Lifecycle = ReturnType<typeof createLifecycle>;

export function createLifecycle(deps: HostedAgentsDeps) {
  const { db, store, runners } = deps;

  /** Why a transition of the agent lost to another: the agent's state as it is now, as a refusal. */
  async function lostTransition(id: number): Promise<MarketError> {
    const now = await store.find(id);
    if (!now) return new MarketError("HOSTED_AGENT_NOT_FOUND");
    if (now.state === "withdrawing")
      return new MarketError(
        "WITHDRAWAL_IN_PROGRESS",
        "The service is signing from the agent's wallet (a withdrawal, or an MCP spend of its owner's); retry once it has ended.",
      );
    if (now.state === "running") return new MarketError("AGENT_RUNNING", "Stop the agent first.");
    return new MarketError("WITHDRAWAL_IN_PROGRESS", "The agent changed state meanwhile; retry.");
  }

  /** Starts the agent with its current configuration; it registers its key and chains, then browses. */
  async function start(principal: Principal, id: number): Promise<OwnedAgentView> {
    const row = await store.requireOwned(id, principal);
    if (row.state !== "running") {
      const running = await store.runningConfig(row);
      // Only a stopped agent starts: never one being withdrawn from (its wallet's nonce is in use), nor one deleted
      // meanwhile. Started by another call meanwhile is fine.
      if (!(await store.transition(id, ["stopped"], "running", { running_config: json.write(running), last_error: null }))) {
        const lost = await lostTransition(id);
        if (lost.code !== "AGENT_RUNNING") throw lost;
      }
    }
    await runners.launch(id).catch(() => undefined);
    const now = await store.find(id);
    if (!now) throw new MarketError("HOSTED_AGENT_NOT_FOUND");
    return store.ownedView(now);
  }

  async function stop(principal: Principal, id: number): Promise<OwnedAgentView> {
    await store.requireOwned(id, principal);
    // The runner stops first, while its token still works: a delivery already under way completes. A start racing
    // this stop may launch again in between: the launch after the state change stops that run.
    await runners.halt(id);
    await store.transition(id, ["running"], "stopped", { running_config: null });
    await runners.launch(id).catch(() => undefined);
    const now = await store.find(id);
    if (!now) throw new MarketError("HOSTED_AGENT_NOT_FOUND");
    return store.ownedView(now);
  }

  async function restart(principal: Principal, id: number): Promise<OwnedAgentView> {
    await stop(principal, id);
    return start(principal, id);
  }

  /**
   * Stops the agent, destroys its secrets and hides it. Refused (`WRONG_STATE`) while its key was never exported and
   * its wallet holds settlement tokens (reason FUNDS_LEFT: withdraw or export first) or it is the worker of a task not
   * ended (reason TASKS_IN_HAND: a payout, a ruling for it or its escalated work would reach a wallet nobody holds a
   * key to; wait for the tasks to end, or export first).
   */
  async function remove(principal: Principal, id: number): Promise<{ id: number; deleted: true }> {
    const row = await store.requireOwned(id, principal);
    if (row.exported_at === null) {
      const held = await db
        .selectFrom("escrow_tasks")
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .where("worker", "=", row.address)
        .where("ending", "=", Ending.None)
        .executeTakeFirstOrThrow();
      if (Number(held.n) > 0) {
        throw new MarketError(
          "WRONG_STATE",
          `The agent is the worker of ${held.n} task(s) not ended; their payouts would reach a wallet whose key is destroyed. Wait for them to end, or export the key before deleting.`,
          { reason: "TASKS_IN_HAND" },
        );
      }
      const chain = deps.settlementChain();
      const token = new Contract(chain.config.token, ERC20, chain.provider);
      const balance = (await chainCall(() => token.getFunction("balanceOf")(row.address))) as bigint;
      if (balance > 0n) {
        throw new MarketError("WRONG_STATE", `The agent's wallet holds ${balance} raw units; withdraw them or export the key before deleting.`, {
          reason: "FUNDS_LEFT",
        });
      }
    }
    // Deleted first, in one state change: a start racing this delete finds nothing to start, and a withdrawal under
    // way keeps the agent (WITHDRAWAL_IN_PROGRESS). Then its run stops and its secrets go.
    if (!(await store.transition(id, ["running", "stopped"], "deleted", { running_config: null }))) throw await lostTransition(id);
    await runners.halt(id);
    await db.transaction().execute(async (trx) => {
      await trx.deleteFrom("hosted_agent_secrets").where("agent_id", "=", id).execute();
      await trx.deleteFrom("hosted_agent_tokens").where("agent_id", "=", id).execute();
      await forgetMessages(trx, id);
      // No longer offered tasks: its registration goes (its reputation stays with the wallet).
      await trx.deleteFrom("agent_capabilities").where("agent_address", "=", row.address).execute();
      await trx.deleteFrom("agents").where("address", "=", row.address).execute();
    });
    return { id, deleted: true };
  }

  return { lostTransition, start, stop, restart, remove };
}
