import type { Selectable } from "kysely";
import type { Chain, ChainRegistry } from "../chains";
import type { Db } from "../db";
import type { AssignmentsTable, DeliveriesTable, EscrowTask, ListingWithAmount } from "../db/schema";
import { MarketError } from "@market/core/errors";
import { taskStatus, type TaskStatus } from "@market/core/status";
import { taskHashParam } from "../http/params";

export type Delivery = Selectable<DeliveriesTable>;
export type Assignment = Selectable<AssignmentsTable>;

/** Everything the service knows about one task: its listing, its indexed escrow state and its deliveries. */
export interface TaskContext {
  /**
   * The listing, with `poster`, `amount` and `token` as the escrow holds them (the amount is kept by escrow_tasks only;
   * poster and token not as the listing copied them: a reorg may have funded the hash otherwise since), so every check
   * and answer reads the escrow's.
   */
  listing: ListingWithAmount;
  chain: Chain;
  /** The escrow's state as indexed. */
  onChain: EscrowTask;
  assignment: Assignment | undefined;
  /** The current worker's latest delivery (highest round), if any; a released worker's stored output is never it. */
  delivery: Delivery | undefined;
}

export async function loadTask(db: Db, chains: ChainRegistry, taskHashInput: string): Promise<TaskContext> {
  const taskHash = taskHashParam(taskHashInput);
  const listing = await db.selectFrom("listings").selectAll().where("task_hash", "=", taskHash).executeTakeFirst();
  if (!listing) throw new MarketError("TASK_NOT_FOUND", "No listed task with this hash.");
  const chain = chains.require(listing.chain);
  const onChain = await db
    .selectFrom("escrow_tasks")
    .selectAll()
    .where("chain", "=", listing.chain)
    .where("task_hash", "=", taskHash)
    .executeTakeFirst();
  if (!onChain) throw new MarketError("TASK_NOT_FOUND", "The task is listed but not indexed yet; retry shortly.");
  const assignment = await db.selectFrom("assignments").selectAll().where("task_hash", "=", taskHash).executeTakeFirst();
  const delivery = await db
    .selectFrom("deliveries")
    .selectAll()
    .where("task_hash", "=", taskHash)
    .where("agent_address", "=", onChain.worker)
    .orderBy("round", "desc")
    .executeTakeFirst();
  return { listing: { ...listing, poster: onChain.poster, amount: onChain.amount, token: onChain.token }, chain, onChain, assignment, delivery };
}

/** Whether the chain's escrow is paused (as indexed): only the admin's rulings go through. */
export async function escrowPaused(db: Db, chain: string): Promise<boolean> {
  const state = await db.selectFrom("escrow_state").select("paused_at").where("chain", "=", chain).executeTakeFirst();
  return Boolean(state?.paused_at);
}

/** `ESCROW_PAUSED` while the chain's escrow is paused (as indexed). */
export async function requireLive(db: Db, chain: string): Promise<void> {
  if (await escrowPaused(db, chain)) throw new MarketError("ESCROW_PAUSED");
}

/** Waits until the indexer shows what `ready` checks for (a settled transaction's effect), or the time runs out. */
export async function waitForIndexer(check: () => Promise<boolean>, timeoutMs = 10_000, everyMs = 25): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() >= end) return false;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/** The task's status as the API shows it: `awaiting_verification` once its latest round is finalized and not judged. */
export function statusOf(ctx: Pick<TaskContext, "onChain" | "delivery">, nowMs: number): TaskStatus {
  return taskStatus({
    status: ctx.onChain.status,
    deadline: ctx.onChain.deadline,
    nowSeconds: Math.floor(nowMs / 1000),
    awaitingVerdict: ctx.delivery?.finalized_at !== null && ctx.delivery?.passed === null,
  });
}
