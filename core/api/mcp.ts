/**
 * MCP: the arguments of each tool of `market mcp` and the remote /mcp endpoint (the argument names are the spec's),
 * the quote a spending call answers first, and the service's quote store routes both surfaces share. The MCP SDK
 * takes zod schemas: sdk/src/mcp/schema.ts derives them from these (DEVELOPERS.md, "MCP tool schemas").
 */
import { Type, type Static } from "@sinclair/typebox";
import { CAPABILITY_TAGS } from "../capabilities";
import {
  MAX_MCP_BULK_ROWS,
  MAX_ROUTING_SUMMARY_CHARS,
  MAX_TASK_DURATION_SECONDS,
  MAX_WEB_BRIEF_CHARS,
  MCP_RENT_WAIT_SECONDS_DEFAULT,
  MCP_RENT_WAIT_SECONDS_MAX,
  MIN_TASK_DURATION_SECONDS,
} from "../limits";
import { RawAmount } from "./common";
import { SKILL_SLUG_PATTERN } from "./skills";

const TaskHashArg = Type.String({ pattern: "^0x[0-9a-fA-F]{64}$", description: "The task hash (0x and 64 hex characters)." });
const IdempotencyKey = Type.String({
  minLength: 1,
  maxLength: 200,
  description:
    "Your name for this call (e.g. a fresh UUID). Repeat the call with the same key to finish a run that stopped: rows already posted are " +
    "reported, rows paid but not listed are listed without paying again. A different payload under a used key is refused.",
});
const Confirm = Type.Boolean({
  description: "Leave out (or false) to get a quote, which spends nothing. To spend, repeat the same arguments with confirm: true and the quoteId.",
});
const QuoteId = Type.String({ minLength: 1, maxLength: 64, description: "The quoteId of this call's quote (single-use, valid 10 minutes)." });

/** One task of `post_tasks`: auto-verified with the bulk defaults; no target, zone or verification fields. */
export const McpTaskRow = Type.Object(
  {
    instructions: Type.String({ minLength: 1, description: "The brief: what the agent must do and deliver." }),
    amount: Type.String({ pattern: "^[0-9]{1,78}$", description: 'Reward in USDC raw units (6 decimals): "2500000" is 2.5 USDC.' }),
    durationSeconds: Type.Optional(
      Type.Integer({
        minimum: MIN_TASK_DURATION_SECONDS,
        maximum: MAX_TASK_DURATION_SECONDS,
        description: "Time the agent has, in seconds (3600 to 7776000; default 86400).",
      }),
    ),
    privacy: Type.Optional(
      Type.Union([Type.Literal("public"), Type.Literal("private")], {
        description: "private (default): encrypted, readable only by agents with the capabilities; public: the brief is shown to everyone.",
      }),
    ),
    capabilities: Type.Optional(
      Type.Array(Type.Union(CAPABILITY_TAGS.map((tag) => Type.Literal(tag))), {
        description: "Capability tags an agent must hold to take the task.",
      }),
    ),
    routingSummary: Type.Optional(
      Type.String({ maxLength: MAX_ROUTING_SUMMARY_CHARS, description: "A public line describing a private task (up to 500 characters)." }),
    ),
  },
  { additionalProperties: false },
);
export type McpTaskRow = Static<typeof McpTaskRow>;

export const PostTasksArgs = Type.Object(
  {
    tasks: Type.Array(McpTaskRow, { minItems: 1, maxItems: MAX_MCP_BULK_ROWS, description: "1 to 200 tasks to post." }),
    idempotencyKey: IdempotencyKey,
    confirm: Type.Optional(Confirm),
    quoteId: Type.Optional(QuoteId),
  },
  { additionalProperties: false },
);
export type PostTasksArgs = Static<typeof PostTasksArgs>;

export const TaskHashArgs = Type.Object({ taskHash: TaskHashArg }, { additionalProperties: false });
export type TaskHashArgs = Static<typeof TaskHashArgs>;

export const PollTaskResultArgs = Type.Object(
  {
    taskHash: TaskHashArg,
    waitSeconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MCP_RENT_WAIT_SECONDS_MAX,
        description:
          `Wait up to this long (at most ${MCP_RENT_WAIT_SECONDS_MAX}) for the task to be judged or to end (verified, completed, failed, refunded, ` +
          "cancelled, expired), woken by its events; 0 or absent: answer at once.",
      }),
    ),
  },
  { additionalProperties: false },
);
export type PollTaskResultArgs = Static<typeof PollTaskResultArgs>;

export const BidOnTaskArgs = Type.Object(
  {
    taskHash: TaskHashArg,
    message: Type.Optional(Type.String({ maxLength: 2000, description: "A note to the poster: why you are a good fit." })),
  },
  { additionalProperties: false },
);
export type BidOnTaskArgs = Static<typeof BidOnTaskArgs>;

const ServiceIdArg = Type.Integer({ minimum: 1, maximum: 2 ** 31 - 1, description: "The service's id (from browse_services)." });

/** `rent_service`: one fixed-price call of a hosted agent's service, as an ordinary task pinned to that agent. */
export const RentServiceArgs = Type.Object(
  {
    serviceId: ServiceIdArg,
    prompt: Type.String({
      minLength: 1,
      maxLength: MAX_WEB_BRIEF_CHARS,
      description: "What you want from the service: the task's brief, sent to the service's agent only (encrypted unless privacy is public).",
    }),
    idempotencyKey: IdempotencyKey,
    privacy: Type.Optional(
      Type.Union([Type.Literal("public"), Type.Literal("private")], {
        description: "private (default): the prompt is encrypted to the service's agent; public: it is shown to everyone.",
      }),
    ),
    waitSeconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MCP_RENT_WAIT_SECONDS_MAX,
        description: `How long the confirm call waits for the result (default ${MCP_RENT_WAIT_SECONDS_DEFAULT}, at most ${MCP_RENT_WAIT_SECONDS_MAX}); then it answers the task hash to poll with poll_task_result.`,
      }),
    ),
    confirm: Type.Optional(Confirm),
    quoteId: Type.Optional(QuoteId),
  },
  { additionalProperties: false },
);
export type RentServiceArgs = Static<typeof RentServiceArgs>;

export const BrowseServicesArgs = Type.Object(
  { agent: Type.Optional(Type.String({ pattern: "^0x[0-9a-fA-F]{40}$", description: "Only this agent's services (0x address)." })) },
  { additionalProperties: false },
);
export type BrowseServicesArgs = Static<typeof BrowseServicesArgs>;

export const GetServiceArgs = Type.Object({ serviceId: ServiceIdArg }, { additionalProperties: false });
export type GetServiceArgs = Static<typeof GetServiceArgs>;

// ---- skills (issue 25): the registry and an owner's installs, as MCP tools.
const SkillSlugArg = Type.String({
  pattern: SKILL_SLUG_PATTERN,
  maxLength: 64,
  description: "The skill's slug (lowercase letters, digits, inner hyphens).",
});
const AgentIdArg = Type.Integer({ minimum: 1, maximum: 2 ** 31 - 1, description: "Your hosted agent's id." });

/** `list_skills`: the public registry, most installed first. */
export const ListSkillsArgs = Type.Object(
  {
    tag: Type.Optional(Type.String({ maxLength: 64, description: "Only skills with this capability tag." })),
    q: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: "Text searched in slug, name and description." })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: "1 to 100 (default 20)." })),
    offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 100_000 })),
  },
  { additionalProperties: false },
);
export type ListSkillsArgs = Static<typeof ListSkillsArgs>;

export const GetSkillArgs = Type.Object({ slug: SkillSlugArg }, { additionalProperties: false });
export type GetSkillArgs = Static<typeof GetSkillArgs>;

/** `install_skill` and `remove_skill`: a skill in or out of one of your hosted agents. */
export const AgentSkillArgs = Type.Object({ agentId: AgentIdArg, slug: SkillSlugArg }, { additionalProperties: false });
export type AgentSkillArgs = Static<typeof AgentSkillArgs>;

/** What a spending call without `confirm` answers: exactly the spec's quote fields. Nothing is spent. */
export const McpQuote = Type.Object(
  {
    tasks: Type.Integer({ description: "Tasks in the call." }),
    alreadyPosted: Type.Integer({ description: "Tasks an earlier call with this idempotencyKey posted." }),
    toPost: Type.Integer({ description: "Tasks this call will pay for." }),
    escrow: RawAmount,
    currency: Type.String(),
    settlement: Type.String({ description: "The chain the escrow is paid on." }),
    payFrom: Type.String({ description: "The wallet that pays (the API key's)." }),
    walletBalance: RawAmount,
    privacy: Type.Object({ public: Type.Integer(), private: Type.Integer() }),
    transactions: Type.Integer({ description: "Transactions the wallet will sign (approval and fundings)." }),
    quoteId: Type.String(),
  },
  { additionalProperties: false },
);
export type McpQuote = Static<typeof McpQuote>;

// ---- the service's quote store (POST /api/v1/mcp/quotes...)

const Fingerprint = Type.String({ pattern: "^[0-9a-f]{64}$", description: "SHA-256 (hex) of the call's arguments and the facts the quote shows." });
const ToolName = Type.String({ pattern: "^[a-z_]{1,64}$" });

export const QuoteCreateBody = Type.Object(
  {
    tool: ToolName,
    fingerprint: Fingerprint,
    // Exactly the quote's fields (a row per quote: never free storage for anything else).
    quote: Type.Omit(McpQuote, ["quoteId"], { additionalProperties: false, description: "The quote as shown (without its quoteId)." }),
  },
  { additionalProperties: false },
);
export type QuoteCreateBody = Static<typeof QuoteCreateBody>;
export const QuoteCreated = Type.Object({ quoteId: Type.String(), expiresAt: Type.Integer({ description: "Unix milliseconds." }) });
export type QuoteCreated = Static<typeof QuoteCreated>;
export const QuoteParams = Type.Object({ quoteId: Type.String({ minLength: 1, maxLength: 64 }) });
export const QuoteRedeemBody = Type.Object({ tool: ToolName, fingerprint: Fingerprint }, { additionalProperties: false });
export type QuoteRedeemBody = Static<typeof QuoteRedeemBody>;
export const QuoteRedeemed = Type.Object({ quoteId: Type.String(), usedAt: Type.Integer({ description: "Unix milliseconds." }) });
export type QuoteRedeemed = Static<typeof QuoteRedeemed>;
