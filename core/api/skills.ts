/**
 * Skills (spec "Skill"): reusable instructions, tools and capability tags an author publishes by slug and owners
 * install into hosted agents as frozen snapshots. The limits are checked by the server with a code each, so the
 * schemas here bound only what a request may carry.
 */
import { Type, type Static } from "@sinclair/typebox";
import { Address } from "./common";
import { SECRET_NAME_PATTERN, SkillTool } from "./tools";

/** Instructions of a skill: at most 16 KB of UTF-8 (`SKILL_INSTRUCTIONS_TOO_LONG`). */
export const MAX_SKILL_INSTRUCTIONS_BYTES = 16 * 1024;
/** Tools of a skill (`SKILL_TOO_MANY_TOOLS`). */
export const MAX_SKILL_TOOLS = 20;
/** Capability tags of a skill (`SKILL_TOO_MANY_CAPABILITIES`). */
export const MAX_SKILL_CAPABILITIES = 10;
/** Skills installed in one agent, and skills one account may author (`SKILL_QUOTA_EXCEEDED`). */
export const MAX_SKILLS_PER_AGENT = 20;
export const MAX_SKILLS_PER_ACCOUNT = 100;
/** A SKILL.md file's text, frontmatter and body (the body is then held to the 16 KB of instructions). */
export const MAX_SKILL_FILE_BYTES = 64 * 1024;
export const SKILL_SLUG_PATTERN = "^[a-z0-9][a-z0-9-]{0,62}[a-z0-9]$|^[a-z0-9]$";

const Slug = Type.String({ pattern: SKILL_SLUG_PATTERN, maxLength: 64, description: "Lowercase letters, digits and inner hyphens; 1 to 64." });
const Name = Type.String({ minLength: 1, maxLength: 100 });
const Instructions = Type.String({ minLength: 1, maxLength: 80_000, description: "Up to 16 KB of UTF-8 (SKILL_INSTRUCTIONS_TOO_LONG beyond)." });
const Tools = Type.Array(SkillTool, {
  maxItems: 100,
  description: "Up to 20 HTTP or MCP tools (SKILL_TOO_MANY_TOOLS beyond); never js_eval or sandbox.",
});
const SecretRefs = Type.Array(Type.String({ pattern: SECRET_NAME_PATTERN }), {
  maxItems: 20,
  description: "Names of the tool secrets an agent must hold to install the skill.",
});
const Capabilities = Type.Array(Type.String({ maxLength: 64 }), {
  maxItems: 100,
  description: "Up to 10 tags (SKILL_TOO_MANY_CAPABILITIES beyond).",
});

/** POST /api/v1/skills. */
export const CreateSkillBody = Type.Object(
  {
    slug: Slug,
    name: Name,
    description: Type.Optional(Type.String({ maxLength: 2000 })),
    version: Type.Optional(Type.String({ minLength: 1, maxLength: 32, description: "Default 1.0.0." })),
    license: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    instructions: Instructions,
    tools: Type.Optional(Tools),
    secretRefs: Type.Optional(SecretRefs),
    capabilities: Type.Optional(Capabilities),
    isPublic: Type.Optional(Type.Boolean({ description: "Listed in the registry and installable by anyone; default false." })),
  },
  { additionalProperties: false },
);
export type CreateSkillBody = Static<typeof CreateSkillBody>;

/** PATCH /api/v1/skills/{slug}: any field but the slug. Agents that installed the skill keep their snapshot. */
export const UpdateSkillBody = Type.Object(
  {
    name: Type.Optional(Name),
    description: Type.Optional(Type.String({ maxLength: 2000 })),
    version: Type.Optional(Type.String({ minLength: 1, maxLength: 32 })),
    license: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 100 }), Type.Null()])),
    instructions: Type.Optional(Instructions),
    tools: Type.Optional(Tools),
    secretRefs: Type.Optional(SecretRefs),
    capabilities: Type.Optional(Capabilities),
    isPublic: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type UpdateSkillBody = Static<typeof UpdateSkillBody>;

/** POST /api/v1/skills/import: a SKILL.md file's text becomes a skill. */
export const ImportSkillBody = Type.Object(
  {
    text: Type.String({ minLength: 1, maxLength: 200_000, description: "The SKILL.md file's text (64 KB at most; SKILL_FILE_INVALID beyond)." }),
    slug: Type.Optional(Slug),
    tools: Type.Optional(Tools),
    secretRefs: Type.Optional(SecretRefs),
    capabilities: Type.Optional(Capabilities),
    isPublic: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type ImportSkillBody = Static<typeof ImportSkillBody>;

/** A skill as its readers see it: definitions are public (secrets are named, never held). */
export const SkillView = Type.Object({
  slug: Type.String(),
  name: Type.String(),
  description: Type.String(),
  version: Type.String(),
  license: Type.Union([Type.String(), Type.Null()]),
  instructions: Type.String(),
  tools: Type.Array(Type.Unknown(), { description: "The tool definitions (HTTP or MCP)." }),
  secretRefs: Type.Array(Type.String()),
  capabilities: Type.Array(Type.String()),
  isPublic: Type.Boolean(),
  author: Address,
  installs: Type.Integer({ description: "Agents that have it installed now." }),
  completions: Type.Integer({ description: "Settled tasks credited to it, over every agent that installed it (per-skill stats)." }),
  failures: Type.Integer({ description: "Failures credited to it (disputes lost or unruled, tasks never delivered), over every agent." }),
  createdAt: Type.Integer(),
  updatedAt: Type.Integer(),
});
export type SkillView = Static<typeof SkillView>;

export const SkillAnswer = Type.Object({ skill: SkillView });
export type SkillAnswer = Static<typeof SkillAnswer>;

/** GET /api/v1/skills. */
export const SkillListQuery = Type.Object(
  {
    tag: Type.Optional(Type.String({ maxLength: 64, description: "Only skills with this capability tag." })),
    q: Type.Optional(Type.String({ maxLength: 100, description: "Text found in the slug, name or description." })),
    limit: Type.Optional(Type.String({ pattern: "^[0-9]{1,3}$", description: "1 to 100; default 50." })),
    offset: Type.Optional(Type.String({ pattern: "^[0-9]{1,6}$", description: "Skills skipped; default 0." })),
  },
  { additionalProperties: false },
);
export type SkillListQuery = Static<typeof SkillListQuery>;
export const SkillList = Type.Object({ skills: Type.Array(SkillView), total: Type.Integer() });
export type SkillList = Static<typeof SkillList>;

export const SkillParams = Type.Object({ slug: Type.String({ pattern: SKILL_SLUG_PATTERN, maxLength: 64 }) });
export type SkillParams = Static<typeof SkillParams>;

export const DeletedSkill = Type.Object({ slug: Type.String(), deleted: Type.Literal(true) });
export type DeletedSkill = Static<typeof DeletedSkill>;

/** A skill installed in an agent: the snapshot taken at install. */
export const InstalledSkill = Type.Object({
  slug: Type.String(),
  name: Type.String(),
  version: Type.String(),
  capabilities: Type.Array(Type.String()),
  tools: Type.Array(Type.String(), { description: "Names of its tools as installed." }),
  installedAt: Type.Integer(),
});
export type InstalledSkill = Static<typeof InstalledSkill>;

/** POST /api/v1/agents/{id}/skills. */
export const InstallSkillBody = Type.Object({ slug: Slug }, { additionalProperties: false });
export type InstallSkillBody = Static<typeof InstallSkillBody>;
export const AgentSkillParams = Type.Object({
  id: Type.String({ pattern: "^[0-9]{1,12}$", description: "The hosted agent's id." }),
  slug: Type.String({ pattern: SKILL_SLUG_PATTERN, maxLength: 64 }),
});
export type AgentSkillParams = Static<typeof AgentSkillParams>;
export const InstalledSkills = Type.Object({ skills: Type.Array(InstalledSkill) });
export type InstalledSkills = Static<typeof InstalledSkills>;

/** POST /api/v1/tools/import-openapi: an OpenAPI 3.x JSON document's text. */
export const ImportOpenApiBody = Type.Object(
  {
    document: Type.String({
      minLength: 1,
      maxLength: 11 * 1024 * 1024,
      description: "The document's text: JSON, at most 10 MB (TOOL_IMPORT_TOO_LARGE).",
    }),
  },
  { additionalProperties: false },
);
export type ImportOpenApiBody = Static<typeof ImportOpenApiBody>;

/** Draft HTTP tools to review: each URL holds the path only and must be made full before it is deployed. */
export const ImportedDrafts = Type.Object({
  drafts: Type.Array(
    Type.Object({
      tool: Type.Unknown({ description: "An HTTP tool definition whose `url` is the operation's path." }),
      review: Type.Array(Type.String(), { description: "What to check before confirming it." }),
    }),
  ),
  servers: Type.Array(Type.String(), { description: "The document's server URLs." }),
  skipped: Type.Integer({ description: "Operations beyond the 200 drafted." }),
});
export type ImportedDrafts = Static<typeof ImportedDrafts>;
