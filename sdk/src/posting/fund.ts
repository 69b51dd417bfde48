/**
 * Funding a chunk of prepared rows: the API builds the transaction (refusing rows it will not fund, before anything is
 * paid), the escrow is approved once for what the run still has to pay, and the wallet signs exactly the call the
 * client computes itself (one createTasks for the chunk when the escrow has batch creation, else one createTask).
 */
import { ZeroAddress } from "ethers";
import { ApiError } from "../errors";
import { erc20Interface, type Settlement, type UnsignedTx } from "../chain";
import { BATCH_CHUNK_SIZE } from "@market/core/limits";
import { fundingCalldata } from "@market/core/escrow";
import type { BuiltBatch, BuiltTask } from "@market/core/api";
import type { PostingContext } from "./context";
import type { PreparedRow } from "./prepare";

/**
 * A chunk's funding, ready to send: the API's transaction, the call the client expects, the nonce it takes, and the
 * gas limit to try first (ChainWallet.send).
 */
export interface Funding {
  unsignedTx: UnsignedTx;
  expected: { to: string; data: string };
  nonce: number;
  gasLimit?: bigint | undefined;
}

/** Tasks per funding transaction: the caller's choice (default 20) within the escrow's batch limit, else one. */
export function chunkSizeFor(settlement: Settlement, requested: number | undefined): number {
  const { supported, maxBatch } = settlement.batchCreate;
  return supported ? Math.max(1, Math.min(requested ?? BATCH_CHUNK_SIZE, maxBatch)) : 1;
}

/**
 * The funding transaction the API builds for the chunk (it checks each task: hash in use, pinned worker...), and the
 * rows it is for. A refusal that names rows drops just those (each reported to `onRefused`: nothing was paid for it)
 * and asks again for the rest; one that names none, or a failure of the service, is thrown: asking again would be
 * refused again. No transaction when every row was refused.
 */
export async function buildFunding(
  ctx: PostingContext,
  chunk: readonly PreparedRow[],
  onRefused: (row: PreparedRow, error: { code: string; message: string }) => Promise<void>,
): Promise<{ unsignedTx?: UnsignedTx; rows: PreparedRow[] }> {
  let rows = [...chunk];
  while (rows.length > 0) {
    try {
      const { unsignedTx } =
        rows.length === 1
          ? await ctx.http.post<BuiltTask>("/api/v1/tasks", buildBody(rows[0]!))
          : await ctx.http.post<BuiltBatch>("/api/v1/tasks/batch", { tasks: rows.map(buildBody) });
      return { unsignedTx, rows };
    } catch (error) {
      // ApiError.status is the HTTP status (0: no answer reached us), not an escrow status: only a 4xx names rows.
      if (!(error instanceof ApiError) || error.status >= 500 || error.status === 0) throw error;
      const named = refusedRows(error, rows.length);
      if (named.size === 0) throw error;
      for (const [i, e] of named) await onRefused(rows[i]!, e);
      rows = rows.filter((_, i) => !named.has(i));
    }
  }
  return { rows };
}

/** The rows of a `length`-row request that a refusal names (a one-row request is refused as a whole). */
function refusedRows(error: ApiError, length: number): Map<number, { code: string; message: string }> {
  const refused = new Map<number, { code: string; message: string }>();
  if (length === 1) refused.set(0, { code: error.code, message: error.message });
  else if (error.code === "INVALID_ROWS") {
    for (const d of error.body.details ?? []) {
      const i = Number(d.index);
      if (Number.isInteger(i) && i >= 0 && i < length) refused.set(i, { code: String(d.code), message: String(d.message) });
    }
  }
  return refused;
}

/** The API body that builds the funding of a prepared row. */
function buildBody({ checked, params }: PreparedRow) {
  return { ...params, amount: checked.row.amount.toString(), duration: checked.row.durationSeconds };
}

/** Approves the escrow for `amount` unless its allowance already covers it. */
export async function approveEscrow(ctx: PostingContext, amount: bigint): Promise<void> {
  const { chain } = ctx;
  const allowance = BigInt(
    await chain.provider.call({ to: chain.token, data: erc20Interface.encodeFunctionData("allowance", [chain.wallet.address, chain.escrow]) }),
  );
  if (allowance < amount) await chain.send(null, { to: chain.token, data: erc20Interface.encodeFunctionData("approve", [chain.escrow, amount]) });
}

/** The createTask or createTasks call the client expects for these prepared rows. */
export function expectedFunding(ctx: PostingContext, rows: readonly PreparedRow[]): { to: string; data: string } {
  const data = fundingCalldata(
    rows.map(({ checked, params }) => ({
      taskHash: params.taskHash,
      token: ctx.chain.token,
      amount: checked.row.amount,
      duration: BigInt(checked.row.durationSeconds),
      verifier: params.verifierAddress ?? ZeroAddress,
    })),
  );
  return { to: ctx.chain.escrow, data };
}
