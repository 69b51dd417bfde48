import { Type, type Static } from "@sinclair/typebox";
import { Address, Bytes32, RawAmount, TxHash } from "../http/schemas";
import { TASK_STATUSES } from "../../core/status";
import { MAX_ROUTING_SUMMARY_CHARS, MAX_ZONE_CHARS } from "../../core/limits";

/** Largest public brief the API accepts (the whole text is hashed; browse shows the first 4,000 characters). */
export const MAX_PUBLIC_BRIEF_CHARS = 100_000;

/** The task properties a poster sends when building the funding transaction and again when listing. */
export const TaskFields = {
  taskHash: Bytes32,
  chain: Type.Optional(Type.String({ maxLength: 16, description: "Default `arc`, the only chain new tasks are posted on." })),
  token: Type.Optional(Address),
  locationZone: Type.Optional(Type.String({ maxLength: MAX_ZONE_CHARS, description: "Default `global`." })),
  targetExecutorType: Type.Optional(Type.String({ maxLength: 32 })),
  verificationMode: Type.String({ maxLength: 16, description: "`auto`, `manual` or `agent`." }),
  verificationCriteria: Type.Optional(
    Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()], {
      description: "Required for `auto`: at least one of min_length, max_length, contains_keywords, regex_pattern; optional pass_threshold, regex_flags.",
    }),
  ),
  verifierAddress: Type.Optional(Address),
  requiredCapabilities: Type.Optional(Type.Array(Type.String({ maxLength: 64 }), { maxItems: 20 })),
  rootHash: Type.Optional(Type.String({ maxLength: 200, description: "rootHash of the uploaded ciphertext (private tasks)." })),
  wrappedKeys: Type.Optional(
    Type.Record(Type.String(), Type.String({ pattern: "^(0x)?[0-9a-fA-F]{2,2048}$" }), {
      description: "Agent address to the hex ECIES-wrapped brief key. Forbidden on a public task.",
    }),
  ),
  keyCustodyBlob: Type.Optional(Type.String({ maxLength: 4096, description: "Forbidden on a public task." })),
  publicBrief: Type.Optional(Type.String({ maxLength: MAX_PUBLIC_BRIEF_CHARS, description: "Only with `privacy` = `public`." })),
  privacy: Type.Optional(Type.Union([Type.Literal("public"), Type.Literal("private")], { description: "Default `private`." })),
  routingSummary: Type.Optional(Type.String({ maxLength: MAX_ROUTING_SUMMARY_CHARS })),
  targetExecutor: Type.Optional(Address),
  serviceId: Type.Optional(Type.Integer({ minimum: 1 })),
};

export const Duration = Type.Union([Type.Integer(), Type.String({ maxLength: 20 })], {
  description: "Seconds, 3600 to 7776000.",
});

export const BuildTaskBody = Type.Object(
  { ...TaskFields, amount: Type.String({ maxLength: 100, description: "Raw units, above 0, at most 2^256-1." }), duration: Duration },
  { additionalProperties: false },
);
export type BuildTaskBody = Static<typeof BuildTaskBody>;

export const IndexTaskBody = Type.Object({ ...TaskFields, txHash: TxHash }, { additionalProperties: false });
export type IndexTaskBody = Static<typeof IndexTaskBody>;

const TaskFieldsObject = Type.Object(TaskFields, { additionalProperties: false });
export type TaskFieldsInput = Static<typeof TaskFieldsObject>;

export const IndexBatchBody = Type.Object(
  { txHash: TxHash, tasks: Type.Array(TaskFieldsObject, { minItems: 1, maxItems: 20 }) },
  { additionalProperties: false },
);
export type IndexBatchBody = Static<typeof IndexBatchBody>;

export const UnsignedTx = Type.Object({
  chainId: Type.Integer(),
  from: Address,
  to: Address,
  data: Type.String(),
  value: Type.String(),
});

export const TaskMeta = Type.Object({
  chain: Type.String(),
  taskHash: Bytes32,
  poster: Address,
  privacy: Type.Union([Type.Literal("public"), Type.Literal("private")]),
  reward: Type.Object({
    amount: RawAmount,
    unit: Type.Object({ symbol: Type.String(), decimals: Type.Integer(), address: Address }),
  }),
  routingSummary: Type.Optional(Type.String()),
  publicBrief: Type.Optional(Type.String({ description: "First 4,000 characters of a public brief." })),
  publicBriefTruncated: Type.Optional(Type.Boolean()),
  rootHash: Type.Optional(Type.String()),
  verificationMode: Type.String(),
  verificationCriteria: Type.Optional(Type.Object({}, { additionalProperties: true })),
  verifierAddress: Type.Optional(Address),
  requiredCapabilities: Type.Array(Type.String()),
  locationZone: Type.String(),
  targetExecutor: Type.Optional(Address),
  targetExecutorType: Type.Optional(Type.String()),
  serviceId: Type.Optional(Type.Integer()),
  deadline: Type.Integer({ description: "Unix seconds; moved by escrow pauses." }),
  listedAt: Type.Integer({ description: "Unix milliseconds." }),
  fundingTx: TxHash,
});

export const TaskState = Type.Object({
  taskId: Bytes32,
  status: Type.String({ enum: [...TASK_STATUSES] }),
  worker: Type.Optional(Address),
  rounds: Type.Integer({ description: "Evidence submissions used, at most 3." }),
  ending: Type.Optional(Type.String({ description: "How the task ended (escrow Ending name)." })),
  resultData: Type.Optional(
    Type.Object({
      output: Type.Optional(Type.String()),
      resultHash: Type.Optional(Bytes32),
      verificationResult: Type.Optional(
        Type.Object(
          { passed: Type.Boolean(), score: Type.Union([Type.Integer(), Type.Null()]), reasons: Type.Array(Type.String()) },
          { description: "The latest round's verdict once judged; shown, like the output, to the poster, the worker and the verifier." },
        ),
      ),
    }),
  ),
});

export const TaskView = Type.Object({ meta: TaskMeta, state: TaskState });
export type TaskView = Static<typeof TaskView>;
