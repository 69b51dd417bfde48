import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { authenticated, principalOf, type Authenticate } from "../auth";
import { errorResponses, ok, CREDENTIALS } from "../http/schemas";
import type { QuoteStore } from "./quotes";
import { Envelope, QuoteCreateBody, QuoteCreated, QuoteParams, QuoteRedeemBody, QuoteRedeemed } from "@market/core/api";

/** The prefix app.ts registers `quoteRoutes` under. */
export const QUOTES_PREFIX = "/api/v1/mcp/quotes";

/** The quotes of MCP spending calls, for the caller's wallet: every route authenticated by the plugin's hook. */
export const quoteRoutes: FastifyPluginAsyncTypebox<{ auth: Authenticate; quotes: QuoteStore }> = async (app, { auth, quotes }) => {
  app.addHook("onRequest", authenticated(auth));
  app.post(
    "/",
    {
      schema: {
        tags: ["mcp"],
        summary: "Store the quote of an MCP spending call (single-use, valid 10 minutes)",
        description: "Used by `market mcp` and the remote /mcp endpoint: the confirm call redeems the quote with the same fingerprint.",
        security: CREDENTIALS,
        body: QuoteCreateBody,
        response: { 200: Envelope(QuoteCreated), ...errorResponses(401) },
      },
    },
    async (request) => {
      const { wallet } = principalOf(request);
      const { tool, fingerprint, quote } = request.body;
      return ok(await quotes.create(wallet, tool, fingerprint, quote));
    },
  );

  app.post(
    "/:quoteId/redeem",
    {
      schema: {
        tags: ["mcp"],
        summary: "Use a quote once, for the call it was made for",
        description:
          "`QUOTE_REQUIRED` when the quote is unknown, another wallet's, used or expired; `QUOTE_MISMATCH` when the fingerprint differs. " +
          "Either way the quote is left as it was.",
        security: CREDENTIALS,
        params: QuoteParams,
        body: QuoteRedeemBody,
        response: { 200: Envelope(QuoteRedeemed), ...errorResponses(401, 409) },
      },
    },
    async (request) => {
      const { wallet } = principalOf(request);
      const { tool, fingerprint } = request.body;
      return ok(await quotes.redeem(wallet, request.params.quoteId, tool, fingerprint));
    },
  );
};
