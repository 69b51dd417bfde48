/**
 * The quote store of MCP spending calls (sdk/src/mcp/quotes.ts says what a quote binds). A quote belongs to the
 * wallet that asked for it, is used at most once (one conditional UPDATE, so two confirms racing cannot both win) and
 * only within 10 minutes of the service's clock. Rows stay after use, so a restart never revives a used quote;
 * quotes expired for a day are swept.
 */
import { randomBytes } from "node:crypto";
import type { Db } from "../db";
import type { Clock } from "../http/types";
import { MarketError } from "@market/core/errors";
import { DAY_SECONDS, MCP_QUOTE_TTL_MS } from "@market/core/limits";
import { rateLimited } from "../http/rate-limit";

/**
 * Quotes one wallet may ask for within a quote's lifetime, used or not (a quote is a row kept a day past its expiry:
 * asking costs the service storage, and using a quote at once must not make room for more).
 */
const MAX_QUOTES_PER_TTL = 100;

export type QuoteStore = ReturnType<typeof createQuoteStore>;

export function createQuoteStore({ db, now }: { db: Db; now: Clock }) {
  const sameWallet = (wallet: string) => wallet.toLowerCase();

  return {
    async create(wallet: string, tool: string, fingerprint: string, quote: unknown): Promise<{ quoteId: string; expiresAt: number }> {
      const at = now();
      await db
        .deleteFrom("mcp_quotes")
        .where("expires_at", "<", at - DAY_SECONDS * 1000)
        .execute();
      const recent = await db
        .selectFrom("mcp_quotes")
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .where("wallet", "=", sameWallet(wallet))
        .where("expires_at", ">", at)
        .executeTakeFirstOrThrow();
      if (Number(recent.n) >= MAX_QUOTES_PER_TTL) throw rateLimited(Math.ceil(MCP_QUOTE_TTL_MS / 1000), "quotes");
      const quoteId = `q_${randomBytes(16).toString("hex")}`;
      const expiresAt = at + MCP_QUOTE_TTL_MS;
      await db
        .insertInto("mcp_quotes")
        .values({
          id: quoteId,
          wallet: sameWallet(wallet),
          tool,
          fingerprint,
          quote: JSON.stringify(quote),
          created_at: at,
          expires_at: expiresAt,
          used_at: null,
        })
        .execute();
      return { quoteId, expiresAt };
    },

    /** Uses the quote; `QUOTE_REQUIRED` (missing, another wallet's, used, expired) or `QUOTE_MISMATCH` leave it as it was. */
    async redeem(wallet: string, quoteId: string, tool: string, fingerprint: string): Promise<{ quoteId: string; usedAt: number }> {
      const at = now();
      const used = await db
        .updateTable("mcp_quotes")
        .set({ used_at: at })
        .where("id", "=", quoteId)
        .where("wallet", "=", sameWallet(wallet))
        .where("tool", "=", tool)
        .where("fingerprint", "=", fingerprint)
        .where("used_at", "is", null)
        .where("expires_at", ">", at)
        .executeTakeFirst();
      if (Number(used.numUpdatedRows) === 1) return { quoteId, usedAt: at };
      const row = await db.selectFrom("mcp_quotes").selectAll().where("id", "=", quoteId).executeTakeFirst();
      if (!row || row.wallet !== sameWallet(wallet))
        throw new MarketError("QUOTE_REQUIRED", `No quote ${quoteId} for this wallet: ask for a quote first.`);
      if (row.used_at !== null) throw new MarketError("QUOTE_REQUIRED", `Quote ${quoteId} was used already: ask for a new quote.`);
      if (Number(row.expires_at) <= at)
        throw new MarketError("QUOTE_REQUIRED", `Quote ${quoteId} expired (quotes last 10 minutes): ask for a new one.`);
      throw new MarketError(
        "QUOTE_MISMATCH",
        `The call differs from quote ${quoteId} (its arguments, price or balance-relevant facts changed): ask for a new quote.`,
      );
    },
  };
}
