/**
 * Hash squatting (docs/security.md): anyone may fund a task hash first, a public brief's hash being known from its
 * text and a private one from the uploaded ciphertext or the pending funding transaction. The escrow then refuses the
 * poster's funding (`TaskHashUsed`), which reverts the whole chunk. A row whose hash another wallet funded is
 * re-encrypted when it is private (new IV, so a new hash; at most MAX_REENCRYPTIONS times) or fails alone with
 * `TASK_HASH_IN_USE` when it is public, and the rest of the chunk is funded: nothing is ever paid twice, since a hash
 * funded by this wallet is never replaced.
 */
import { getAddress, ZeroAddress, type Result } from "ethers";
import { ApiError } from "../errors";
import { escrowInterface } from "../chain";
import { buildFunding } from "./fund";
import { prepareRow, type PreparedRow, type Recipients } from "./prepare";
import type { PostingContext } from "./context";
import type { PostTasksOptions } from "./types";

/** Times one private row is encrypted afresh because its hash was funded by someone else first. */
export const MAX_REENCRYPTIONS = 3;

/** API refusals that mean "this hash is taken" (listed, or funded on chain by someone). */
const TAKEN = new Set(["TASK_HASH_IN_USE", "TASK_HASH_CLAIMED"]);

type Failure = { code: string; message: string };

/**
 * The wallet that funded the hash when it is not this one (a squatter); undefined when unfunded or funded by us. Read
 * at the pending block: a node that estimates gas there refuses the funding for a squatter still in the mempool.
 */
export async function fundedByOther(ctx: Pick<PostingContext, "chain">, taskHash: string): Promise<string | undefined> {
  const { chain } = ctx;
  const data = await chain.provider.call({
    to: chain.escrow,
    data: escrowInterface.encodeFunctionData("getTask", [taskHash]),
    blockTag: "pending",
  });
  const task: Result = escrowInterface.decodeFunctionResult("getTask", data)[0];
  const poster = getAddress(String(task.getValue("poster")));
  return poster === ZeroAddress || poster === getAddress(chain.wallet.address) ? undefined : poster;
}

export interface ChunkBuilder {
  /**
   * The funding of these rows as the API builds it: rows it refuses fail alone, except rows whose hash another wallet
   * funded: a private one is prepared again (a new hash) and the chunk built again, a public one fails with
   * TASK_HASH_IN_USE. No transaction when no row is left.
   */
  build(rows: readonly PreparedRow[]): Promise<{ unsignedTx?: Awaited<ReturnType<typeof buildFunding>>["unsignedTx"]; rows: PreparedRow[] }>;
  /**
   * After a funding that reverted: the rows whose hash another wallet funded since, replaced (private) or failed
   * (public), and the chunk built again; undefined when no row was squatted (the revert has another cause).
   */
  afterRevert(
    rows: readonly PreparedRow[],
  ): Promise<{ unsignedTx?: Awaited<ReturnType<typeof buildFunding>>["unsignedTx"]; rows: PreparedRow[] } | undefined>;
}

export function chunkBuilder(
  ctx: PostingContext,
  recipients: Recipients,
  fail: (row: PreparedRow, error: Failure) => Promise<void>,
  onBriefKey: PostTasksOptions["onBriefKey"],
): ChunkBuilder {
  /** Re-encryptions per row index, over the whole run. */
  const reencrypted = new Map<number, number>();

  /** Replaces a squatted row: a fresh encryption for a private row (within the bound), else its failure. */
  async function replace(row: PreparedRow, squatter: string): Promise<PreparedRow | undefined> {
    const count = reencrypted.get(row.checked.index) ?? 0;
    if (row.checked.row.privacy === "private" && count < MAX_REENCRYPTIONS) {
      reencrypted.set(row.checked.index, count + 1);
      return prepareRow(ctx, row.checked, recipients, onBriefKey);
    }
    const why =
      row.checked.row.privacy === "public"
        ? "change the brief's text to post it"
        : `its hash was taken ${count + 1} times in a row; post it again later`;
    await fail(row, {
      code: "TASK_HASH_IN_USE",
      message: `Task hash ${row.params.taskHash} was funded first by ${squatter}: ${why}. Nothing was paid for this row.`,
    });
    return undefined;
  }

  async function build(rows: readonly PreparedRow[]) {
    let pending = [...rows];
    for (;;) {
      const taken: Array<{ row: PreparedRow; error: Failure }> = [];
      const built = await buildFunding(ctx, pending, async (row, error) => {
        if (TAKEN.has(error.code)) taken.push({ row, error });
        else await fail(row, error);
      });
      if (taken.length === 0) return built;
      const replaced: PreparedRow[] = [];
      for (const { row, error } of taken) {
        const squatter = await fundedByOther(ctx, row.params.taskHash);
        // Listed or funded by this wallet (an earlier run): never funded again here.
        if (!squatter) await fail(row, error);
        else {
          const fresh = await replace(row, squatter);
          if (fresh) replaced.push(fresh);
        }
      }
      if (replaced.length === 0) return built;
      pending = [...built.rows, ...replaced].sort((a, b) => a.checked.index - b.checked.index);
    }
  }

  async function afterRevert(rows: readonly PreparedRow[]) {
    const kept: PreparedRow[] = [];
    let squatted = false;
    for (const row of rows) {
      const squatter = await fundedByOther(ctx, row.params.taskHash);
      if (!squatter) {
        kept.push(row);
        continue;
      }
      squatted = true;
      const fresh = await replace(row, squatter);
      if (fresh) kept.push(fresh);
    }
    return squatted ? build(kept) : undefined;
  }

  return { build, afterRevert };
}

/** Whether a funding failure may come from a squatted hash: the escrow refused or reverted it. */
export function mayBeSquatted(error: unknown): boolean {
  return error instanceof ApiError && error.code === "TX_REVERTED";
}
