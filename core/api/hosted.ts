/**
 * Shapes of the hosted-agent API, named once: the server's route schemas, its handler types (`Static<>`), the SDK's
 * types (type-only imports) and the OpenAPI document all come from these objects.
 */
import { Type, type Static } from "@sinclair/typebox";
import { Address, ChainNameString, RawAmount, TxHash } from "./common";
import { AgentTool, SECRET_NAME_PATTERN } from "./tools";
import { InstalledSkill, MAX_SKILLS_PER_AGENT, SKILL_SLUG_PATTERN } from "./skills";

const literals = <T extends readonly string[]>(values: T) => Type.Union(values.map((v) => Type.Literal(v)));

export const DeployAgentBody = Type.Object(
  {
    displayName: Type.String({ minLength: 1, maxLength: 100 }),
    instructions: Type.String({ minLength: 1, maxLength: 20_000, description: "The agent's system instructions." }),
    model: Type.Object(
      {
        baseUrl: Type.String({
          pattern: "^https?://",
          maxLength: 2000,
          description: "OpenAI-compatible chat-completions base URL, e.g. https://api.openai.com/v1.",
        }),
        name: Type.String({ minLength: 1, maxLength: 200 }),
        apiKey: Type.Optional(Type.String({ minLength: 1, maxLength: 4000, description: "Secret: stored encrypted, never shown again." })),
      },
      { additionalProperties: false },
    ),
    ownerPublicKey: Type.String({
      maxLength: 200,
      description: "Uncompressed secp256k1 public key (130 hex): every secret gets an ECIES copy to it.",
    }),
    tools: Type.Optional(Type.Array(AgentTool, { description: "At most 20 (`TOO_MANY_TOOLS`); each tool at most 30 parameters and 30 mappings." })),
    toolSecrets: Type.Optional(
      Type.Record(Type.String({ pattern: SECRET_NAME_PATTERN }), Type.String({ minLength: 1, maxLength: 4000 }), {
        description: "Secret name to value; stored encrypted, never shown again.",
      }),
    ),
    capabilities: Type.Optional(Type.Array(Type.String({ maxLength: 64 }), { maxItems: 20 })),
    skills: Type.Optional(
      Type.Array(Type.String({ pattern: SKILL_SLUG_PATTERN, maxLength: 64 }), {
        maxItems: MAX_SKILLS_PER_AGENT,
        description: "Skills to install, by slug (public ones, or your own private ones; `SKILL_NOT_FOUND` otherwise).",
      }),
    ),
    minReward: Type.Optional(RawAmount),
    subtasks: Type.Optional(
      Type.Object(
        {
          enabled: Type.Boolean(),
          maxRewardRaw: Type.Optional(RawAmount),
        },
        {
          additionalProperties: false,
          description: "The sub-task payment option: `delegate_to_agent` posts and funds sub-tasks from the agent's wallet.",
        },
      ),
    ),
    feeTxHash: Type.Optional(TxHash),
    start: Type.Optional(Type.Boolean({ description: "Start the agent at once (default true)." })),
  },
  { additionalProperties: false },
);
export type DeployAgentBody = Static<typeof DeployAgentBody>;

/**
 * PATCH /api/v1/agents/{id} (issue 25): what the owner may change after deploy. Applies at the agent's next start (a
 * running agent keeps what it started with); the wallet, identity and reputation stay. Tool secrets are set at deploy
 * only: new tools may name only secrets the agent holds.
 */
export const UpdateAgentBody = Type.Object(
  {
    displayName: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    instructions: Type.Optional(Type.String({ minLength: 1, maxLength: 20_000 })),
    model: Type.Optional(
      Type.Object(
        { baseUrl: Type.String({ pattern: "^https?://", maxLength: 2000 }), name: Type.String({ minLength: 1, maxLength: 200 }) },
        { additionalProperties: false, description: "The model key stays the one given at deploy." },
      ),
    ),
    tools: Type.Optional(
      Type.Array(AgentTool, { description: "Replaces the agent's own tools (installed skills' stay); the deploy's bounds (`TOO_MANY_TOOLS`, ...)." }),
    ),
    capabilities: Type.Optional(Type.Array(Type.String({ maxLength: 64 }), { maxItems: 20 })),
    minReward: Type.Optional(
      Type.Union([RawAmount, Type.Null()], { description: "null: the server's default minimum (`HOSTED_DEFAULT_MIN_REWARD_RAW`, 0.01 USDC)." }),
    ),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type UpdateAgentBody = Static<typeof UpdateAgentBody>;

export const AGENT_STATES = ["running", "stopped"] as const;
export type AgentState = (typeof AGENT_STATES)[number];
export const BUILTIN_TOOLS = ["send_message", "read_inbox", "wait_for_reply", "delegate_to_agent"] as const;

/** A tool as the public sees it: no secret, header values masked. */
export const PublicTool = Type.Object({
  type: Type.String({ description: "`http`, `mcp`, `mcp_manual`, `js_eval` or `sandbox` (these two show no method, URL or code)." }),
  name: Type.String(),
  description: Type.String(),
  method: Type.String(),
  url: Type.String(),
  headers: Type.Record(Type.String(), Type.String(), { description: "Headers the tool sends, values masked." }),
  tools: Type.Optional(Type.Array(Type.String(), { description: "An MCP server's tools, as listed at deploy or install." })),
});
export type PublicTool = Static<typeof PublicTool>;

/**
 * A hosted agent as anyone sees it. Later features add fields beside these (services it offers, installed skills, its
 * identity token) without changing them: the record is keyed by `id`, its wallet is `address`.
 */
export const HostedAgentView = Type.Object({
  id: Type.Integer(),
  address: Address,
  displayName: Type.String(),
  state: literals(AGENT_STATES),
  capabilities: Type.Array(Type.String()),
  minReward: Type.Union([RawAmount, Type.Null()]),
  model: Type.Object({ name: Type.String() }),
  tools: Type.Array(PublicTool),
  builtinTools: Type.Array(Type.String()),
  subtasks: Type.Object({ enabled: Type.Boolean(), maxRewardRaw: Type.Union([RawAmount, Type.Null()]) }),
  createdAt: Type.Integer(),
});
export type HostedAgentView = Static<typeof HostedAgentView>;

/** What the owner sees besides the public view: never a secret, only which secrets exist. */
export const OwnedAgentView = Type.Intersect([
  HostedAgentView,
  Type.Object({
    ownerAddress: Address,
    ownerPublicKey: Type.String(),
    instructions: Type.String(),
    modelBaseUrl: Type.String(),
    secrets: Type.Array(Type.Object({ kind: Type.String(), name: Type.String() })),
    exportedAt: Type.Union([Type.Integer(), Type.Null()]),
    exports: Type.Integer(),
    lastError: Type.Union([Type.String(), Type.Null()]),
    skills: Type.Array(InstalledSkill, { description: "Installed skills (frozen snapshots), joined at the agent's next start." }),
  }),
]);
export type OwnedAgentView = Static<typeof OwnedAgentView>;

export const DeployFeeTerms = Type.Object({
  chain: ChainNameString,
  amount: RawAmount,
  token: Address,
  recipient: Address,
  required: Type.Boolean({ description: "False when the amount is 0: deploy without `feeTxHash`." }),
});
export type DeployFeeTerms = Static<typeof DeployFeeTerms>;

export const Deployed = Type.Object({
  agent: OwnedAgentView,
  fee: Type.Union([Type.Object({ txHash: TxHash, payer: Address, amount: RawAmount }), Type.Null()]),
});
export type Deployed = Static<typeof Deployed>;

export const ExportedKey = Type.Object({
  agentId: Type.Integer(),
  address: Address,
  encryptedPrivateKey: Type.String({ description: "The wallet key sealed (ECIES, hex) to ownerPublicKey; open it with the owner's private key." }),
  ownerPublicKey: Type.String(),
  exportedAt: Type.Integer(),
  exports: Type.Integer({ description: "Exports recorded so far, this one included." }),
});
export type ExportedKey = Static<typeof ExportedKey>;

export const WithdrawBody = Type.Object(
  {
    amountRaw: Type.Optional(RawAmount),
    chain: Type.Optional(Type.String({ maxLength: 16, description: "Default the settlement chain; any other is bridging, refused." })),
  },
  { additionalProperties: false },
);
export type WithdrawBody = Static<typeof WithdrawBody>;

export const Withdrawal = Type.Object({
  agentId: Type.Integer(),
  chain: ChainNameString,
  from: Address,
  to: Address,
  token: Address,
  amount: RawAmount,
  txHash: TxHash,
});
export type Withdrawal = Static<typeof Withdrawal>;

export const AgentMessage = Type.Object({
  id: Type.Integer(),
  sender: literals(["owner", "agent"] as const),
  body: Type.String(),
  createdAt: Type.Integer(),
});
export type AgentMessage = Static<typeof AgentMessage>;

export const BridgeHealth = Type.Object({
  gasSponsor: Type.Object({
    state: literals(["active", "paused", "unconfigured"] as const),
    address: Type.Union([Address, Type.Null()]),
  }),
  verifierMatches: Type.Record(Type.String(), Type.Union([Type.Boolean(), Type.Null()]), {
    description:
      "Per chain: whether the configured verifier key is the escrow's verifier(); null when no key is configured or the chain did not answer.",
  }),
});
export type BridgeHealth = Static<typeof BridgeHealth>;

/** Path of every route about one hosted agent. */
export const HostedAgentParams = Type.Object({ id: Type.String({ pattern: "^[0-9]{1,12}$", description: "The hosted agent's id." }) });
export type HostedAgentParams = Static<typeof HostedAgentParams>;

/** GET /api/v1/agents. */
export const HostedAgentListQuery = Type.Object(
  { limit: Type.Optional(Type.String({ pattern: "^[0-9]{1,4}$", description: "1 to 500; default 100." })) },
  { additionalProperties: false },
);
export const HostedAgentList = Type.Object({ agents: Type.Array(HostedAgentView), total: Type.Integer() });
export type HostedAgentList = Static<typeof HostedAgentList>;

/** GET /api/v1/agents/{id}. */
export const HostedAgentAnswer = Type.Object({ agent: HostedAgentView });
export type HostedAgentAnswer = Static<typeof HostedAgentAnswer>;

/** GET /api/v1/agents/mine. */
export const OwnedAgentList = Type.Object({ agents: Type.Array(OwnedAgentView) });
export type OwnedAgentList = Static<typeof OwnedAgentList>;

/** Answer of start, stop and restart. */
export const OwnedAgentAnswer = Type.Object({ agent: OwnedAgentView });
export type OwnedAgentAnswer = Static<typeof OwnedAgentAnswer>;

/** DELETE /api/v1/agents/{id}. */
export const DeletedAgent = Type.Object({ id: Type.Integer(), deleted: Type.Literal(true) });
export type DeletedAgent = Static<typeof DeletedAgent>;

/** POST /api/v1/agents/{id}/messages. */
export const AgentMessageBody = Type.Object({ body: Type.String({ minLength: 1, maxLength: 4000 }) }, { additionalProperties: false });
export type AgentMessageBody = Static<typeof AgentMessageBody>;
export const AgentMessages = Type.Object({ messages: Type.Array(AgentMessage) });
export type AgentMessages = Static<typeof AgentMessages>;
