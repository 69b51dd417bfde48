/**
 * The tool record of a hosted agent and of a skill: one discriminated union on `type` (spec "HTTP tool definition"
 * and "Other tool types"). Each type has its own schema here and its own runner module
 * (server/hosted/runner/tool-types/); the union below is the one place a new type is added.
 */
import { Type, type Static } from "@sinclair/typebox";

/** Longest name of a tool (the OpenAI function-name limit): longer names are refused with `TOOL_NAME_TOO_LONG`. */
export const MAX_TOOL_NAME_CHARS = 64;
/** Letters, digits and underscores; the length is checked apart (`TOOL_NAME_TOO_LONG`), up to this pattern's bound. */
export const TOOL_NAME_PATTERN = "^[A-Za-z0-9_]{1,200}$";
/** Names of secrets (`toolSecrets` keys, a tool's `auth.secretRef`, a skill's `secretRefs`). */
export const SECRET_NAME_PATTERN = "^[A-Za-z0-9_.-]{1,100}$";

export const HTTP_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const;
export const PARAMETER_TYPES = ["string", "number", "integer", "boolean"] as const;
export const PARAM_LOCATIONS = ["body", "query", "path", "header"] as const;
export const TOOL_AUTH_TYPES = ["none", "bearer", "header", "query_param"] as const;

const literals = <T extends readonly string[]>(values: T) => Type.Union(values.map((v) => Type.Literal(v)));
const toolName = (description: string) => Type.String({ pattern: TOOL_NAME_PATTERN, description });

/** One input of a tool, as the model sees it. */
export const ToolParameter = Type.Object(
  {
    type: literals(PARAMETER_TYPES),
    description: Type.String({ minLength: 1, maxLength: 1000 }),
    enum: Type.Optional(Type.Array(Type.Union([Type.String({ maxLength: 200 }), Type.Number(), Type.Boolean()]), { minItems: 1, maxItems: 100 })),
  },
  { additionalProperties: false },
);

/** The inputs of a tool: a JSON Schema object of typed properties. */
export const ToolParameters = Type.Object(
  {
    type: Type.Literal("object"),
    properties: Type.Record(Type.String({ pattern: "^[A-Za-z0-9_]{1,64}$" }), ToolParameter),
    required: Type.Optional(Type.Array(Type.String({ maxLength: 64 }), { maxItems: 50 })),
  },
  { additionalProperties: false },
);
export type ToolParameters = Static<typeof ToolParameters>;

/** How a tool authenticates: the secret is named (`secretRef`, a `toolSecrets` entry), never included. */
export const ToolAuth = Type.Object(
  {
    type: literals(TOOL_AUTH_TYPES),
    keyName: Type.Optional(Type.String({ pattern: "^[A-Za-z0-9-]{1,100}$", description: "Header name (type `header`)." })),
    secretRef: Type.Optional(Type.String({ pattern: SECRET_NAME_PATTERN, description: "Name of a `toolSecrets` entry." })),
  },
  { additionalProperties: false },
);
export type ToolAuth = Static<typeof ToolAuth>;

/** An HTTP tool of a hosted agent (spec "HTTP tool definition"). */
export const HttpTool = Type.Object(
  {
    type: Type.Optional(Type.Literal("http", { description: "Default `http`." })),
    name: toolName("1 to 64 letters, digits or underscores."),
    description: Type.String({ minLength: 1, maxLength: 2000, description: "All the model knows of the tool." }),
    parameters: ToolParameters,
    method: literals(HTTP_METHODS),
    url: Type.String({ pattern: "^https?://", maxLength: 2000, description: "Full http(s) URL; `{name}` placeholders are filled from path inputs." }),
    paramMapping: Type.Optional(
      Type.Record(Type.String({ pattern: "^[A-Za-z0-9_]{1,64}$" }), literals(PARAM_LOCATIONS), {
        description: "Each input to `body`, `query` or `path`; `header` is accepted and dropped; an unmapped input is never sent.",
      }),
    ),
    auth: Type.Optional(ToolAuth),
  },
  { additionalProperties: false },
);
export type HttpTool = Static<typeof HttpTool>;

/**
 * An MCP server's tools (type `mcp`): the service lists them once (deploy, install) over the MCP protocol (Streamable
 * HTTP, plain JSON or SSE answers) and stores them; the running agent calls `tools/call` with the stored auth headers.
 */
export const McpTool = Type.Object(
  {
    type: Type.Literal("mcp"),
    name: toolName("Names this server among the agent's tools; its tools keep their own names."),
    url: Type.String({ pattern: "^https?://", maxLength: 2000, description: "The MCP server's Streamable HTTP endpoint." }),
    description: Type.Optional(Type.String({ maxLength: 2000 })),
    auth: Type.Optional(ToolAuth),
  },
  { additionalProperties: false },
);
export type McpTool = Static<typeof McpTool>;

/** The manual MCP type (`mcp_manual`): a POST of `{ "tool": <toolName or name>, "input": ... }` to the URL, not the MCP protocol. */
export const ManualMcpTool = Type.Object(
  {
    type: Type.Literal("mcp_manual"),
    name: toolName("1 to 64 letters, digits or underscores."),
    description: Type.String({ minLength: 1, maxLength: 2000 }),
    url: Type.String({ pattern: "^https?://", maxLength: 2000 }),
    toolName: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: "The `tool` sent; default `name`." })),
    parameters: Type.Optional(ToolParameters),
    auth: Type.Optional(ToolAuth),
  },
  { additionalProperties: false },
);
export type ManualMcpTool = Static<typeof ManualMcpTool>;

// ---- sandbox tools (issue 26, docs/hosted-agents.md "Sandbox tools"): JS Eval and Sandbox, run in a bubblewrap sandbox.
/** Longest a sandbox tool's run may be given (spec "Limits": sandbox timeout up to 600 seconds). */
export const MAX_SANDBOX_TIMEOUT_SECONDS = 600;
const sandboxToolFields = {
  name: toolName("1 to 64 letters, digits or underscores."),
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

/** Tool types run in the hosted sandbox (issue 26): never allowed inside a skill (`SANDBOX_TOOL_IN_SKILL`). */
export const SANDBOXED_TOOL_TYPES = ["js_eval", "sandbox"] as const;
export const isSandboxTool = (tool: { type?: string }): tool is JsEvalTool | SandboxTool => tool.type === "js_eval" || tool.type === "sandbox";

/**
 * Every tool type an agent may hold (what a deploy and an agent update take), discriminated by `type` (absent:
 * `http`). A new type is added here and to server/hosted/runner/tool-types/index.ts.
 */
export const AgentTool = Type.Union([HttpTool, McpTool, ManualMcpTool, JsEvalTool, SandboxTool]);
export type AgentTool = Static<typeof AgentTool>;
export type ToolType = NonNullable<AgentTool["type"]>;
export const toolType = (tool: { type?: string }): string => tool.type ?? "http";

/** A sandboxed type named inside a skill: accepted by the schema only to be refused with its own code. */
export const SandboxedToolInSkill = Type.Object({ type: literals(SANDBOXED_TOOL_TYPES) }, { additionalProperties: true });

/** A tool of a skill: HTTP or MCP only (a sandboxed type is refused with `SANDBOX_TOOL_IN_SKILL`). */
export const SkillTool = Type.Union([HttpTool, McpTool, ManualMcpTool, SandboxedToolInSkill]);

/** One tool an MCP server listed, as stored with its definition (written by the service, never by a client). */
export interface McpListedTool {
  /** The name the model calls (the server's name with any character outside [A-Za-z0-9_] as `_`). */
  name: string;
  /** The server's own name of the tool, sent in `tools/call`. */
  remoteName: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

/** A tool as stored: the definition, with an MCP server's listed tools. */
export type StoredMcpTool = McpTool & { listed: McpListedTool[] };
export type StoredTool = HttpTool | ManualMcpTool | StoredMcpTool | JsEvalTool | SandboxTool;
