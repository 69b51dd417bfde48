import { Type, type Static, type TSchema } from "@sinclair/typebox";
import { ERROR_CODES } from "../errors";
import type { ChainName } from "../chains";

/**
 * Shapes every part of the API shares: the answer envelopes, addresses, hashes and amounts, and their branded types.
 * A brand marks a string whose format was checked; the constructors below check it (cheaply: a pattern, no checksum).
 */
declare const brand: unique symbol;
type Branded<T, Name extends string> = T & { readonly [brand]: Name };

/** A task hash as the API answers it: 0x + 64 hex digits, lowercase. */
export type TaskHash = Branded<string, "TaskHash">;
/** A 0x-prefixed 20-byte hex address (checksummed when the API answers it). */
export type Address = Branded<string, "Address">;
/** A whole number of the token's smallest unit, as decimal digits. */
export type RawAmount = Branded<string, "RawAmount">;

const TASK_HASH = /^0x[0-9a-f]{64}$/;
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const RAW_AMOUNT = /^[0-9]{1,78}$/;

export const isTaskHash = (value: unknown): value is TaskHash => typeof value === "string" && TASK_HASH.test(value);
export const isAddress = (value: unknown): value is Address => typeof value === "string" && ADDRESS.test(value);
export const isRawAmount = (value: unknown): value is RawAmount => typeof value === "string" && RAW_AMOUNT.test(value);

/** A task hash in the API's form (lowercase); throws a TypeError for anything but 0x + 64 hex digits. */
export function asTaskHash(text: string): TaskHash {
  const lower = text.toLowerCase();
  if (!isTaskHash(lower)) throw new TypeError(`not a task hash: ${JSON.stringify(text)}`);
  return lower;
}

/** An address as given (its case is kept); throws a TypeError for anything but 0x + 40 hex digits. */
export function asAddress(text: string): Address {
  if (!isAddress(text)) throw new TypeError(`not an address: ${JSON.stringify(text)}`);
  return text;
}

/** Raw units as decimal digits; throws a TypeError for a negative, fractional or non-numeric amount. */
export function asRawAmount(value: bigint | string): RawAmount {
  const text = typeof value === "bigint" ? value.toString() : value;
  if (!isRawAmount(text)) throw new TypeError(`not a raw amount: ${JSON.stringify(text)}`);
  return text;
}

/** Ajv format of an address: mixed case must be a valid EIP-55 checksum (the server registers its check). */
export const ADDRESS_FORMAT = "evm-address";
export const Address = Type.Unsafe<Address>(
  Type.String({
    pattern: "^0x[0-9a-fA-F]{40}$",
    format: ADDRESS_FORMAT,
    description: "0x-prefixed 20-byte hex address; mixed case must be a valid EIP-55 checksum.",
  }),
);
export const Bytes32 = Type.String({ pattern: "^0x[0-9a-fA-F]{64}$", description: "0x-prefixed 32-byte hex." });
export const TxHash = Bytes32;
/** A task hash the API answers, with the pattern of `Bytes32`. */
export const TaskHash = Type.Unsafe<TaskHash>(Bytes32);
/** A task hash the API answers where the schema has always said just `string`. */
export const TaskHashText = Type.Unsafe<TaskHash>(Type.String());
export const RawAmount = Type.Unsafe<RawAmount>(Type.String({ pattern: "^[0-9]{1,78}$", description: "Whole number of the token's smallest unit." }));
export const PublicKey = Type.String({
  pattern: "^(0x)?04[0-9a-fA-F]{128}$",
  description: "Uncompressed secp256k1 public key, 130 hex characters (04 + x + y), without 0x.",
});
/** A chain's name as answered (`arc`, `0g`, `base`); the schema is a plain string. */
export const ChainNameString = Type.Unsafe<ChainName>(Type.String());

/** `{ success: true, data }`: every successful answer. */
export const Envelope = <T extends TSchema>(data: T) => Type.Object({ success: Type.Literal(true), data }, { additionalProperties: false });

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

/** A transaction the API builds for a user's wallet to sign; clients check it is exactly the call they asked for. */
export const UnsignedTx = Type.Object({
  chainId: Type.Integer(),
  from: Address,
  to: Address,
  data: Type.String(),
  value: Type.String(),
});
export type UnsignedTx = Static<typeof UnsignedTx>;
