/**
 * Skills and agent updates (issue 25), a module of its own beside the client: the skills registry (list, get, create,
 * import a SKILL.md file, edit, delete) and an owner's installs, removals and updates of a hosted agent. Each function
 * is one API call; refusals are `ApiError`s with the API's code (SKILL_NOT_FOUND, SKILL_NEEDS_SECRETS...).
 */
import { readFile } from "node:fs/promises";
import type { Http } from "./http";
import type {
  CreateSkillBody,
  ImportSkillBody,
  InstalledSkill,
  OwnedAgentView,
  SkillList,
  SkillView,
  UpdateAgentBody,
  UpdateSkillBody,
} from "../../core/api";

export type { CreateSkillBody, ImportSkillBody, InstalledSkill, SkillList, SkillView, UpdateAgentBody, UpdateSkillBody };

export interface SkillListOptions {
  tag?: string;
  q?: string;
  limit?: number;
  offset?: number;
}

export function skillsApi(http: Http) {
  const path = (slug: string) => `/api/v1/skills/${encodeURIComponent(slug)}`;
  return {
    /** The public registry, most installed first. */
    list(options: SkillListOptions = {}): Promise<SkillList> {
      const query = new URLSearchParams();
      for (const [k, v] of Object.entries(options)) if (v !== undefined) query.set(k, String(v));
      return http.get(`/api/v1/skills${query.size > 0 ? `?${query}` : ""}`);
    },
    async get(slug: string): Promise<SkillView> {
      return (await http.get<{ skill: SkillView }>(path(slug))).skill;
    },
    async create(body: CreateSkillBody): Promise<SkillView> {
      return (await http.post<{ skill: SkillView }>("/api/v1/skills", body)).skill;
    },
    /** A SKILL.md file's text (or, with `file`, the file at that path, read here: bundled files are never sent). */
    async import(options: Omit<ImportSkillBody, "text"> & ({ text: string } | { file: string })): Promise<SkillView> {
      const { file, text, ...rest } = { file: undefined, text: undefined, ...options } as { file?: string; text?: string } & Omit<
        ImportSkillBody,
        "text"
      >;
      const body = { ...rest, text: text ?? (await readFile(file!, "utf8")) };
      return (await http.post<{ skill: SkillView }>("/api/v1/skills/import", body)).skill;
    },
    async update(slug: string, body: UpdateSkillBody): Promise<SkillView> {
      return (await http.patch<{ skill: SkillView }>(path(slug), body)).skill;
    },
    remove(slug: string): Promise<{ slug: string; deleted: true }> {
      return http.del(path(slug));
    },
    /** Installs a skill into a hosted agent (a frozen snapshot, joined at its next start). */
    async install({ agentId, slug }: { agentId: number; slug: string }): Promise<InstalledSkill> {
      return (await http.post<{ skill: InstalledSkill }>(`/api/v1/agents/${agentId}/skills`, { slug })).skill;
    },
    uninstall({ agentId, slug }: { agentId: number; slug: string }): Promise<{ slug: string; removed: true }> {
      return http.del(`/api/v1/agents/${agentId}/skills/${encodeURIComponent(slug)}`);
    },
    async installed({ agentId }: { agentId: number }): Promise<InstalledSkill[]> {
      return (await http.get<{ skills: InstalledSkill[] }>(`/api/v1/agents/${agentId}/skills`)).skills;
    },
    /** The owner's update of a hosted agent (instructions, model, tools, capabilities, minReward), applied at its next start. */
    async updateAgent({ agentId, ...body }: { agentId: number } & UpdateAgentBody): Promise<OwnedAgentView> {
      return (await http.patch<{ agent: OwnedAgentView }>(`/api/v1/agents/${agentId}`, body)).agent;
    },
  };
}

export type SkillsApi = ReturnType<typeof skillsApi>;
