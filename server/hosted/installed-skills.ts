/**
 * Skills installed in a hosted agent (spec "Skill"): a frozen snapshot taken at install (a later edit or deletion of
 * the skill changes nothing until the owner removes and reinstalls it), and how snapshots join the agent at start:
 * instructions appended, tools added (a name already taken becomes `<slug>__<name>`), tags added to capabilities.
 */
import { MAX_TOOL_NAME_CHARS, type InstalledSkill, type StoredTool } from "@market/core/api";
import { MarketError } from "@market/core/errors";
import type { SkillForInstall } from "../skills";
import { checkNames, functionNames, prepareTools } from "./tools";

export interface SkillSnapshot {
  skillId: number;
  slug: string;
  name: string;
  version: string;
  instructions: string;
  capabilities: string[];
  secretRefs: string[];
  tools: StoredTool[];
}

/**
 * The snapshot of `skill` for an agent holding the tool secrets `secret` knows: `SKILL_NEEDS_SECRETS` (naming them)
 * when it lacks one; each MCP server listed now, with the agent's secret.
 */
export async function snapshotOf(
  skill: SkillForInstall,
  options: { secret(name: string): string | undefined; allowPrivateNetworks: boolean },
): Promise<SkillSnapshot> {
  const missing = skill.secretRefs.filter((name) => options.secret(name) === undefined);
  if (missing.length > 0)
    throw new MarketError(
      "SKILL_NEEDS_SECRETS",
      `The skill ${skill.slug} needs the tool secrets ${missing.join(", ")}, which the agent does not hold.`,
      {
        details: missing.map((name) => ({ field: "toolSecrets", message: name })),
      },
    );
  const tools = await prepareTools(skill.tools, { ...options, field: `skills.${skill.slug}.tools` });
  return {
    skillId: skill.id,
    slug: skill.slug,
    name: skill.name,
    version: skill.version,
    instructions: skill.instructions,
    capabilities: skill.capabilities,
    secretRefs: skill.secretRefs,
    tools,
  };
}

/** A skill tool's name when its own is taken: `<slug>__<name>` (the slug's hyphens as `_`), at most 64 characters. */
const prefixed = (slug: string, name: string) => `${slug.replace(/-/g, "_")}__${name}`.slice(0, MAX_TOOL_NAME_CHARS);

/** A skill's tool renamed where its names clash with `taken` (an MCP server's listed tools renamed one by one). */
function renamed(tool: StoredTool, slug: string, taken: Set<string>): StoredTool {
  if (tool.type === "mcp") {
    const entry = taken.has(tool.name) ? prefixed(slug, tool.name) : tool.name;
    return { ...tool, name: entry, listed: tool.listed.map((t) => (taken.has(t.name) ? { ...t, name: prefixed(slug, t.name) } : t)) };
  }
  return taken.has(tool.name) ? { ...tool, name: prefixed(slug, tool.name) } : tool;
}

/** The agent's instructions, tools and capabilities with its installed skills joined, in install order. */
export function withSkills(
  base: { instructions: string; tools: StoredTool[]; capabilities: string[] },
  builtins: readonly string[],
  skills: SkillSnapshot[],
): { instructions: string; tools: StoredTool[]; capabilities: string[] } {
  const tools = [...base.tools];
  const taken = new Set<string>([...builtins, ...tools.flatMap((t) => [t.name, ...functionNames(t)])]);
  const capabilities = [...base.capabilities];
  let instructions = base.instructions;
  for (const skill of skills) {
    instructions += `\n\n## Skill: ${skill.name} (${skill.slug} ${skill.version})\n\n${skill.instructions}`;
    for (const tool of skill.tools) {
      const joined = renamed(tool, skill.slug, taken);
      tools.push(joined);
      for (const name of [joined.name, ...functionNames(joined)]) taken.add(name);
    }
    for (const tag of skill.capabilities) if (!capabilities.includes(tag)) capabilities.push(tag);
  }
  checkNames(tools, "tools");
  return { instructions, tools, capabilities };
}

export function installedView(snapshot: SkillSnapshot, installedAt: number): InstalledSkill {
  return {
    slug: snapshot.slug,
    name: snapshot.name,
    version: snapshot.version,
    capabilities: snapshot.capabilities,
    tools: snapshot.tools.map((t) => t.name),
    installedAt,
  };
}
