import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { Auth } from "./index";
import { authenticated, principalOf, signedIn } from "./hook";
import { CREDENTIALS, SESSION, errorResponses, ok } from "../http/schemas";
import { MarketError } from "@market/core/errors";
import {
  ApiKeyList,
  ApiKeyParams,
  CreateApiKeyBody,
  CreatedApiKey,
  Envelope,
  LinkedWallets,
  LoggedOut,
  NonceAnswer,
  NonceBody,
  RevokedApiKey,
  RevokedApiKeys,
  Session,
  SignedMessage,
  WhoAmI,
  asAddress,
} from "@market/core/api";

/** The prefix app.ts registers `sessionRoutes` under. */
export const SESSION_PREFIX = "/api/v1/auth";
/** The prefix app.ts registers `apiKeyRoutes` under. */
export const API_KEYS_PREFIX = "/api/v1/api-keys";

/**
 * Wallet sign-in (EIP-4361) and sessions, under SESSION_PREFIX: signing in is public; linking a wallet and signing out
 * are authenticated by their hook (signing out by a signed-in account, never a hosted agent's token).
 */
export const sessionRoutes: FastifyPluginAsyncTypebox<{ auth: Auth }> = async (app, { auth }) => {
  const { sessions } = auth;

  app.post(
    "/nonce",
    {
      schema: {
        tags: ["auth"],
        summary: "Start a wallet sign-in: a nonce and the EIP-4361 message to sign",
        body: NonceBody,
        response: { 200: Envelope(NonceAnswer), ...errorResponses() },
      },
    },
    async (request) => ok(await sessions.issueNonce(request.body.address, request.body.purpose)),
  );

  app.post(
    "/verify",
    {
      schema: {
        tags: ["auth"],
        summary: "Finish a wallet sign-in: a session token (24 h) for `Authorization: Bearer <token>`",
        body: SignedMessage,
        response: { 200: Envelope(Session), ...errorResponses(401) },
      },
    },
    async (request) => {
      const session = await sessions.signIn(request.body.message, request.body.signature);
      return ok({ ...session, address: asAddress(session.address) });
    },
  );

  app.post(
    "/link",
    {
      onRequest: authenticated(auth),
      schema: {
        tags: ["auth"],
        summary: "Link another wallet to the signed-in account (signed by that wallet)",
        security: SESSION,
        body: SignedMessage,
        response: { 200: Envelope(LinkedWallets), ...errorResponses(401, 403, 409) },
      },
    },
    async (request) => {
      const principal = principalOf(request);
      if (principal.kind !== "session") throw new MarketError("SESSION_REQUIRED", "Linking a wallet needs a signed-in session.");
      const wallets = await sessions.linkWallet(principal, request.body.message, request.body.signature);
      return ok({ wallets: wallets.map(asAddress) });
    },
  );

  app.post(
    "/logout",
    {
      onRequest: signedIn(auth),
      schema: {
        tags: ["auth"],
        summary: "End the presented sign-in session (its token stops working at once)",
        security: SESSION,
        response: { 200: Envelope(LoggedOut), ...errorResponses(401, 403) },
      },
    },
    async (request) => {
      const principal = principalOf(request);
      if (principal.kind !== "session" || principal.sessionId === undefined) {
        throw new MarketError("SESSION_REQUIRED", "Logout ends a session; revoke an API key with DELETE /api/v1/api-keys/{id}.");
      }
      await sessions.revokeSession(principal.accountId, principal.sessionId);
      return ok({ loggedOut: true as const });
    },
  );
};

/**
 * API keys, under API_KEYS_PREFIX, each route authenticated by its hook: managing keys needs a signed-in account
 * (never a hosted agent's token); `whoami` any credential.
 */
export const apiKeyRoutes: FastifyPluginAsyncTypebox<{ auth: Auth }> = async (app, { auth }) => {
  const { sessions, apiKeys } = auth;
  const requireAuth = authenticated(auth);
  const requireAccount = signedIn(auth);

  app.post(
    "/",
    {
      onRequest: requireAccount,
      schema: {
        tags: ["auth"],
        summary: "Create an API key (shown once) acting as the account's first linked wallet",
        description: "Needs a signed-in session or another API key of the account; a hosted agent's token gets `HOSTED_AGENT_TOKEN_REFUSED`.",
        security: CREDENTIALS,
        body: CreateApiKeyBody,
        response: { 200: Envelope(CreatedApiKey), ...errorResponses(401, 403) },
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const created = await apiKeys.createApiKey(principal.accountId, request.body.name);
      return ok({ ...created, wallet: asAddress(created.wallet) });
    },
  );

  app.get(
    "/",
    {
      onRequest: requireAccount,
      schema: {
        tags: ["auth"],
        summary: "The account's API keys (never the keys themselves)",
        security: CREDENTIALS,
        response: { 200: Envelope(ApiKeyList), ...errorResponses(401) },
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const rows = await apiKeys.listApiKeys(principal.accountId);
      return ok({
        keys: rows.map((r) => ({
          id: r.id,
          name: r.name,
          prefix: r.key_prefix,
          wallet: asAddress(r.wallet_address),
          createdAt: r.created_at,
          revokedAt: r.revoked_at,
          lastUsedAt: r.last_used_at,
        })),
      });
    },
  );

  app.delete(
    "/:id",
    {
      onRequest: requireAccount,
      schema: {
        tags: ["auth"],
        summary: "Revoke one API key of the account",
        security: CREDENTIALS,
        params: ApiKeyParams,
        response: { 200: Envelope(RevokedApiKey), ...errorResponses(401, 404) },
      },
    },
    async (request) => {
      const principal = principalOf(request);
      return ok({ revoked: await apiKeys.revokeApiKey(principal.accountId, Number(request.params.id)) });
    },
  );

  app.post(
    "/revoke-all",
    {
      onRequest: requireAccount,
      schema: {
        tags: ["auth"],
        summary: "Revoke every API key and end every sign-in session of the account (after a leak)",
        security: CREDENTIALS,
        response: { 200: Envelope(RevokedApiKeys), ...errorResponses(401) },
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const revoked = await apiKeys.revokeAllApiKeys(principal.accountId);
      return ok({ revoked, sessionsRevoked: await sessions.revokeAllSessions(principal.accountId) });
    },
  );

  app.get(
    "/whoami",
    {
      onRequest: requireAuth,
      schema: {
        tags: ["auth"],
        summary: "The wallet address(es) the credential acts as; for an API key just one",
        description:
          "An API key: the one wallet it acts as. A session: every wallet linked to the account, the wallet that signed in first (the one it acts as), then the others in the order they were linked.",
        security: CREDENTIALS,
        response: { 200: Envelope(WhoAmI), ...errorResponses(401) },
      },
    },
    async (request) => {
      const p = principalOf(request);
      const linked = p.kind === "session" ? await auth.accounts.walletsOf(p.accountId) : [];
      const addresses = [p.wallet, ...linked.filter((w) => w !== p.wallet)].map(asAddress);
      return ok({ addresses, accountId: p.accountId, via: p.kind, ...(p.keyId === undefined ? {} : { keyId: p.keyId }) });
    },
  );
};
