/**
 * The two-step spend of MCP spending calls: a call without `confirm` answers a quote and spends nothing; the confirm
 * call repeats the same arguments with `confirm: true` and the `quoteId`. Quotes live on the service
 * (POST /api/v1/mcp/quotes), so `market mcp` and the remote /mcp endpoint share them and a used quote stays used
 * across restarts of either. A quote is tied to the fingerprint of the call: its arguments and the facts the quote
 * showed (what is paid, from which wallet, on which escrow, whether the balance covers it). A confirm whose
 * fingerprint differs is `QUOTE_MISMATCH`; a missing, used, expired or foreign quote is `QUOTE_REQUIRED`.
 */
import { createHash } from "node:crypto";
import type { Http } from "../http";
import type { QuoteCreated, QuoteRedeemed } from "@market/core/api";

/** JSON with object keys sorted, so the same arguments always hash alike. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

/** The fingerprint of a spending call: its tool, its arguments without `confirm` and `quoteId`, and the quoted facts. */
export function fingerprintOf(tool: string, args: Record<string, unknown>, facts: Record<string, unknown>): string {
  const { confirm: _confirm, quoteId: _quoteId, ...rest } = args;
  return createHash("sha256")
    .update(canonicalJson({ tool, args: rest, facts }))
    .digest("hex");
}

export interface QuoteStore {
  create(tool: string, fingerprint: string, quote: Record<string, unknown>): Promise<QuoteCreated>;
  /** Uses the quote once; throws `QUOTE_REQUIRED` or `QUOTE_MISMATCH` (nothing is used then). */
  redeem(quoteId: string, tool: string, fingerprint: string): Promise<QuoteRedeemed>;
}

/** The service's quote store, as the API key's wallet. */
export function serviceQuotes(http: Http): QuoteStore {
  return {
    create: (tool, fingerprint, quote) => http.post<QuoteCreated>("/api/v1/mcp/quotes", { tool, fingerprint, quote }),
    redeem: (quoteId, tool, fingerprint) =>
      http.post<QuoteRedeemed>(`/api/v1/mcp/quotes/${encodeURIComponent(quoteId)}/redeem`, { tool, fingerprint }),
  };
}
