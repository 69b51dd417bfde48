/**
 * The skills registry as MCP tools (issue 25), on both surfaces (`market mcp` and the remote /mcp): list and search the
 * public registry, show one skill, install one into a hosted agent of yours and remove it. Each is one API call as the
 * caller's key, so the API's checks apply unchanged: a private skill of another author is `SKILL_NOT_FOUND`, an agent
 * of another account `NOT_AGENT_OWNER`, a skill needing secrets the agent lacks `SKILL_NEEDS_SECRETS`. None spends.
 */
import { AgentSkillArgs, GetSkillArgs, ListSkillsArgs, type SkillView } from "@market/core/api";
import { checkArgs } from "./schema";
import type { MarketClient } from "../client";

/** What these tools use of ./tools.ts's surface and answer (structurally: ./tools.ts lists them, so no import back). */
interface McpSurface {
  client: MarketClient;
}
interface ToolAnswer {
  data: Record<string, unknown>;
  summary: string;
}
interface SkillTool<A> {
  name: string;
  title: string;
  description: string;
  args: typeof ListSkillsArgs | typeof GetSkillArgs | typeof AgentSkillArgs;
  run(args: A, surface: McpSurface): Promise<ToolAnswer>;
}

const line = (s: SkillView) =>
  `${s.slug} (${s.name} ${s.version}): ${s.installs} install(s), tags ${s.capabilities.join(", ") || "none"}, ${s.tools.length} tool(s)` +
  (s.secretRefs.length ? `, needs secrets ${s.secretRefs.join(", ")}` : "") +
  (s.description ? ` - ${s.description.slice(0, 200)}` : "");

const listSkills: SkillTool<ListSkillsArgs> = {
  name: "list_skills",
  title: "List and search public skills",
  description:
    "List the public skills of the registry, most installed first: reusable instructions, HTTP or MCP tools and capability tags a hosted " +
    "agent can install. Filter by a capability `tag` and search text `q` (slug, name, description); paged with `limit` and `offset`. Costs nothing.",
  args: ListSkillsArgs,
  async run(args, surface) {
    const valid = checkArgs<ListSkillsArgs>(ListSkillsArgs, args);
    const { skills, total } = await surface.client.skills.list({ limit: valid.limit ?? 20, ...valid });
    const summary = skills.length === 0 ? "No public skill matches." : `${total} public skill(s):\n${skills.map(line).join("\n")}`;
    return { data: { skills, total }, summary };
  },
};

const getSkill: SkillTool<GetSkillArgs> = {
  name: "get_skill",
  title: "Show one skill",
  description:
    "Show one skill by its slug: its instructions, tools, the tool secrets it needs (names only), capability tags, version and installs. A " +
    "private skill is shown to its author only (SKILL_NOT_FOUND to anyone else). Costs nothing.",
  args: GetSkillArgs,
  async run(args, surface) {
    const { slug } = checkArgs<GetSkillArgs>(GetSkillArgs, args);
    const skill = await surface.client.skills.get(slug);
    return { data: { skill }, summary: `${line(skill)}\n\n${skill.instructions.slice(0, 2000)}` };
  },
};

const installSkill: SkillTool<AgentSkillArgs> = {
  name: "install_skill",
  title: "Install a skill into your hosted agent",
  description:
    "Install a skill (public, or your own private one) into one of your hosted agents, by the agent's id and the skill's slug: a frozen " +
    "copy joins the agent at its next start (restart a running agent). Refused when the agent is not yours (NOT_AGENT_OWNER), when the " +
    "skill needs tool secrets the agent does not hold (SKILL_NEEDS_SECRETS; secrets are set at deploy only), or is installed already " +
    "(SKILL_ALREADY_INSTALLED). Costs nothing.",
  args: AgentSkillArgs,
  async run(args, surface) {
    const { agentId, slug } = checkArgs<AgentSkillArgs>(AgentSkillArgs, args);
    const skill = await surface.client.skills.install({ agentId, slug });
    return {
      data: { agentId, skill },
      summary: `Installed ${skill.slug} ${skill.version} into agent ${agentId} (tools ${skill.tools.join(", ") || "none"}); it applies at the agent's next start.`,
    };
  },
};

const removeSkill: SkillTool<AgentSkillArgs> = {
  name: "remove_skill",
  title: "Remove a skill from your hosted agent",
  description:
    "Remove an installed skill from one of your hosted agents (its owner only: NOT_AGENT_OWNER otherwise; SKILL_NOT_INSTALLED when it is " +
    "not installed); applies at the agent's next start. Costs nothing.",
  args: AgentSkillArgs,
  async run(args, surface) {
    const { agentId, slug } = checkArgs<AgentSkillArgs>(AgentSkillArgs, args);
    await surface.client.skills.uninstall({ agentId, slug });
    return { data: { agentId, slug, removed: true }, summary: `Removed ${slug} from agent ${agentId}; it applies at the agent's next start.` };
  },
};

/** The skill tools, in the order `tools/list` shows them. */
export const SKILL_TOOLS = [listSkills, getSkill, installSkill, removeSkill] as const;
