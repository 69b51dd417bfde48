import { Type, type Static } from "@sinclair/typebox";
import { TaskHashText, UnsignedTx } from "./common";
import { TaskStatusText } from "./tasks";

/** The rule engine's verdict. */
export const VerificationResult = Type.Object({ passed: Type.Boolean(), score: Type.Integer(), reasons: Type.Array(Type.String()) });
export type VerificationResult = Static<typeof VerificationResult>;

/** POST /api/v1/a2a/tasks/{taskHash}/verdict. */
export const VerdictBody = Type.Object(
  {
    passed: Type.Boolean(),
    score: Type.Optional(Type.Integer({ minimum: 0, maximum: 100, description: "Default 100 for a pass, 0 for a fail." })),
    reasons: Type.Optional(Type.Array(Type.String({ maxLength: 1000 }), { maxItems: 20 })),
    txHash: Type.Optional(
      Type.String({
        pattern: "^0x[0-9a-fA-F]{64}$",
        description:
          "`agent` mode, after the verifier's own completeVerification is mined: its hash. The service checks the receipt carries this verdict, records it with its reasons (shown as `verificationResult` in the task view) and answers once the indexer shows the settlement.",
      }),
    ),
  },
  { additionalProperties: false },
);
export type VerdictBody = Static<typeof VerdictBody>;

/** `manual`: settled by the service (`txHash`); `agent`: the call for the verifier's own wallet (`unsignedTx`). */
export const VerdictAnswer = Type.Object({
  taskHash: TaskHashText,
  status: TaskStatusText,
  txHash: Type.Optional(Type.String()),
  unsignedTx: Type.Optional(UnsignedTx),
});
export type VerdictAnswer = Static<typeof VerdictAnswer>;

/** POST /api/v1/verification/verify. */
export const VerifyBody = Type.Object(
  {
    taskHash: Type.Optional(Type.String({ maxLength: 100 })),
    taskId: Type.Optional(Type.Union([Type.Integer(), Type.String({ maxLength: 100 })])),
    verificationCriteria: Type.Optional(Type.Object({}, { additionalProperties: true })),
  },
  { additionalProperties: false },
);
export type VerifyBody = Static<typeof VerifyBody>;

export const VerifyAnswer = Type.Object({
  taskHash: TaskHashText,
  settled: Type.Boolean(),
  status: TaskStatusText,
  round: Type.Integer(),
  verificationResult: VerificationResult,
});
export type VerifyAnswer = Static<typeof VerifyAnswer>;
