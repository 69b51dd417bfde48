/** Listing funded tasks: the last phase of posting, and what `indexTask` finishes for a row left unlisted. */
import { ApiError } from "../errors";
import type { PostingContext } from "./context";
import type { IndexParams } from "./types";
import type { IndexAnswer, ListingOutcome } from "@market/core/api";

export type ListOutcome = { ok: true; status: "listed" | "already_listed" } | { ok: false; error: { code: string; message: string } };
type Listed = ListingOutcome;

/** Lists funded tasks (one receipt): each item succeeds or fails on its own. */
export async function listFunded(ctx: Pick<PostingContext, "http">, txHash: string, params: IndexParams[]): Promise<ListOutcome[]> {
  if (params.length === 1) {
    try {
      const { status } = await ctx.http.post<Listed>("/api/v1/a2a/tasks/index", params[0]);
      return [{ ok: true, status }];
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      return [{ ok: false, error: { code: error.code, message: error.message } }];
    }
  }
  const tasks = params.map(({ txHash: _tx, ...fields }) => fields);
  try {
    const { results } = await ctx.http.post<Extract<IndexAnswer, { results: unknown }>>("/api/v1/a2a/tasks/index", { txHash, tasks });
    return results.map(({ status }) => ({ ok: true, status }));
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    const details = error.code === "INDEX_FAILED" ? (error.body.details ?? []) : [];
    if (details.length !== params.length) return params.map(() => ({ ok: false, error: { code: error.code, message: error.message } }));
    return details.map((d) =>
      d.status === "failed"
        ? { ok: false, error: { code: String(d.code), message: String(d.message) } }
        : { ok: true, status: d.status === "already_listed" ? "already_listed" : "listed" },
    );
  }
}
