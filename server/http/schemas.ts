import { Type, type TSchema } from "@sinclair/typebox";
import { ERROR_CODES } from "../../core/errors";

/** `{ success: true, data }`: every successful answer. */
export const Envelope = <T extends TSchema>(data: T) =>
  Type.Object({ success: Type.Literal(true), data }, { additionalProperties: false });

export const ErrorEnvelope = Type.Object(
  {
    success: Type.Literal(false),
    error: Type.Object({
      code: Type.String({ enum: Object.keys(ERROR_CODES), description: "Stable code; see docs/errors.md." }),
      message: Type.String({ description: "Human-readable; may change." }),
      reason: Type.Optional(Type.String()),
      details: Type.Optional(
        Type.Array(
          Type.Object(
            {
              code: Type.Optional(Type.String()),
              field: Type.Optional(Type.String()),
              message: Type.String(),
            },
            { additionalProperties: true },
          ),
        ),
      ),
    }),
  },
  { $id: "ErrorEnvelope" },
);

/** Error answers every route may give, referenced from each route's response schema. */
export const errorResponses = (...statuses: number[]) =>
  Object.fromEntries([...new Set([400, 429, 500, ...statuses])].map((s) => [s, Type.Ref(ErrorEnvelope)]));

export const ok = <T>(data: T) => ({ success: true as const, data });

/** Ajv format of an address: mixed case must be a valid EIP-55 checksum (registered in buildApp). */
export const ADDRESS_FORMAT = "evm-address";
export const Address = Type.String({
  pattern: "^0x[0-9a-fA-F]{40}$",
  format: ADDRESS_FORMAT,
  description: "0x-prefixed 20-byte hex address; mixed case must be a valid EIP-55 checksum.",
});
export const Bytes32 = Type.String({ pattern: "^0x[0-9a-fA-F]{64}$", description: "0x-prefixed 32-byte hex." });
export const TxHash = Bytes32;
export const RawAmount = Type.String({ pattern: "^[0-9]{1,78}$", description: "Whole number of the token's smallest unit." });
export const PublicKey = Type.String({
  pattern: "^(0x)?04[0-9a-fA-F]{128}$",
  description: "Uncompressed secp256k1 public key, 130 hex characters (04 + x + y), without 0x.",
});

type Security = Array<Record<string, string[]>>;
/** Routes that need a credential: an API key or a session token. */
export const CREDENTIALS: Security = [{ apiKey: [] }, { session: [] }];
/** Routes where a credential is optional (it narrows or widens what is shown). */
export const OPTIONAL_CREDENTIALS: Security = [{}, ...CREDENTIALS];
