/**
 * Posting the rows nothing was paid for yet, in one SDK run (`postTasks`), journaled at each step: the prepared rows
 * before their funding is sent, its hash once mined, each row's outcome; a funding reported failed is checked on chain.
 */
import { checkedRow } from "../check";
import { ApiError } from "../../errors";
import type { PostResult, WrapTo } from "../types";
import { reconcile } from "./reconcile";
import { RowStatus } from "./outcomes";
import { fundingInFlight } from "./run";
import type { Progress } from "./ports";
import type { RunRow } from "./rows";
import type { Run } from "./types";

export interface PostFreshOptions {
  /** Tasks per funding transaction (`--chunk`). */
  chunk?: number;
  /** Raw units (`--max-total <usdc>`). */
  maxTotalRaw?: bigint;
  /** Whom private briefs are wrapped to (`market mcp` passes `any-chain`); default the posting chain's agents. */
  wrapTo?: WrapTo;
  /** Also wrap each private brief key to the service's custody key (PostTasksOptions `custodyPublicKey`; the web app). */
  custodyPublicKey?: string;
}

/**
 * Steps of a run that a program embedding the engine may wait on (the `market` binary passes none). Each is awaited
 * once the journal holds the step and before the run goes on: `funding` before the funding transaction is sent,
 * `funded` before its rows are listed.
 */
export interface PostTasksHooks {
  afterJournaled?(step: "funding" | "funded"): Promise<void>;
}

/** One SDK run for the rows nothing was paid for yet, journaled at each step (`market mcp` runs it too). */
export async function postFresh(
  run: Run,
  fresh: readonly RunRow[],
  flags: PostFreshOptions,
  progress: Progress,
  done: { count: number },
  hooks: PostTasksHooks,
) {
  const { chain, journal, results } = run;
  const rowAt = (index: number) => fresh[index]!;
  const fundedHere = new Set<string>();
  const record = async (row: RunRow, result: PostResult) => {
    const error = result.error;
    if (result.status === "posted") {
      await journal.append({ t: "posted", key: row.key, taskHash: result.taskHash!, txHash: result.txHash! });
      results.set(row, { status: RowStatus.posted, taskHash: result.taskHash!, txHash: result.txHash! });
    } else if (result.status === "unlisted") {
      await journal.append({ t: "unlisted", key: row.key, taskHash: result.taskHash!, txHash: result.txHash!, error: error! });
      results.set(row, { status: RowStatus.unlisted, taskHash: result.taskHash!, txHash: result.txHash!, ...(error ? { error } : {}) });
    } else if (result.status === "failed") {
      await journal.append({ t: "failed", key: row.key, ...(result.taskHash ? { taskHash: result.taskHash } : {}), error: error! });
      results.set(row, { status: RowStatus.failed, ...(result.taskHash ? { taskHash: result.taskHash } : {}), ...(error ? { error } : {}) });
    }
  };

  try {
    // Checked once, when the file was read (core/bulk) or the call's rows were (checkRows): posted as they are.
    await run.client.postCheckedTasks(
      fresh.map((r, index) => checkedRow(r.row, index)),
      {
        // The run's chain, the one its journal is bound to.
        chain: chain.chain,
        ...(flags.chunk !== undefined ? { chunkSize: flags.chunk } : {}),
        ...(flags.maxTotalRaw !== undefined ? { maxTotalRaw: flags.maxTotalRaw } : {}),
        ...(flags.wrapTo ? { wrapTo: flags.wrapTo } : {}),
        ...(flags.custodyPublicKey ? { custodyPublicKey: flags.custodyPublicKey } : {}),
        onFunding: async (event) => {
          const block = await chain.provider.getBlockNumber();
          // Recorded by content before anything is sent, so a copy of this file finds these rows (findRepeats).
          await run.funded.record(
            event.rows.map((r) => ({ key: rowAt(r.index).key, taskHash: r.taskHash, file: run.file, line: rowAt(r.index).line })),
          );
          await journal.append({
            t: "funding",
            chain: chain.chain,
            wallet: chain.wallet.address,
            escrow: chain.escrow,
            nonce: event.nonce,
            block,
            rows: event.rows.map((r) => ({
              key: rowAt(r.index).key,
              line: rowAt(r.index).line,
              taskHash: r.taskHash,
              amount: rowAt(r.index).row.amount.toString(),
              indexParams: r.indexParams,
            })),
          });
          for (const r of event.rows) {
            fundedHere.add(rowAt(r.index).key);
            results.set(rowAt(r.index), { status: RowStatus.notStarted, error: fundingInFlight(event.nonce) });
          }
          results.write();
          await hooks.afterJournaled?.("funding");
        },
        onFunded: async (event) => {
          await journal.append({
            t: "funded",
            txHash: event.txHash,
            rows: event.rows.map((r) => ({ key: rowAt(r.index).key, taskHash: r.taskHash })),
          });
          for (const r of event.rows) results.set(rowAt(r.index), { status: RowStatus.unlisted, taskHash: r.taskHash, txHash: event.txHash });
          results.write();
          await hooks.afterJournaled?.("funded");
        },
        onProgress: async ({ result }) => {
          if (result.status !== "skipped") await record(rowAt(result.index), result);
          progress.update(++done.count);
        },
      },
    );
  } catch (error) {
    if (error instanceof ApiError && fundedHere.size === 0 && (error.code === "INVALID_ROWS" || error.code === "SPEND_LIMIT")) {
      // Refused before anything was sent: name the file lines, not the SDK's row indexes.
      for (const e of error.body.errors ?? []) e.line = rowAt(e.index).line;
      throw error;
    }
    // Stopped mid-run (the API or the RPC failed): the journal knows what was paid; the run ends with rows left.
    progress.end();
    const { code, message } = error instanceof ApiError ? error : { code: "INTERNAL_ERROR", message: (error as Error).message };
    run.reporter.note(`error ${code}: ${message}`);
  }

  // A funding reported failed may still have gone through (the send failed after broadcast): ask the chain.
  for (const row of fresh) {
    if (results.get(row).status !== RowStatus.failed || !fundedHere.has(row.key)) continue;
    const journaled = journal.rows.get(row.key)!;
    const found = await reconcile(chain, journaled, { waitMs: 0 });
    if (found.kind === "funded" || found.kind === "closed") {
      const error = found.kind === "closed" ? found.error : results.get(row).error;
      await journal.append({ t: "funded", txHash: found.txHash, rows: [{ key: row.key, taskHash: found.attempt.taskHash }] });
      results.set(row, { status: RowStatus.unlisted, taskHash: found.attempt.taskHash, txHash: found.txHash, ...(error ? { error } : {}) });
    } else if (found.kind === "pending") {
      results.set(row, {
        status: RowStatus.notStarted,
        error: { code: "TX_PENDING", message: "the funding transaction is still pending; rerun once it is mined" },
      });
    }
  }
}
