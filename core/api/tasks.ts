import { Type, type Static } from "@sinclair/typebox";
import { Address, Bytes32, ChainNameString, RawAmount, TaskHash, TxHash, UnsignedTx } from "./common";
import { TASK_STATUSES, type TaskStatus } from "../status";
import { MAX_ROUTING_SUMMARY_CHARS, MAX_ZONE_CHARS } from "../limits";
import type { VerificationMode } from "../verification/criteria";

/** Largest public brief the API accepts (the whole text is hashed; browse shows the first 4,000 characters). */
export const MAX_PUBLIC_BRIEF_CHARS = 100_000;

/** `public` or `private`. */
export const Privacy = Type.Union([Type.Literal("public"), Type.Literal("private")]);
/** A verification mode as answered (`auto`, `manual`, `agent`); the schema is a plain string. */
export const VerificationModeString = Type.Unsafe<VerificationMode>(Type.String());
/** A task's status as the API shows it (core/status). */
export const TaskStatusString = Type.Unsafe<TaskStatus>(Type.String({ enum: [...TASK_STATUSES] }));
/** A task's status where the schema has always said just `string`. */
export const TaskStatusText = Type.Unsafe<TaskStatus>(Type.String());

/** A task hash in a path (checked by the route: a numeric id gets its own code). */
export const TaskHashParams = Type.Object({ taskHash: Type.String({ maxLength: 100 }) });

/** The task properties a poster sends when building the funding transaction and again when listing. */
export const TaskFields = {
  taskHash: Bytes32,
  chain: Type.Optional(
    Type.String({
      maxLength: 16,
      description: "Default `arc` (the server's first postable chain); only the chains in its `POSTABLE_CHAINS` are accepted.",
    }),
  ),
  token: Type.Optional(Address),
  locationZone: Type.Optional(Type.String({ maxLength: MAX_ZONE_CHARS, description: "Default `global`." })),
  targetExecutorType: Type.Optional(Type.String({ maxLength: 32 })),
  verificationMode: Type.String({ maxLength: 16, description: "`auto`, `manual` or `agent`." }),
  verificationCriteria: Type.Optional(
    Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()], {
      description:
        "Required for `auto`: at least one of min_length, max_length, contains_keywords, regex_pattern; optional pass_threshold, regex_flags.",
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

/** POST /api/v1/tasks. */
export const BuildTaskBody = Type.Object(
  { ...TaskFields, amount: Type.String({ maxLength: 100, description: "Raw units, above 0, at most 2^256-1." }), duration: Duration },
  { additionalProperties: false },
);
export type BuildTaskBody = Static<typeof BuildTaskBody>;

/** POST /api/v1/tasks/batch. */
export const BuildBatchBody = Type.Object({ tasks: Type.Array(BuildTaskBody, { minItems: 1, maxItems: 1000 }) }, { additionalProperties: false });
export type BuildBatchBody = Static<typeof BuildBatchBody>;

/** POST /api/v1/a2a/tasks/index, one task. */
export const IndexTaskBody = Type.Object({ ...TaskFields, txHash: TxHash }, { additionalProperties: false });
export type IndexTaskBody = Static<typeof IndexTaskBody>;

const TaskFieldsObject = Type.Object(TaskFields, { additionalProperties: false });
export type TaskFieldsInput = Static<typeof TaskFieldsObject>;

/** POST /api/v1/a2a/tasks/index, every task of one batch receipt. */
export const IndexBatchBody = Type.Object(
  { txHash: TxHash, tasks: Type.Array(TaskFieldsObject, { minItems: 1, maxItems: 20 }) },
  { additionalProperties: false },
);
export type IndexBatchBody = Static<typeof IndexBatchBody>;

export const IndexBody = Type.Union([IndexTaskBody, IndexBatchBody]);
export type IndexBody = Static<typeof IndexBody>;

/** The transactions that fund tasks, for the poster's wallet to sign and send in order. */
export const FundingPlan = Type.Object({
  chain: Type.String(),
  chainId: Type.Integer(),
  escrowAddress: Address,
  token: Address,
  from: Address,
  total: Type.String(),
  /** The funding call (createTask or createTasks), to sign and send from `from`. */
  unsignedTx: UnsignedTx,
  /** Approval of the escrow for the total; null when the allowance already covers it. */
  approveTx: Type.Union([UnsignedTx, Type.Null()]),
  /** In sending order. */
  transactions: Type.Array(UnsignedTx),
});
export type FundingPlan = Static<typeof FundingPlan>;

/** Answer of POST /api/v1/tasks. */
export const BuiltTask = Type.Intersect([Type.Object({ taskHash: TaskHash }), FundingPlan]);
export type BuiltTask = Static<typeof BuiltTask>;

/** Answer of POST /api/v1/tasks/batch. */
export const BuiltBatch = Type.Intersect([Type.Object({ taskHashes: Type.Array(TaskHash) }), FundingPlan]);
export type BuiltBatch = Static<typeof BuiltBatch>;

/** One listed task: listed now, or listed before with the same properties. */
export const ListingOutcome = Type.Object({
  taskHash: TaskHash,
  status: Type.Union([Type.Literal("listed"), Type.Literal("already_listed")]),
});
export type ListingOutcome = Static<typeof ListingOutcome>;

/** Answer of POST /api/v1/a2a/tasks/index: one outcome, or one per task of a batch. */
export const IndexAnswer = Type.Union([ListingOutcome, Type.Object({ results: Type.Array(ListingOutcome) })]);
export type IndexAnswer = Static<typeof IndexAnswer>;

/** The listed, public side of a task. */
export const TaskMeta = Type.Object({
  chain: ChainNameString,
  taskHash: TaskHash,
  poster: Address,
  privacy: Privacy,
  reward: Type.Object({
    amount: RawAmount,
    unit: Type.Object({ symbol: Type.String(), decimals: Type.Integer(), address: Address }),
  }),
  routingSummary: Type.Optional(Type.String()),
  publicBrief: Type.Optional(Type.String({ description: "First 4,000 characters of a public brief." })),
  publicBriefTruncated: Type.Optional(Type.Boolean()),
  rootHash: Type.Optional(Type.String()),
  verificationMode: VerificationModeString,
  verificationCriteria: Type.Optional(Type.Object({}, { additionalProperties: true })),
  verifierAddress: Type.Optional(Address),
  requiredCapabilities: Type.Array(Type.String()),
  locationZone: Type.String(),
  targetExecutor: Type.Optional(Address),
  targetExecutorType: Type.Optional(Type.String()),
  serviceId: Type.Optional(Type.Integer()),
  deadline: Type.Integer({ description: "Unix milliseconds (the escrow's block-time deadline); moved by escrow pauses." }),
  listedAt: Type.Integer({ description: "Unix milliseconds." }),
  fundingTx: TxHash,
});
export type TaskMeta = Static<typeof TaskMeta>;

/** A round's verdict as the task view shows it (score null when the verdict carried none). */
export const RoundVerdict = Type.Object(
  { passed: Type.Boolean(), score: Type.Union([Type.Integer(), Type.Null()]), reasons: Type.Array(Type.String()) },
  { description: "The latest round's verdict once judged; shown, like the output, to the poster, the worker and the verifier." },
);
export type RoundVerdict = Static<typeof RoundVerdict>;

/** One step of a task's story, as its poster sees it (GET /api/v1/tasks/{taskHash} with the poster's key). */
export const TaskHistoryEntry = Type.Object({
  at: Type.Integer({ description: "Unix milliseconds." }),
  event: Type.String({ description: "What happened, in words: funded, taken, work failed, released, delivered, verification passed..." }),
  worker: Type.Optional(Address),
  reason: Type.Optional(Type.String({ description: "Why a hosted agent's work failed." })),
});
export type TaskHistoryEntry = Static<typeof TaskHistoryEntry>;

/** The escrow side of a task, as indexed, with what deliveries add. */
export const TaskState = Type.Object({
  taskId: TaskHash,
  status: TaskStatusString,
  worker: Type.Optional(Address),
  rounds: Type.Integer({ description: "Evidence submissions used, at most 3." }),
  ending: Type.Optional(Type.String({ description: "How the task ended (escrow Ending name)." })),
  history: Type.Optional(
    Type.Array(TaskHistoryEntry, {
      description: "The poster's view only: what happened to the task, oldest first (taken, work failed and why, released...).",
    }),
  ),
  paid: Type.Optional(
    Type.Object(
      { worker: RawAmount, fee: RawAmount },
      { description: "Once the escrow paid the task out: what the worker got and the fee, raw units (its TaskCompleted event)." },
    ),
  ),
  resultData: Type.Optional(
    Type.Object({
      output: Type.Optional(Type.String()),
      resultHash: Type.Optional(Bytes32),
      verificationResult: Type.Optional(RoundVerdict),
    }),
  ),
});
export type TaskState = Static<typeof TaskState>;

/** A task as the API lists it. */
export const TaskView = Type.Object({ meta: TaskMeta, state: TaskState });
export type TaskView = Static<typeof TaskView>;

/** GET /api/v1/a2a/tasks. */
export const BrowseQuery = Type.Object({ capabilities: Type.Optional(Type.String({ maxLength: 2000 })) }, { additionalProperties: false });
export const BrowseAnswer = Type.Object({ tasks: Type.Array(TaskView), total: Type.Integer() });
export type BrowseAnswer = Static<typeof BrowseAnswer>;

/** A task the caller works on, as GET /api/v1/a2a/tasks/assigned lists it: the task view and the rounds it has left. */
export const AssignedTaskView = Type.Intersect([
  TaskView,
  Type.Object({
    roundsLeft: Type.Integer({
      minimum: 0,
      description:
        "Evidence rounds the worker may still submit: 3 minus `state.rounds` while assigned, delivered (a round awaiting its verdict counts as used) or after a failed round, before the deadline; 0 otherwise (disputed, escalated, past the deadline).",
    }),
  }),
]);
export type AssignedTaskView = Static<typeof AssignedTaskView>;

/** GET /api/v1/a2a/tasks/assigned: the tasks a worker holds that have not ended. */
export const AssignedTasksAnswer = Type.Object({ tasks: Type.Array(AssignedTaskView) });
export type AssignedTasksAnswer = Static<typeof AssignedTasksAnswer>;

/** GET /api/v1/tasks: every listed task (issue 28, the web app's task browser), filtered, newest first, by cursor. */
export const ExploreQuery = Type.Object(
  {
    status: Type.Optional(
      Type.String({
        enum: [...TASK_STATUSES],
        description: "Only tasks in this status (`submitted` and `awaiting_verification` are one filter: delivered, not judged).",
      }),
    ),
    chain: Type.Optional(Type.String({ maxLength: 16, description: "Only tasks on this chain." })),
    capability: Type.Optional(Type.String({ maxLength: 64, description: "Only tasks that require this capability tag." })),
    worker: Type.Optional(Address),
    minReward: Type.Optional(Type.String({ pattern: "^(0|[1-9][0-9]{0,77})$", description: "Raw units, at least." })),
    maxReward: Type.Optional(Type.String({ pattern: "^(0|[1-9][0-9]{0,77})$", description: "Raw units, at most." })),
    limit: Type.Optional(Type.String({ pattern: "^[0-9]{1,3}$", description: "1 to 100; default 50." })),
    cursor: Type.Optional(Type.String({ pattern: "^[0-9]{1,16}_0x[0-9a-f]{64}$", description: "`nextCursor` of the previous page." })),
  },
  { additionalProperties: false },
);
export type ExploreQuery = Static<typeof ExploreQuery>;
export const ExploreAnswer = Type.Object({ tasks: Type.Array(TaskView), nextCursor: Type.Union([Type.String(), Type.Null()]) });
export type ExploreAnswer = Static<typeof ExploreAnswer>;

/** GET /api/v1/a2a/tasks/posted. */
export const PostedQuery = Type.Object(
  {
    limit: Type.Optional(Type.String({ pattern: "^[0-9]{1,4}$", description: "1 to 1000; default 100." })),
    cursor: Type.Optional(Type.String({ pattern: "^[0-9]{1,16}_0x[0-9a-f]{64}$", description: "`nextCursor` of the previous page." })),
  },
  { additionalProperties: false },
);
export const PostedAnswer = Type.Object({ tasks: Type.Array(TaskView), nextCursor: Type.Union([Type.String(), Type.Null()]) });
export type PostedAnswer = Static<typeof PostedAnswer>;
