/**
 * Shapes of the hosted-agent API, named once: the server's route schemas, its handler types (`Static<>`), the SDK's
 * types (type-only imports) and the OpenAPI document all come from these objects.
 */
import { Type, type Static } from "@sinclair/typebox";
import { Address, ChainNameString, RawAmount, TxHash } from "./common";

/** Longest name of a tool (the OpenAI function-name limit). */
export const MAX_TOOL_NAME_CHARS = 64;
export const TOOL_NAME_PATTERN = `^[A-Za-z0-9_]{1,${MAX_TOOL_NAME_CHARS}}$`;
/** Names of secrets (`toolSecrets` keys, a tool's `auth.secretRef`). */
export const SECRET_NAME_PATTERN = "^[A-Za-z0-9_.-]{1,100}$";

export const HTTP_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const;
export const PARAMETER_TYPES = ["string", "number", "integer", "boolean"] as const;
export const PARAM_LOCATIONS = ["body", "query", "path", "header"] as const;
export const TOOL_AUTH_TYPES = ["none", "bearer", "header", "query_param"] as const;

const literals = <T extends readonly string[]>(values: T) => Type.Union(values.map((v) => Type.Literal(v)));

/** One input of a tool, as the model sees it. */
export const ToolParameter = Type.Object(
  {
    type: literals(PARAMETER_TYPES),
    description: Type.String({ minLength: 1, maxLength: 1000 }),
    enum: Type.Optional(Type.Array(Type.Union([Type.String({ maxLength: 200 }), Type.Number(), Type.Boolean()]), { minItems: 1, maxItems: 100 })),
  },
  { additionalProperties: false },
);

/** An HTTP tool of a hosted agent (spec "HTTP tool definition"). The secret is named, never included. */
export const HttpTool = Type.Object(
  {
    type: Type.Optional(Type.Literal("http", { description: "Default `http`; other tool types come with skills." })),
    name: Type.String({ pattern: TOOL_NAME_PATTERN, description: "1 to 64 letters, digits or underscores." }),
    description: Type.String({ minLength: 1, maxLength: 2000, description: "All the model knows of the tool." }),
    parameters: Type.Object(
      {
        type: Type.Literal("object"),
        properties: Type.Record(Type.String({ pattern: "^[A-Za-z0-9_]{1,64}$" }), ToolParameter),
        required: Type.Optional(Type.Array(Type.String({ maxLength: 64 }), { maxItems: 50 })),
      },
      { additionalProperties: false },
    ),
    method: literals(HTTP_METHODS),
    url: Type.String({ pattern: "^https?://", maxLength: 2000, description: "Full http(s) URL; `{name}` placeholders are filled from path inputs." }),
    paramMapping: Type.Optional(
      Type.Record(Type.String({ pattern: "^[A-Za-z0-9_]{1,64}$" }), literals(PARAM_LOCATIONS), {
        description: "Each input to `body`, `query` or `path`; `header` is accepted and dropped; an unmapped input is never sent.",
      }),
    ),
    auth: Type.Optional(
      Type.Object(
        {
          type: literals(TOOL_AUTH_TYPES),
          keyName: Type.Optional(Type.String({ pattern: "^[A-Za-z0-9-]{1,100}$", description: "Header name (type `header`)." })),
          secretRef: Type.Optional(Type.String({ pattern: SECRET_NAME_PATTERN, description: "Name of a `toolSecrets` entry." })),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);
export type HttpTool = Static<typeof HttpTool>;

// ---- sandbox tools (issue 26, docs/hosted-agents.md "Sandbox tools"): JS Eval and Sandbox, run in a bubblewrap sandbox.
/** Longest a sandbox tool's run may be given (spec "Limits": sandbox timeout up to 600 seconds). */
export const MAX_SANDBOX_TIMEOUT_SECONDS = 600;
const sandboxToolFields = {
  name: Type.String({ pattern: TOOL_NAME_PATTERN, description: "1 to 64 letters, digits or underscores." }),
  description: Type.String({ minLength: 1, maxLength: 2000, description: "All the model knows of the tool." }),
  parameters: Type.Optional(
    Type.Object(
      {
        type: Type.Literal("object"),
        properties: Type.Record(Type.String({ pattern: "^[A-Za-z0-9_]{1,64}$" }), ToolParameter),
        required: Type.Optional(Type.Array(Type.String({ maxLength: 64 }), { maxItems: 50 })),
      },
      {
        additionalProperties: false,
        description: "The inputs the model gives; `input` is their object. Default: one string property `input`, and `input` is that string.",
      },
    ),
  ),
  timeoutSeconds: Type.Optional(
    Type.Integer({ minimum: 1, maximum: MAX_SANDBOX_TIMEOUT_SECONDS, description: "Wall-clock limit of one run, 1 to 600 s (default 30)." }),
  ),
};
/** A function body run by Node in the sandbox with `input` in scope; what it returns (awaited) is JSON-serialised. */
export const JsEvalTool = Type.Object(
  { type: Type.Literal("js_eval"), ...sandboxToolFields, code: Type.String({ minLength: 1, maxLength: 20_000, description: "The function body." }) },
  { additionalProperties: false },
);
export type JsEvalTool = Static<typeof JsEvalTool>;
/** A shell command run in the sandbox after its optional setup command; `{input}` is the input as one argument. */
export const SandboxTool = Type.Object(
  {
    type: Type.Literal("sandbox"),
    ...sandboxToolFields,
    setupCommand: Type.Optional(Type.String({ minLength: 1, maxLength: 20_000, description: "Run first (`sh -c`); a failure ends the run." })),
    command: Type.String({
      minLength: 1,
      maxLength: 20_000,
      description: "Run by `sh -c`; each `{input}` (not inside single quotes) becomes the input as one word, never parsed as shell.",
    }),
  },
  { additionalProperties: false },
);
export type SandboxTool = Static<typeof SandboxTool>;
/** A tool of a hosted agent's own record (never of a skill: sandbox tools are refused there). */
export const HostedTool = Type.Union([HttpTool, JsEvalTool, SandboxTool]);
export type HostedTool = Static<typeof HostedTool>;
export const isSandboxTool = (tool: { type?: string }): tool is JsEvalTool | SandboxTool => tool.type === "js_eval" || tool.type === "sandbox";

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
    tools: Type.Optional(Type.Array(HostedTool, { description: "At most 20 (`TOO_MANY_TOOLS`); each HTTP tool at most 30 parameters and 30 mappings." })),
    toolSecrets: Type.Optional(
      Type.Record(Type.String({ pattern: SECRET_NAME_PATTERN }), Type.String({ minLength: 1, maxLength: 4000 }), {
        description: "Secret name to value; stored encrypted, never shown again.",
      }),
    ),
    capabilities: Type.Optional(Type.Array(Type.String({ maxLength: 64 }), { maxItems: 20 })),
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

export const AGENT_STATES = ["running", "stopped"] as const;
export type AgentState = (typeof AGENT_STATES)[number];
export const BUILTIN_TOOLS = ["send_message", "read_inbox", "wait_for_reply", "delegate_to_agent"] as const;

/** A tool as the public sees it: no secret, header values masked. */
export const PublicTool = Type.Object({
  type: Type.Optional(Type.String({ description: "`http` (default), `js_eval` or `sandbox` (these show no method, URL or code)." })),
  name: Type.String(),
  description: Type.String(),
  method: Type.String(),
  url: Type.String(),
  headers: Type.Record(Type.String(), Type.String(), { description: "Headers the tool sends, values masked." }),
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
