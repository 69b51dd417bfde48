import { Type } from "@sinclair/typebox";
import type { App, Context } from "../app";
import { Address, Envelope, errorResponses, ok, CREDENTIALS } from "../http/schemas";
import { MarketError } from "../../core/errors";


const KeyInfo = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  prefix: Type.String({ description: "First characters of the key, to tell keys apart." }),
  wallet: Address,
  createdAt: Type.Integer(),
  revokedAt: Type.Union([Type.Integer(), Type.Null()]),
  lastUsedAt: Type.Union([Type.Integer(), Type.Null()]),
});

const SignedMessage = Type.Object(
  {
    message: Type.String({ minLength: 1, maxLength: 4000, description: "The EIP-4361 message, exactly as signed." }),
    signature: Type.String({ pattern: "^0x[0-9a-fA-F]{130}$" }),
  },
  { additionalProperties: false },
);

/** Wallet sign-in (EIP-4361), sessions and API keys. */
export function authRoutes(app: App, { auth }: Context) {
  app.post(
    "/api/v1/auth/nonce",
    {
      schema: {
        tags: ["auth"],
        summary: "Start a wallet sign-in: a nonce and the EIP-4361 message to sign",
        body: Type.Object({ address: Address }, { additionalProperties: false }),
        response: {
          200: Envelope(Type.Object({ nonce: Type.String(), message: Type.String(), expiresAt: Type.Integer() })),
          ...errorResponses(),
        },
      },
    },
    async (request) => ok(await auth.issueNonce(request.body.address)),
  );

  app.post(
    "/api/v1/auth/verify",
    {
      schema: {
        tags: ["auth"],
        summary: "Finish a wallet sign-in: a session token (24 h) for `Authorization: Bearer <token>`",
        body: SignedMessage,
        response: {
          200: Envelope(Type.Object({ token: Type.String(), expiresAt: Type.Integer(), address: Address, accountId: Type.Integer() })),
          ...errorResponses(401),
        },
      },
    },
    async (request) => ok(await auth.signIn(request.body.message, request.body.signature)),
  );

  app.post(
    "/api/v1/auth/link",
    {
      schema: {
        tags: ["auth"],
        summary: "Link another wallet to the signed-in account (signed by that wallet)",
        security: [{ session: [] }] as Array<Record<string, string[]>>,
        body: SignedMessage,
        response: { 200: Envelope(Type.Object({ wallets: Type.Array(Address) })), ...errorResponses(401, 403, 409) },
      },
    },
    async (request) => {
      const principal = await auth.required(request);
      if (principal.kind !== "session") throw new MarketError("SESSION_REQUIRED", "Linking a wallet needs a signed-in session.");
      return ok({ wallets: await auth.linkWallet(principal, request.body.message, request.body.signature) });
    },
  );

  app.post(
    "/api/v1/api-keys",
    {
      schema: {
        tags: ["auth"],
        summary: "Create an API key (shown once) acting as the account's first linked wallet",
        description: "Needs a signed-in session or another API key of the account.",
        security: CREDENTIALS,
        body: Type.Object({ name: Type.String({ minLength: 1, maxLength: 100 }) }, { additionalProperties: false }),
        response: {
          200: Envelope(
            Type.Object({
              id: Type.Integer(),
              key: Type.String({ description: "The key itself: shown only in this answer." }),
              prefix: Type.String(),
              name: Type.String(),
              wallet: Address,
              createdAt: Type.Integer(),
            }),
          ),
          ...errorResponses(401, 403),
        },
      },
    },
    async (request) => {
      const principal = await auth.required(request);
      return ok(await auth.createApiKey(principal.accountId, request.body.name));
    },
  );

  app.get(
    "/api/v1/api-keys",
    {
      schema: {
        tags: ["auth"],
        summary: "The account's API keys (never the keys themselves)",
        security: CREDENTIALS,
        response: { 200: Envelope(Type.Object({ keys: Type.Array(KeyInfo) })), ...errorResponses(401) },
      },
    },
    async (request) => {
      const principal = await auth.required(request);
      const rows = await auth.listApiKeys(principal.accountId);
      return ok({
        keys: rows.map((r) => ({
          id: r.id,
          name: r.name,
          prefix: r.key_prefix,
          wallet: r.wallet_address,
          createdAt: r.created_at,
          revokedAt: r.revoked_at,
          lastUsedAt: r.last_used_at,
        })),
      });
    },
  );

  app.delete(
    "/api/v1/api-keys/:id",
    {
      schema: {
        tags: ["auth"],
        summary: "Revoke one API key of the account",
        security: CREDENTIALS,
        params: Type.Object({ id: Type.String({ pattern: "^[0-9]{1,12}$" }) }),
        response: { 200: Envelope(Type.Object({ revoked: Type.Boolean() })), ...errorResponses(401, 404) },
      },
    },
    async (request) => {
      const principal = await auth.required(request);
      await auth.revokeApiKey(principal.accountId, Number(request.params.id));
      return ok({ revoked: true });
    },
  );

  app.post(
    "/api/v1/api-keys/revoke-all",
    {
      schema: {
        tags: ["auth"],
        summary: "Revoke every API key of the account (after a leak)",
        security: CREDENTIALS,
        response: { 200: Envelope(Type.Object({ revoked: Type.Integer() })), ...errorResponses(401) },
      },
    },
    async (request) => {
      const principal = await auth.required(request);
      return ok({ revoked: await auth.revokeAllApiKeys(principal.accountId) });
    },
  );

  app.get(
    "/api/v1/api-keys/whoami",
    {
      schema: {
        tags: ["auth"],
        summary: "The wallet address(es) the credential acts as; for an API key just one",
        security: CREDENTIALS,
        response: {
          200: Envelope(
            Type.Object({
              addresses: Type.Array(Address),
              accountId: Type.Integer(),
              via: Type.Union([Type.Literal("apiKey"), Type.Literal("session")]),
              keyId: Type.Optional(Type.Integer()),
            }),
          ),
          ...errorResponses(401),
        },
      },
    },
    async (request) => {
      const p = await auth.required(request);
      return ok({ addresses: [p.wallet], accountId: p.accountId, via: p.kind, ...(p.keyId === undefined ? {} : { keyId: p.keyId }) });
    },
  );
}
