import type { Transaction } from "kysely";
import type { Database } from "../db/schema";
import type { ChainEvent } from "../indexer/events";
import type { Projection } from "../indexer/projection";
import { isPayout, toEnding } from "@market/core/escrow";

type Trx = Transaction<Database>;
/** Keys per statement, as the other projections read them. */
const CHUNK = 1_000;

/** A settled paid rental: a payout ending (TaskCompleted) of a task listed with a service's id. */
type Completion = Extract<ChainEvent, { event: "TaskCompleted" }>;
const isCompletion = (event: ChainEvent): event is Completion => event.event === "TaskCompleted" && event.taskHash !== null;

/** The service each of these tasks was listed for (rentals only). */
async function rentalsOf(trx: Trx, chain: string, hashes: readonly string[]): Promise<Map<string, number>> {
  const services = new Map<string, number>();
  for (let i = 0; i < hashes.length; i += CHUNK) {
    const rows = await trx
      .selectFrom("listings")
      .select(["task_hash", "service_id"])
      .where("chain", "=", chain)
      .where("task_hash", "in", hashes.slice(i, i + CHUNK))
      .where("service_id", "is not", null)
      .execute();
    for (const row of rows) if (row.service_id !== null) services.set(row.task_hash, row.service_id);
  }
  return services;
}

/**
 * `sold_count` of services: one service_sales row per settled paid rental, keyed by the task, and the service's count
 * moved only when that row is written or removed. Applying the same completion again (a re-index) writes nothing, a
 * reorg that removes it removes its row and the count with it, and refunds (TaskCancelled, DeadlineExpired,
 * TaskRefunded) never count. Runs after the task projection, in the indexer's transaction.
 */
export function createServiceSalesProjection(): Projection {
  return {
    name: "service-sales",

    async apply(trx, chain, events) {
      const completions = events.filter(isCompletion).filter((e) => isPayout(toEnding(e.args.ending)));
      if (completions.length === 0) return;
      const rentals = await rentalsOf(
        trx,
        chain,
        completions.map((e) => e.taskHash!),
      );
      for (const event of completions) {
        const serviceId = rentals.get(event.taskHash!);
        if (serviceId === undefined) continue;
        const written = await trx
          .insertInto("service_sales")
          .values({
            chain,
            task_hash: event.taskHash!,
            service_id: serviceId,
            amount: (BigInt(event.args.payout) + BigInt(event.args.fee)).toString(),
            block_number: event.blockNumber,
          })
          .onConflict((oc) => oc.columns(["chain", "task_hash"]).doNothing())
          .executeTakeFirst();
        if (Number(written.numInsertedOrUpdatedRows ?? 0n) === 1) {
          await trx
            .updateTable("services")
            .set((eb) => ({ sold_count: eb("sold_count", "+", 1) }))
            .where("id", "=", serviceId)
            .execute();
        }
      }
    },

    async rollback(trx, chain, removed) {
      for (const event of removed.filter(isCompletion)) {
        const sale = await trx
          .selectFrom("service_sales")
          .select("service_id")
          .where("chain", "=", chain)
          .where("task_hash", "=", event.taskHash!)
          .where("block_number", "=", event.blockNumber)
          .executeTakeFirst();
        if (!sale) continue;
        await trx.deleteFrom("service_sales").where("chain", "=", chain).where("task_hash", "=", event.taskHash!).execute();
        await trx
          .updateTable("services")
          .set((eb) => ({ sold_count: eb("sold_count", "-", 1) }))
          .where("id", "=", sale.service_id)
          .execute();
      }
    },
  };
}
