import { Type, type Static } from "@sinclair/typebox";
import { Address } from "./common";

/** POST /api/v1/auth/nonce. */
export const NonceBody = Type.Object(
  {
    address: Address,
    purpose: Type.Optional(
      Type.Union([Type.Literal("sign-in"), Type.Literal("link")], {
        description: "What the message will be used for (default `sign-in`); `link` for POST /api/v1/auth/link. Each is accepted only there.",
      }),
    ),
  },
  { additionalProperties: false },
);
export type NoncePurpose = "sign-in" | "link";
export const NonceAnswer = Type.Object({ nonce: Type.String(), message: Type.String(), expiresAt: Type.Integer() });
export type NonceAnswer = Static<typeof NonceAnswer>;

/** An EIP-4361 message and its signature (sign-in, wallet link). */
export const SignedMessage = Type.Object(
  {
    message: Type.String({ minLength: 1, maxLength: 4000, description: "The EIP-4361 message, exactly as signed." }),
    signature: Type.String({ pattern: "^0x[0-9a-fA-F]{130}$" }),
  },
  { additionalProperties: false },
);
export type SignedMessage = Static<typeof SignedMessage>;

/** Answer of POST /api/v1/auth/verify. */
export const Session = Type.Object({ token: Type.String(), expiresAt: Type.Integer(), address: Address, accountId: Type.Integer() });
export type Session = Static<typeof Session>;

/** Answer of POST /api/v1/auth/link. */
export const LinkedWallets = Type.Object({ wallets: Type.Array(Address) });
export type LinkedWallets = Static<typeof LinkedWallets>;

/** POST /api/v1/api-keys. */
export const CreateApiKeyBody = Type.Object({ name: Type.String({ minLength: 1, maxLength: 100 }) }, { additionalProperties: false });
export const CreatedApiKey = Type.Object({
  id: Type.Integer(),
  key: Type.String({ description: "The key itself: shown only in this answer." }),
  prefix: Type.String(),
  name: Type.String(),
  wallet: Address,
  createdAt: Type.Integer(),
});
export type CreatedApiKey = Static<typeof CreatedApiKey>;

/** An API key as listed: never the key itself. */
export const ApiKeyInfo = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  prefix: Type.String({ description: "First characters of the key, to tell keys apart." }),
  wallet: Address,
  createdAt: Type.Integer(),
  revokedAt: Type.Union([Type.Integer(), Type.Null()]),
  lastUsedAt: Type.Union([Type.Integer(), Type.Null()]),
});
export type ApiKeyInfo = Static<typeof ApiKeyInfo>;

export const ApiKeyList = Type.Object({ keys: Type.Array(ApiKeyInfo) });
export type ApiKeyList = Static<typeof ApiKeyList>;

export const ApiKeyParams = Type.Object({ id: Type.String({ pattern: "^[0-9]{1,12}$" }) });
export const RevokedApiKey = Type.Object({
  /** False when the key was revoked already (a second revoke changes nothing). */
  revoked: Type.Boolean(),
});
export type RevokedApiKey = Static<typeof RevokedApiKey>;
export const RevokedApiKeys = Type.Object({
  /** API keys revoked. */
  revoked: Type.Integer(),
  /** Sign-in sessions ended, the caller's own included. */
  sessionsRevoked: Type.Integer(),
});
export type RevokedApiKeys = Static<typeof RevokedApiKeys>;

/** Answer of POST /api/v1/auth/logout. */
export const LoggedOut = Type.Object({ loggedOut: Type.Literal(true) });
export type LoggedOut = Static<typeof LoggedOut>;

/** Answer of GET /api/v1/api-keys/whoami. */
export const WhoAmI = Type.Object({
  addresses: Type.Array(Address),
  accountId: Type.Integer(),
  via: Type.Union([Type.Literal("apiKey"), Type.Literal("session"), Type.Literal("hostedAgent")]),
  keyId: Type.Optional(Type.Integer()),
});
export type WhoAmI = Static<typeof WhoAmI>;
