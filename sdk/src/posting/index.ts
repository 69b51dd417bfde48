/**
 * Posting tasks, one row or up to 1,000, in phases: check every row (check.ts), find who can open each private brief
 * and prepare the rows (prepare.ts: encrypt, upload, wrap keys), then per chunk build, approve and fund (fund.ts) and
 * list what was funded (list.ts). This file runs the phases and keeps the tally of what happened to each row.
 */
import { ApiError, clientError } from "../errors";
import type { CheckedRow } from "./check";
import type { PostingContext } from "./context";
import { approveEscrow, chunkSizeFor, expectedFunding, type Funding } from "./fund";
import { chunkBuilder, mayBeSquatted, type ChunkBuilder } from "./squat";
import { listFunded } from "./list";
import { findRecipients, prepareRow, type PreparedRow, type Recipients } from "./prepare";
import type { FundedEvent, PostResult, PostStatus, PostTasksOptions, PostTasksResult } from "./types";

export { checkRows, type CheckedRow } from "./check";
export type { PostingContext } from "./context";
export { listFunded } from "./list";
export { findRecipients } from "./prepare";
export { MAX_REENCRYPTIONS } from "./squat";
export type * from "./types";

type Phase = keyof PostTasksResult["timings"];

/** What a run has settled so far, row by row (each reported to `onProgress`), and the time spent per phase. */
function createTally(total: number, onProgress: PostTasksOptions["onProgress"]) {
  const results = new Map<number, PostResult>();
  const timings: PostTasksResult["timings"] = { checkMs: 0, prepareMs: 0, fundMs: 0, listMs: 0 };
  return {
    settled: (index: number) => results.has(index),
    async settle(result: PostResult) {
      results.set(result.index, result);
      await onProgress?.({ done: results.size, total, result });
    },
    add(phase: Phase, ms: number) {
      timings[phase] += ms;
    },
    async timed<T>(phase: Phase, work: () => Promise<T>): Promise<T> {
      const started = performance.now();
      try {
        return await work();
      } finally {
        timings[phase] += performance.now() - started;
      }
    },
    summary(totalRaw: bigint, stopped: boolean): PostTasksResult {
      const all = [...results.values()].sort((a, b) => a.index - b.index);
      const count = (status: PostStatus) => all.filter((r) => r.status === status).length;
      const round = (ms: number) => Math.round(ms);
      return {
        posted: count("posted"),
        unlisted: count("unlisted"),
        failed: count("failed"),
        skipped: count("skipped"),
        stopped,
        totalRaw: totalRaw.toString(),
        results: all,
        timings: {
          checkMs: round(timings.checkMs),
          prepareMs: round(timings.prepareMs),
          fundMs: round(timings.fundMs),
          listMs: round(timings.listMs),
        },
      };
    },
  };
}

type Tally = ReturnType<typeof createTally>;
type Failure = { code: string; message: string };

const base = (c: CheckedRow) => ({ index: c.index, amountRaw: c.row.amount.toString(), privacy: c.row.privacy });
const sumOf = (rows: readonly CheckedRow[]) => rows.reduce((sum, c) => sum + c.row.amount, 0n);

/**
 * Posts checked rows: approves the escrow once for the total, funds per chunk (one createTasks per chunk when the
 * escrow has batch creation, else one createTask per task), and lists each funded task. A row the API refuses before
 * funding fails alone with nothing paid; a funding or listing failure stops the run. Rows funded but not listed come
 * back `unlisted` with `indexParams`.
 */
export async function postRows(ctx: PostingContext, rows: readonly CheckedRow[], total: number, options: PostTasksOptions): Promise<PostTasksResult> {
  const tally = createTally(total, options.onProgress);
  const totalRaw = sumOf(rows);
  if (options.maxTotalRaw !== undefined && totalRaw > BigInt(options.maxTotalRaw)) {
    throw clientError("SPEND_LIMIT", `The total escrow ${totalRaw} is above maxTotalRaw ${options.maxTotalRaw}; nothing was spent.`);
  }
  const recipients = await tally.timed("checkMs", () => findRecipients(ctx, rows, options.wrapTo));
  const chunkSize = chunkSizeFor(ctx.settlement, options.chunkSize);
  // Rows the API refuses fail alone; rows whose hash someone else funded first are replaced or failed (squat.ts).
  const builder = chunkBuilder(
    ctx,
    recipients,
    (r, error) => tally.settle({ ...base(r.checked), status: "failed", taskHash: r.params.taskHash, error }),
    options.onBriefKey,
  );
  let approved = false;
  let stopped = false;

  // The next chunk is staged (briefs encrypted, uploaded and keys wrapped, then its funding built by the API) while the
  // current one is approved, funded and listed: staging pays nothing, and the client's CPU work and the API's checks
  // overlap the chain's mining and the listing.
  const stage = (start: number) => stageChunk(ctx, rows.slice(start, start + chunkSize), recipients, tally, builder, options.onBriefKey);
  let next = rows.length > 0 ? stage(0) : undefined;
  for (let start = 0; start < rows.length && !stopped; start += chunkSize) {
    const staged = await next!;
    next = start + chunkSize < rows.length ? stage(start + chunkSize) : undefined;
    const fundingStarted = performance.now();
    let chunk = staged.prepared;
    let built = staged.built;
    let txHash: string | undefined;
    // A funding the escrow refuses because someone funded one of its hashes first is built again without that row
    // (or with it encrypted afresh) and sent again; each turn pays nothing until one is mined.
    for (;;) {
      let funding: Funding;
      try {
        if (!built) throw staged.error;
        chunk = built.rows;
        if (!built.unsignedTx) break;
        if (!approved) {
          approved = true;
          await approveEscrow(ctx, sumOf(rows.slice(start)));
        }
        const nonce = await ctx.chain.provider.getTransactionCount(ctx.chain.wallet.address, "pending");
        funding = { unsignedTx: built.unsignedTx, expected: expectedFunding(ctx, chunk), nonce };
        await options.onFunding?.({
          rows: chunk.map((r) => ({ index: r.checked.index, taskHash: r.params.taskHash, indexParams: r.params })),
          nonce,
        });
      } catch (error) {
        // Nothing of this chunk is paid (preparing, building, approving or journaling it failed): its rows fail and the
        // run stops. Never thrown: earlier chunks may be paid, and the caller must learn which rows were.
        await failUnpaid(rows.slice(start, start + chunkSize), chunk, tally, asFailure(error));
        stopped = true;
        break;
      }
      const sent = await trySend(ctx, funding);
      if (sent.error === undefined) {
        txHash = sent.hash;
        break;
      }
      let rebuilt: Awaited<ReturnType<typeof builder.afterRevert>>;
      try {
        rebuilt = mayBeSquatted(sent.error) ? await builder.afterRevert(chunk) : undefined;
      } catch (error) {
        await failUnpaid(rows.slice(start, start + chunkSize), chunk, tally, asFailure(error));
        stopped = true;
        break;
      }
      if (!rebuilt) {
        await settleSendFailure(chunk, sent.error, tally);
        stopped = true;
        break;
      }
      built = rebuilt;
    }
    if (stopped) break;
    if (!txHash) continue;
    tally.add("fundMs", performance.now() - fundingStarted);
    const funded: FundedEvent["rows"] = chunk.map((r) => ({
      index: r.checked.index,
      taskHash: r.params.taskHash,
      indexParams: { ...r.params, txHash },
    }));
    await options.onFunded?.({ txHash, rows: funded });
    stopped = !(await listChunk(ctx, chunk, txHash, funded, tally));
  }

  // A chunk staged ahead of a stop pays nothing; its refusals are settled before the tally closes, the rest skipped.
  await next;
  for (const checked of rows) if (!tally.settled(checked.index)) await tally.settle({ ...base(checked), status: "skipped" });
  return tally.summary(totalRaw, stopped);
}

/** A chunk made ready to fund: prepared, then its funding built (with the rows the API refused dropped). */
type Staged = { prepared: PreparedRow[]; built?: Awaited<ReturnType<ChunkBuilder["build"]>>; error?: unknown };

/** Prepares and builds a chunk; never rejects (a failure comes back as `error`, with the rows prepared so far). */
async function stageChunk(
  ctx: PostingContext,
  rows: readonly CheckedRow[],
  recipients: Recipients,
  tally: Tally,
  builder: ChunkBuilder,
  onBriefKey: PostTasksOptions["onBriefKey"],
): Promise<Staged> {
  let prepared: PreparedRow[] = [];
  try {
    prepared = await tally.timed("prepareMs", () => Promise.all(rows.map((checked) => prepareRow(ctx, checked, recipients, onBriefKey))));
    const built = await tally.timed("fundMs", () => builder.build(prepared));
    return { prepared, built };
  } catch (error) {
    return { prepared, error };
  }
}

function asFailure(error: unknown): Failure {
  return error instanceof ApiError ? { code: error.code, message: error.message } : { code: "INTERNAL_ERROR", message: (error as Error).message };
}

/** Fails every row of a chunk not settled yet; with its task hash when it was prepared. */
async function failUnpaid(chunkRows: readonly CheckedRow[], prepared: readonly PreparedRow[], tally: Tally, error: Failure): Promise<void> {
  const taskHashes = new Map(prepared.map((r) => [r.checked.index, r.params.taskHash]));
  for (const checked of chunkRows) {
    if (tally.settled(checked.index)) continue;
    const taskHash = taskHashes.get(checked.index);
    await tally.settle({ ...base(checked), status: "failed", ...(taskHash ? { taskHash } : {}), error });
  }
}

/**
 * Sends the chunk's funding at exactly the nonce `onFunding` was told, so a journal of it can tell sent from never
 * sent: its hash once mined, or the error.
 */
async function trySend(ctx: PostingContext, funding: Funding): Promise<{ hash: string; error?: undefined } | { hash?: undefined; error: ApiError }> {
  try {
    return { hash: (await ctx.chain.send(funding.unsignedTx, funding.expected, { nonce: funding.nonce })).hash };
  } catch (error) {
    return { error: error instanceof ApiError ? error : new ApiError(0, "TX_FAILED", (error as Error).message) };
  }
}

/**
 * Settles the rows of a funding that was not mined: unlisted when it was sent and its fate is unknown (the rows may be
 * paid), failed when nothing can have been paid.
 */
async function settleSendFailure(chunk: readonly PreparedRow[], e: ApiError, tally: Tally): Promise<void> {
  const failure = { code: e.code, message: e.message };
  if (e.code === "TX_UNCONFIRMED") {
    // Sent, fate unknown: the rows may be paid. They come back unlisted with their indexParams (indexTask lists
    // them once the transaction is mined); posting them again could pay twice.
    const sentHash = String(e.body.txHash);
    for (const r of chunk) {
      const indexParams = { ...r.params, txHash: sentHash };
      await tally.settle({ ...base(r.checked), status: "unlisted", taskHash: r.params.taskHash, txHash: sentHash, indexParams, error: failure });
    }
    return;
  }
  // A guard refusal, a funding that reverted or one never sent pays nothing.
  for (const r of chunk) await tally.settle({ ...base(r.checked), status: "failed", taskHash: r.params.taskHash, error: failure });
}

/** Lists a funded chunk and settles each row posted or unlisted; true when every row was listed. */
async function listChunk(
  ctx: PostingContext,
  chunk: readonly PreparedRow[],
  txHash: string,
  funded: FundedEvent["rows"],
  tally: Tally,
): Promise<boolean> {
  const params = funded.map((f) => f.indexParams);
  const outcomes = await tally.timed("listMs", () => listFunded(ctx, txHash, params));
  let all = true;
  for (const [i, r] of chunk.entries()) {
    const outcome = outcomes[i]!;
    const result: PostResult = { ...base(r.checked), taskHash: r.params.taskHash, txHash, status: outcome.ok ? "posted" : "unlisted" };
    if (!outcome.ok) {
      result.indexParams = funded[i]!.indexParams;
      result.error = outcome.error;
      all = false;
    }
    await tally.settle(result);
  }
  return all;
}
