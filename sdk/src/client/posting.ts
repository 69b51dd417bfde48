/** The client's posting area: one task, a run of up to 1,000, and the listing of a funded task a run left unlisted. */
import { clientError } from "../errors";
import {
  checkRows,
  postRows,
  type CheckedRow,
  type IndexParams,
  type PostResult,
  type PostTaskInput,
  type PostTasksOptions,
  type PostTasksResult,
} from "../posting";
import type { ListingOutcome, SettlementAnswer } from "@market/core/api";
import type { ClientCore } from "./core";
import { MAX_BULK_ROWS } from "@market/core/limits";

/** The posting chain: `chain` when given (checked against GET /api/v1/health/settlement), else the first postable one. */
export async function postingContext(core: ClientCore, chain?: string) {
  const settlement = await core.settlement(chain);
  // Asked afresh: a pause is refused before the approval, not by the funding's revert after it.
  const now = await core.http.get<SettlementAnswer>("/api/v1/health/settlement");
  const current = now.chains.find((c) => c.chain === settlement.chain);
  if (chain !== undefined && !current?.postable && current?.notPostableReason !== "ESCROW_PAUSED") {
    const postable = now.chains.filter((c) => c.postable).map((c) => c.chain);
    throw clientError(
      "WRONG_CHAIN",
      `The service takes no tasks on ${chain} (postable: ${postable.join(", ") || "none"}; POSTABLE_CHAINS on the server); nothing was sent.`,
    );
  }
  if (current?.notPostableReason === "ESCROW_PAUSED") {
    throw clientError(
      "ESCROW_PAUSED",
      `The ${settlement.chain} escrow is paused (EscrowPaused()): no task can be funded until it is unpaused; nothing was sent.`,
      { reason: "EscrowPaused" },
    );
  }
  return { http: core.http, settlement, chain: await core.wallet(settlement.chain), sealer: core.sealer };
}

export async function postTask(core: ClientCore, input: PostTaskInput, options: Pick<PostTasksOptions, "chain">): Promise<PostResult> {
  const checked = checkRows([input], { allowAgentMode: true });
  const result = await postRows(await postingContext(core, options.chain), checked, 1, {});
  return result.results[0]!;
}

export async function postTasks(core: ClientCore, rows: readonly PostTaskInput[], options: PostTasksOptions): Promise<PostTasksResult> {
  const started = performance.now();
  const checked = checkRows(rows, { allowAgentMode: false });
  const checkMs = performance.now() - started;
  const result = await postRows(await postingContext(core, options.chain), checked, rows.length, options);
  return { ...result, timings: { ...result.timings, checkMs: result.timings.checkMs + Math.round(checkMs) } };
}

/** Rows checked already (`checkRows`, or core/bulk for a task file): the count bounded, nothing checked again. */
export async function postCheckedTasks(core: ClientCore, rows: readonly CheckedRow[], options: PostTasksOptions): Promise<PostTasksResult> {
  if (rows.length === 0 || rows.length > MAX_BULK_ROWS) {
    throw clientError("INVALID_ROWS", `1 to ${MAX_BULK_ROWS} rows per call; got ${rows.length}.`, { errors: [] });
  }
  return postRows(await postingContext(core, options.chain), rows, rows.length, options);
}

export async function indexTask(core: ClientCore, params: IndexParams): Promise<ListingOutcome> {
  return core.http.post("/api/v1/a2a/tasks/index", params);
}
