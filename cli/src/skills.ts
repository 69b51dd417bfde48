/**
 * `market skills`: the skills registry and installs (issue 25). `list` (public, most installed first), `create` (from
 * a JSON file of the skill's fields), `import ./SKILL.md` (frontmatter and body; bundled files are never read),
 * `install` / `remove` into one of your hosted agents (joined at its next start). `--json` prints the API's answer.
 */
import { readFileSync } from "node:fs";
import { MarketClient } from "../../sdk/src/client";
import { clientError } from "../../sdk/src/errors";
import type { CreateSkillBody } from "@market/core/api";
import { clientOptions, publicClientOptions, type CliConfig } from "./config";
import type { Terminal } from "./terminal";

export interface SkillsListFlags {
  tag?: string;
  search?: string;
  limit?: number;
}

export async function skillsListCommand(flags: SkillsListFlags, config: CliConfig, terminal: Terminal): Promise<number> {
  const client = new MarketClient(publicClientOptions(config));
  const answer = await client.skills.list({
    ...(flags.tag ? { tag: flags.tag } : {}),
    ...(flags.search ? { q: flags.search } : {}),
    ...(flags.limit ? { limit: flags.limit } : {}),
  });
  terminal.data(answer);
  if (answer.skills.length === 0) {
    terminal.say("no public skills");
    return 0;
  }
  for (const k of answer.skills)
    terminal.say(`${k.slug}\t${k.name} ${k.version}\tinstalls ${k.installs}\ttags ${k.capabilities.join(",") || "-"}\ttools ${k.tools.length}`);
  terminal.say(`${answer.skills.length} of ${answer.total} public skill(s); install one with: market skills install <slug> --agent <id>`);
  return 0;
}

export async function skillsCreateCommand(file: string, config: CliConfig, terminal: Terminal): Promise<number> {
  let body: CreateSkillBody;
  try {
    body = JSON.parse(readFileSync(file, "utf8")) as CreateSkillBody;
  } catch (error) {
    throw clientError("VALIDATION_FAILED", `${file} is not a readable JSON file of the skill's fields: ${(error as Error).message}`);
  }
  const skill = await new MarketClient(clientOptions(config, { signs: false })).skills.create(body);
  terminal.data({ skill });
  terminal.say(`created skill ${skill.slug} (${skill.isPublic ? "public" : "private"})`);
  return 0;
}

export interface SkillsImportFlags {
  slug?: string;
  public?: boolean;
  tag?: string[];
}

export async function skillsImportCommand(file: string, flags: SkillsImportFlags, config: CliConfig, terminal: Terminal): Promise<number> {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    throw clientError("VALIDATION_FAILED", `cannot read ${file}: ${(error as Error).message}`);
  }
  const skill = await new MarketClient(clientOptions(config, { signs: false })).skills.import({
    text,
    ...(flags.slug ? { slug: flags.slug } : {}),
    ...(flags.public ? { isPublic: true } : {}),
    ...(flags.tag?.length ? { capabilities: flags.tag } : {}),
  });
  terminal.data({ skill });
  terminal.say(`imported ${file} as skill ${skill.slug} ${skill.version} (${skill.isPublic ? "public" : "private"})`);
  return 0;
}

export async function skillsInstallCommand(slug: string, agentId: number, config: CliConfig, terminal: Terminal): Promise<number> {
  const skill = await new MarketClient(clientOptions(config, { signs: false })).skills.install({ agentId, slug });
  terminal.data({ skill });
  terminal.say(`installed ${skill.slug} ${skill.version} into agent ${agentId}; it joins at the agent's next start (market: restart it)`);
  return 0;
}

export async function skillsRemoveCommand(slug: string, agentId: number, config: CliConfig, terminal: Terminal): Promise<number> {
  const removed = await new MarketClient(clientOptions(config, { signs: false })).skills.uninstall({ agentId, slug });
  terminal.data(removed);
  terminal.say(`removed ${slug} from agent ${agentId}; it leaves at the agent's next start`);
  return 0;
}
