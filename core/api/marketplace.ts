import { Type, type Static } from "@sinclair/typebox";
import { Address, ChainNameString, TaskHashText, UnsignedTx } from "./common";
import { Privacy, TaskStatusText, VerificationModeString } from "./tasks";

/** Largest delivered output (characters). */
import { MAX_OUTPUT_CHARS } from "../limits";

export { MAX_OUTPUT_CHARS };

/** The task of a marketplace action (`/api/v1/a2a/tasks/{taskHash}/...`). */
export const TaskActionParams = Type.Object({ taskHash: Type.String({ maxLength: 100, description: "Task hash (0x + 64 hex)." }) });

/** Answer of accept: what an agent needs once a task is assigned to it, the brief (or how to open it) and how it is judged. */
export const Assigned = Type.Object({
  taskHash: TaskHashText,
  chain: ChainNameString,
  escrowAddress: Address,
  worker: Address,
  status: Type.Literal("assigned"),
  assignTx: Type.Union([Type.String(), Type.Null()]),
  deadline: Type.Integer({ description: "Unix milliseconds." }),
  rounds: Type.Integer(),
  brief: Type.Object({
    privacy: Privacy,
    publicBrief: Type.Optional(Type.String({ description: "The whole public brief." })),
    routingSummary: Type.Optional(Type.String()),
    rootHash: Type.Optional(Type.String({ description: "Download the ciphertext: GET /api/v1/storage/{rootHash}." })),
    wrappedKey: Type.Optional(Type.String({ description: "The brief key ECIES-wrapped to this agent (hex)." })),
  }),
  verification: Type.Object({
    mode: VerificationModeString,
    criteria: Type.Optional(Type.Object({}, { additionalProperties: true })),
    verifierAddress: Type.Optional(Address),
  }),
  alreadyHeld: Type.Optional(
    Type.Boolean({
      description:
        "True when the agent held this task (or had an accept of it under way) before this call: a retry after a lost answer, or another runtime working with the same key (spec: one runtime per key).",
    }),
  ),
});
export type Assigned = Static<typeof Assigned>;

export const BidBody = Type.Object({ message: Type.Optional(Type.String({ maxLength: 1000 })) }, { additionalProperties: false });
export const BidAnswer = Type.Object({ taskHash: TaskHashText, agent: Address, wrapped: Type.Boolean() });
export type BidAnswer = Static<typeof BidAnswer>;

/** Answer of GET .../bids (the poster only). */
export const BidsAnswer = Type.Object({
  bids: Type.Array(
    Type.Object({
      agent: Address,
      message: Type.Union([Type.String(), Type.Null()]),
      createdAt: Type.Integer(),
      publicKey: Type.Union([Type.String(), Type.Null()]),
      capabilities: Type.Array(Type.String()),
      reputation: Type.Integer(),
    }),
  ),
});
export type BidsAnswer = Static<typeof BidsAnswer>;

export const AddKeysBody = Type.Object(
  { wrappedKeys: Type.Record(Type.String({ pattern: "^0x[0-9a-fA-F]{40}$" }), Type.String({ pattern: "^(0x)?[0-9a-fA-F]{2,2048}$" })) },
  { additionalProperties: false },
);
export const AddKeysAnswer = Type.Object({ taskHash: TaskHashText, agents: Type.Array(Type.String()) });
export type AddKeysAnswer = Static<typeof AddKeysAnswer>;

export const DeclineAnswer = Type.Object({ taskHash: TaskHashText, declined: Type.Boolean() });
export type DeclineAnswer = Static<typeof DeclineAnswer>;

/**
 * The settlement calls a task's party sends from its own wallet, named as their routes are
 * (`POST /api/v1/a2a/tasks/{taskHash}/<action>`) and as the SDK's `settle({ action })` takes them (issue 24).
 */
export const SETTLEMENT_ACTIONS = ["cancel", "claim-timeout", "dispute", "release", "release-unjudged"] as const;
export type SettlementAction = (typeof SETTLEMENT_ACTIONS)[number];

/** What a settlement transaction will do once mined. */
export const SETTLEMENT_OUTCOMES = ["refund", "escalate", "dispute", "payout", "reopen"] as const;
export type SettlementOutcome = (typeof SETTLEMENT_OUTCOMES)[number];

/** Answer of the settlement actions (cancel, claim-timeout, dispute, release, release-unjudged): a call for the caller's own wallet. */
export const SettlementTx = Type.Object({
  taskHash: TaskHashText,
  outcome: Type.Union(SETTLEMENT_OUTCOMES.map((o) => Type.Literal(o))),
  unsignedTx: UnsignedTx,
});
export type SettlementTx = Static<typeof SettlementTx>;

export const DeliverBody = Type.Object({ output: Type.String({ minLength: 1, maxLength: MAX_OUTPUT_CHARS }) }, { additionalProperties: false });
export const Delivered = Type.Object({ round: Type.Integer(), resultHash: Type.String(), unsignedTx: UnsignedTx });
export type Delivered = Static<typeof Delivered>;

export const EvidenceBody = Type.Object({ signedTx: Type.String({ pattern: "^0x[0-9a-fA-F]+$", maxLength: 4000 }) }, { additionalProperties: false });
/** Answer of evidence and rebroadcast. */
export const EvidenceSent = Type.Object({ txHash: Type.String() });
export type EvidenceSent = Static<typeof EvidenceSent>;

export const FinalizeBody = Type.Object({ txHash: Type.Optional(Type.String({ pattern: "^0x[0-9a-fA-F]{64}$" })) }, { additionalProperties: false });
/** Answer of finalize: the round's status and, once judged, its verdict. */
export const Finalized = Type.Object({
  taskHash: TaskHashText,
  round: Type.Integer(),
  status: TaskStatusText,
  verificationResult: Type.Optional(Type.Object({ passed: Type.Boolean(), score: Type.Integer(), reasons: Type.Array(Type.String()) })),
  roundsLeft: Type.Integer(),
  txHash: Type.Optional(Type.String()),
});
export type Finalized = Static<typeof Finalized>;
