/** The totals shown before a run asks to pay (spec: "Bulk run behaviour", step 2), for every host of the engine. */
import { BATCH_CHUNK_SIZE } from "@market/core/limits";
import type { Settlement } from "../../chain";
import type { RunRow } from "./rows";

export interface Totals {
  tasks: number;
  totalRaw: bigint;
  public: { count: number; raw: bigint };
  private: { count: number; raw: bigint };
  fundings: number;
  /** Tasks per funding transaction. */
  perTransaction: number;
  batch: boolean;
}

/** What posting these rows costs, funded the way the SDK funds them (chunks when the escrow has batch creation). */
export function totalsOf(rows: readonly Pick<RunRow, "row">[], settlement: Settlement, chunk?: number): Totals {
  const { supported, maxBatch } = settlement.batchCreate;
  const perTransaction = supported ? Math.max(1, Math.min(chunk ?? BATCH_CHUNK_SIZE, maxBatch)) : 1;
  const split = (privacy: "public" | "private") => {
    const matching = rows.filter((r) => r.row.privacy === privacy);
    return { count: matching.length, raw: matching.reduce((sum, r) => sum + r.row.amount, 0n) };
  };
  const pub = split("public");
  const priv = split("private");
  return {
    tasks: rows.length,
    totalRaw: pub.raw + priv.raw,
    public: pub,
    private: priv,
    fundings: Math.ceil(rows.length / perTransaction),
    perTransaction,
    batch: supported,
  };
}
