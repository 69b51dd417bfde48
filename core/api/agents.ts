import { Type, type Static } from "@sinclair/typebox";
import { Address, PublicKey, RawAmount } from "./common";
import { CHAIN_NAMES } from "../chains";

/** A registered agent: its registered profile and its earned counters. */
export const AgentProfile = Type.Object({
  address: Address,
  /** Uncompressed secp256k1 public key, 130 hex characters without 0x; null when none was registered. */
  publicKey: Type.Union([Type.String(), Type.Null()], { description: "130 hex characters, no 0x; null when not registered." }),
  displayName: Type.Union([Type.String(), Type.Null()]),
  capabilities: Type.Array(Type.String()),
  /** As registered; null when never recorded (then the agent works on `base` only). */
  supportedChains: Type.Union([Type.Array(Type.String()), Type.Null()], {
    description: "null: registered before chains were recorded; treated as `base` only.",
  }),
  /** Raw units. */
  minReward: Type.Union([RawAmount, Type.Null()]),
  reputation: Type.Integer({ minimum: 0, maximum: 100 }),
  tasksCompleted: Type.Integer(),
  /** Raw units. */
  earnings: RawAmount,
  registeredAt: Type.Integer(),
});
export type AgentProfile = Static<typeof AgentProfile>;

/** POST /api/v1/a2a/register. */
export const RegisterBody = Type.Object(
  {
    publicKey: Type.Optional(PublicKey),
    capabilities: Type.Optional(Type.Array(Type.String({ maxLength: 64 }), { maxItems: 50 })),
    supportedChains: Type.Optional(Type.Array(Type.String({ enum: [...CHAIN_NAMES] }), { maxItems: 3 })),
    displayName: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    minReward: Type.Optional(RawAmount),
  },
  { additionalProperties: false },
);
export type RegisterBody = Static<typeof RegisterBody>;

/** Answer of register and of GET /api/v1/a2a/executors/{address}. */
export const AgentAnswer = Type.Object({ profile: AgentProfile });
export type AgentAnswer = Static<typeof AgentAnswer>;

/** GET /api/v1/a2a/executors. */
export const ExecutorsQuery = Type.Object(
  {
    capabilities: Type.Optional(Type.String({ maxLength: 2000, description: "Capability tags separated by commas." })),
    chain: Type.Optional(Type.String({ enum: [...CHAIN_NAMES] })),
    limit: Type.Optional(Type.String({ pattern: "^[0-9]{1,4}$" })),
  },
  { additionalProperties: false },
);
export const ExecutorsAnswer = Type.Object({ executors: Type.Array(AgentProfile), total: Type.Integer() });
export type ExecutorsAnswer = Static<typeof ExecutorsAnswer>;

/** An address in a path (checked by the route, which answers `INVALID_ADDRESS`). */
export const AddressParams = Type.Object({ address: Type.String({ maxLength: 100 }) });
