/**
 * What a run checks before its summary, so a dry run, a summary or a quote counts only what can be posted and
 * approves nothing the real run refuses (issue 29, items 3 and 13): public rows whose task hash is listed already (by
 * anyone: a copied file, another poster) can only fail with TASK_HASH_IN_USE, so they are set aside and recorded
 * refused; a private row no registered agent can open is refused NO_EXECUTORS, as the real run refuses it before
 * sending. Shared by every host of the engine (the CLI, `market mcp` and the API's custodied `post_tasks`).
 */
import { ApiError, clientError } from "../../errors";
import { findRecipients } from "../prepare";
import type { CheckedRow } from "../check";
import type { WrapTo } from "../types";
import type { MarketClient } from "../../client";
import { publicTaskHash } from "@market/core/crypto";
import { RowStatus } from "./outcomes";
import type { Sorted } from "./run";
import type { RunRow } from "./rows";
import type { Run } from "./types";

/** Reads at a time while looking hashes up. */
const LOOKUPS_AT_ONCE = 8;

/** The message a row set aside as listed already is recorded refused with. */
export const LISTED_ALREADY = "that public brief is listed already (by this file's copy, or another poster): change its text to post it";

/** The public rows among `rows` whose task hash the service lists already: posting them can only fail with TASK_HASH_IN_USE. */
export async function listedAlready(client: MarketClient, rows: readonly RunRow[]): Promise<RunRow[]> {
  const publicRows = rows.filter((r) => r.row.privacy === "public");
  const listed: RunRow[] = [];
  for (let i = 0; i < publicRows.length; i += LOOKUPS_AT_ONCE) {
    const batch = publicRows.slice(i, i + LOOKUPS_AT_ONCE);
    const found = await Promise.all(
      batch.map((r) =>
        client.getTask(publicTaskHash(r.row.instructions)).then(
          () => true,
          (error: unknown) => {
            if (error instanceof ApiError && error.code === "TASK_NOT_FOUND") return false;
            throw error;
          },
        ),
      ),
    );
    batch.forEach((r, j) => found[j] && listed.push(r));
  }
  return listed;
}

/** Sets aside the fresh public rows whose hash is listed already (`sorted.listed`); they are no longer `fresh`. */
export async function setAsideListed(run: Pick<Run, "client">, sorted: Sorted): Promise<RunRow[]> {
  const listed = new Set(await listedAlready(run.client, sorted.fresh));
  if (listed.size === 0) return [];
  sorted.fresh = sorted.fresh.filter((r) => !listed.has(r));
  sorted.listed = [...listed];
  return sorted.listed;
}

/** Records the rows set aside as listed already refused for good (TASK_HASH_IN_USE, nothing paid): once the run goes ahead. */
export async function refuseListed(run: Run, listed: readonly RunRow[]): Promise<void> {
  for (const row of listed) {
    const error = { code: "TASK_HASH_IN_USE", message: LISTED_ALREADY };
    await run.journal.append({ t: "failed", key: row.key, error });
    run.results.set(row, { status: RowStatus.failed, error });
  }
}

/**
 * Refuses, as the real run would before sending, private rows no registered agent on the run's chain (on any chain
 * with `any-chain`) can open (`NO_EXECUTORS`, each row named by its line).
 */
export async function requireRecipients(run: Pick<Run, "client" | "chain">, rows: readonly RunRow[], wrapTo?: WrapTo): Promise<void> {
  const checked = rows.map((r, index) => ({ index, row: r.row, verificationMode: "auto" as const }) satisfies CheckedRow);
  try {
    await findRecipients({ http: run.client.http, settlement: await run.client.settlement(run.chain.chain) }, checked, wrapTo);
  } catch (error) {
    // Named by line, as the real run names them.
    if (error instanceof ApiError) for (const e of error.body.errors ?? []) e.line = rows[e.index]!.line;
    throw error;
  }
}

/**
 * Refuses (`WRONG_CHAIN`) a run on a chain the service settles on but takes no new task on (not in its
 * `POSTABLE_CHAINS`), as `postTasks` would before sending. A paused escrow is left to `postTasks` (`ESCROW_PAUSED`).
 */
export async function requirePostable(run: Pick<Run, "client" | "chain">): Promise<void> {
  const settlement = await run.client.settlement(run.chain.chain);
  if (settlement.postable || settlement.notPostableReason === "ESCROW_PAUSED") return;
  throw clientError("WRONG_CHAIN", `The service takes no tasks on ${run.chain.chain} (POSTABLE_CHAINS on the server); nothing was sent.`);
}

/** Every check of this module on a sorted run, in the order the real run would meet them: what the summary counts is postable. */
export async function preflight(run: Run, sorted: Sorted, options: { wrapTo?: WrapTo } = {}): Promise<void> {
  if (sorted.fresh.length > 0) await requirePostable(run);
  await setAsideListed(run, sorted);
  await requireRecipients(run, sorted.fresh, options.wrapTo);
}
