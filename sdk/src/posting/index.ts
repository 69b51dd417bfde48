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
import { findRecipients, prepareRows, type PreparedRow } from "./prepare";
import type { FundedEvent, PostResult, PostStatus, PostTasksOptions, PostTasksResult } from "./types";

export { checkRows, checkedRow, type CheckedRow } from "./check";
export type { PostingContext } from "./context";
export { listFunded } from "./list";
export { findRecipients } from "./prepare";
export { MAX_REENCRYPTIONS } from "./squat";
export { inlineSealer, type BriefSealer, type SealedBrief } from "./seal";
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
  // Threads that seal private briefs start while the agents they are wrapped to are looked up.
  if (rows.some((c) => c.row.privacy === "private")) ctx.sealer.warm?.();
  const recipients = await tally.timed("checkMs", () => findRecipients(ctx, rows, options.wrapTo, options.custodyPublicKey));
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
  // Each chunk's funding is sent as soon as the previous one is mined, while that one is listed: listing runs beside the
  // next funding, never two listings at once. A listing failure still stops the run (spec "Bulk run behaviour"): it
  // sets `listingFailed` the moment it is known, and no funding is sent after that (the check before `onFunding`);
  // the previous chunk's listing is awaited before the next chunk is started, so a failure stops the run at the latest
  // after the one chunk whose funding was already sent while that listing ran. That chunk is listed like any other.
  let listing: Promise<boolean> = Promise.resolve(true);
  let listingFailed = false;
  // The gas of the last funding, per row: the next one is signed with that much (a quarter more, for at least as many
  // rows) once the call runs at that limit, instead of an estimate that runs the whole batch a dozen times.
  let lastGas: { used: bigint; rows: number } | undefined;
  const gasLimitFor = (rows: number) =>
    lastGas ? (lastGas.used * BigInt(Math.max(rows, lastGas.rows)) * 5n) / (4n * BigInt(lastGas.rows)) : undefined;

  // The next chunk is staged (briefs encrypted, uploaded and keys wrapped, then its funding built by the API) while the
  // current one is approved, funded and listed, and the one after it is prepared as soon as the next one is: staging
  // pays nothing, and the sealing (on the sealer's threads in Node), the uploads and the API's checks overlap the
  // chain's mining and the listing.
  const preparing = new Map<number, Promise<PreparedRow[]>>();
  let closing = false;
  const prepare = (start: number): Promise<PreparedRow[]> => {
    let prepared = preparing.get(start);
    if (!prepared) {
      const chunkRows = rows.slice(start, start + chunkSize);
      prepared = tally.timed("prepareMs", () => prepareRows(ctx, chunkRows, recipients, options.onBriefKey));
      prepared.catch(() => undefined); // its stage reports it
      preparing.set(start, prepared);
    }
    return prepared;
  };
  const stage = (start: number) => {
    const prepared = prepare(start);
    if (start + chunkSize < rows.length) void prepared.then(() => (closing ? undefined : prepare(start + chunkSize))).catch(() => undefined);
    return stageChunk(ctx, prepared, tally, builder);
  };
  let next = rows.length > 0 ? stage(0) : undefined;
  const readNonce = () => ctx.chain.provider.getTransactionCount(ctx.chain.wallet.address, "pending");
  for (let start = 0; start < rows.length && !stopped; start += chunkSize) {
    // Once the escrow is approved, the chunk's nonce is read while its staging is awaited: nothing is sent meanwhile.
    let nonceAhead = approved ? readNonce() : undefined;
    nonceAhead?.catch(() => undefined);
    const staged = await next!;
    next = start + chunkSize < rows.length ? stage(start + chunkSize) : undefined;
    const fundingStarted = performance.now();
    let chunk = staged.prepared;
    let built = staged.built;
    let sent: { hash: string; gasUsed: bigint } | undefined;
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
        const nonce = await (nonceAhead ?? readNonce());
        nonceAhead = undefined;
        // The previous chunk's listing failed meanwhile: nothing more is funded (its rows are left skipped).
        if (listingFailed) {
          stopped = true;
          break;
        }
        const expected = built === staged.built && staged.expected ? staged.expected : expectedFunding(ctx, chunk);
        funding = { unsignedTx: built.unsignedTx, expected, nonce, gasLimit: gasLimitFor(chunk.length) };
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
      const outcome = await trySend(ctx, funding);
      if (outcome.error === undefined) {
        sent = outcome;
        break;
      }
      let rebuilt: Awaited<ReturnType<typeof builder.afterRevert>>;
      try {
        rebuilt = mayBeSquatted(outcome.error) ? await builder.afterRevert(chunk) : undefined;
      } catch (error) {
        await failUnpaid(rows.slice(start, start + chunkSize), chunk, tally, asFailure(error));
        stopped = true;
        break;
      }
      if (!rebuilt) {
        await settleSendFailure(chunk, outcome.error, tally);
        stopped = true;
        break;
      }
      built = rebuilt;
    }
    if (stopped || !sent) {
      if (!(await listing)) stopped = true;
      continue;
    }
    tally.add("fundMs", performance.now() - fundingStarted);
    lastGas = { used: sent.gasUsed, rows: chunk.length };
    const txHash = sent.hash;
    const funded: FundedEvent["rows"] = chunk.map((r) => ({
      index: r.checked.index,
      taskHash: r.params.taskHash,
      indexParams: { ...r.params, txHash },
    }));
    await options.onFunded?.({ txHash, rows: funded });
    const previous = listing;
    listing = listChunk(ctx, chunk, txHash, funded, tally).then((all) => {
      if (!all) listingFailed = true;
      return all;
    });
    if (!(await previous)) stopped = true;
  }

  // The last chunk's listing (or the one that ran beside a funding that then failed), and a chunk staged ahead of a
  // stop: it pays nothing; its refusals are settled before the tally closes, the rest skipped.
  if (!(await listing)) stopped = true;
  await next;
  // A chunk prepared ahead of a stop: nothing more is sent for it.
  closing = true;
  await Promise.allSettled(preparing.values());
  for (const checked of rows) if (!tally.settled(checked.index)) await tally.settle({ ...base(checked), status: "skipped" });
  return tally.summary(totalRaw, stopped);
}

/**
 * A chunk made ready to fund: prepared, then its funding built (with the rows the API refused dropped), and the call
 * the client expects it to be (computed here, off the path from one funding to the next).
 */
type Built = Awaited<ReturnType<ChunkBuilder["build"]>>;
type Staged = { prepared: PreparedRow[]; built?: Built; expected?: Funding["expected"]; error?: unknown };

/** Builds a chunk once prepared; never rejects (a failure comes back as `error`, with the rows prepared so far). */
async function stageChunk(ctx: PostingContext, preparing: Promise<PreparedRow[]>, tally: Tally, builder: ChunkBuilder): Promise<Staged> {
  let prepared: PreparedRow[] = [];
  try {
    prepared = await preparing;
    const built = await tally.timed("fundMs", () => builder.build(prepared));
    return { prepared, built, ...(built.unsignedTx ? { expected: expectedFunding(ctx, built.rows) } : {}) };
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
async function trySend(
  ctx: PostingContext,
  funding: Funding,
): Promise<{ hash: string; gasUsed: bigint; error?: undefined } | { hash?: undefined; error: ApiError }> {
  try {
    const receipt = await ctx.chain.send(funding.unsignedTx, funding.expected, {
      nonce: funding.nonce,
      ...(funding.gasLimit === undefined ? {} : { gasLimit: funding.gasLimit }),
    });
    return { hash: receipt.hash, gasUsed: receipt.gasUsed };
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
    // them once the transaction is mined); posting them again could pay twice. A browser wallet that answered with an
    // error may have sent it without telling its hash: the rows are unlisted without one (injected.ts).
    if (e.body.txHash === undefined) {
      for (const r of chunk) await tally.settle({ ...base(r.checked), status: "unlisted", taskHash: r.params.taskHash, error: failure });
      return;
    }
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
