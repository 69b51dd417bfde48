import type { Transaction } from "kysely";
import type { Database } from "../db/schema";
import { fromRegistryEventRow } from "../indexer/events";
import type { RegistryProjection } from "../indexer/projection";
import type { RegistryLog } from "@market/core/registries";

type Trx = Transaction<Database>;

interface Counts {
  tasks_completed: number;
  score_sum: number;
  score_count: number;
  disputes: number;
}

const ZERO: Counts = { tasks_completed: 0, score_sum: 0, score_count: 0, disputes: 0 };

/** What one reputation event adds to its agent's numbers, as TaskReputation.sol adds it. */
function increment(event: RegistryLog): Counts | undefined {
  if (event.event === "CompletionRecorded") {
    return { tasks_completed: 1, score_sum: event.args.scored ? event.args.score : 0, score_count: event.args.scored ? 1 : 0, disputes: 0 };
  }
  if (event.event === "DisputeRecorded") return { ...ZERO, disputes: 1 };
  return undefined;
}

/** Sums each agent's increments of a list of events. */
function totals(events: readonly RegistryLog[]): Map<string, Counts> {
  const byAgent = new Map<string, Counts>();
  for (const event of events) {
    const add = increment(event);
    if (!add || (event.event !== "CompletionRecorded" && event.event !== "DisputeRecorded")) continue;
    const agent = event.args.agent;
    const now = byAgent.get(agent) ?? ZERO;
    byAgent.set(agent, {
      tasks_completed: now.tasks_completed + add.tasks_completed,
      score_sum: now.score_sum + add.score_sum,
      score_count: now.score_count + add.score_count,
      disputes: now.disputes + add.disputes,
    });
  }
  return byAgent;
}

async function add(trx: Trx, chain: string, agent: string, counts: Counts): Promise<void> {
  await trx
    .insertInto("onchain_reputation")
    .values({ chain, agent, ...counts })
    .onConflict((oc) =>
      oc.columns(["chain", "agent"]).doUpdateSet((eb) => ({
        tasks_completed: eb("onchain_reputation.tasks_completed", "+", counts.tasks_completed),
        score_sum: eb("onchain_reputation.score_sum", "+", counts.score_sum),
        score_count: eb("onchain_reputation.score_count", "+", counts.score_count),
        disputes: eb("onchain_reputation.disputes", "+", counts.disputes),
      })),
    )
    .execute();
}

/**
 * Keeps `onchain_reputation` equal to the reputation contract's record of each agent wallet (tasks completed, score
 * sum and count, disputes), from its CompletionRecorded and DisputeRecorded events. Every write of the contract emits
 * one, so the projection is the contract's numbers. A reorg recomputes the agents the removed events touched from
 * what remains of their events.
 */
export function createOnchainReputationProjection(): RegistryProjection {
  return {
    name: "onchain-reputation",
    source: "registries",
    async apply(trx, chain, events) {
      for (const [agent, counts] of [...totals(events)].sort(([a], [b]) => a.localeCompare(b))) await add(trx, chain, agent, counts);
    },
    async rollback(trx, chain, removed) {
      const agents = [...totals(removed).keys()].sort();
      if (agents.length === 0) return;
      await trx.deleteFrom("onchain_reputation").where("chain", "=", chain).where("agent", "in", agents).execute();
      const rows = await trx
        .selectFrom("registry_events")
        .selectAll()
        .where("chain", "=", chain)
        .where("registry", "=", "reputation")
        .where("subject", "in", agents)
        .orderBy("block_number")
        .orderBy("log_index")
        .execute();
      for (const [agent, counts] of totals(rows.map(fromRegistryEventRow))) await add(trx, chain, agent, counts);
    },
  };
}
