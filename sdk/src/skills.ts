/**
 * Skills and agent updates (issue 25), a module of its own beside the client: the skills registry (list, get, create,
 * import a SKILL.md file, edit, delete) and an owner's installs, removals and updates of a hosted agent. Each function
 * is one API call; refusals are `ApiError`s with the API's code (SKILL_NOT_FOUND, SKILL_NEEDS_SECRETS...).
 */
import type { Http } from "./http";
import { MAX_OPENAPI_BYTES } from "@market/core/openapi-import";
import { clientError } from "./errors";
import type {
  CreateSkillBody,
  ImportedDrafts,
  ImportSkillBody,
  InstalledSkill,
  OwnedAgentView,
  SkillList,
  SkillView,
  UpdateAgentBody,
  UpdateSkillBody,
} from "@market/core/api";

export type { CreateSkillBody, ImportedDrafts, ImportSkillBody, InstalledSkill, SkillList, SkillView, UpdateAgentBody, UpdateSkillBody };

/** Where an OpenAPI document comes from: its text (or parsed JSON), a file, or an http(s) URL fetched by the client. */
export type OpenApiSource = { document: string | Record<string, unknown> } | { file: string } | { url: string };

const tooLarge = () => clientError("TOOL_IMPORT_TOO_LARGE", `The OpenAPI document is over ${MAX_OPENAPI_BYTES} bytes; nothing was sent.`);

/** Reads the document's text from `source`, at most 10 MB (`TOOL_IMPORT_TOO_LARGE`), with a clear code when it cannot. */
async function openApiText(source: OpenApiSource, fetchImpl: typeof fetch = fetch): Promise<string> {
  if ("document" in source) {
    const text = typeof source.document === "string" ? source.document : JSON.stringify(source.document);
    if (Buffer.byteLength(text, "utf8") > MAX_OPENAPI_BYTES) throw tooLarge();
    return text;
  }
  if ("file" in source) {
    let text: string;
    try {
      text = await readLocalFile(source.file);
    } catch (error) {
      throw clientError("VALIDATION_FAILED", `cannot read ${source.file}: ${(error as Error).message}`);
    }
    if (Buffer.byteLength(text, "utf8") > MAX_OPENAPI_BYTES) throw tooLarge();
    return text;
  }
  let url: URL;
  try {
    url = new URL(source.url);
  } catch {
    throw clientError("VALIDATION_FAILED", `${source.url} is not a URL`);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") throw clientError("VALIDATION_FAILED", `${source.url} is not an http(s) URL`);
  let response: Response;
  try {
    response = await fetchImpl(url, { headers: { accept: "application/json" }, redirect: "follow", signal: AbortSignal.timeout(60_000) });
  } catch (error) {
    throw clientError("NETWORK_ERROR", `fetching ${url.host} failed: ${(error as Error).message}`);
  }
  if (!response.ok) throw clientError("VALIDATION_FAILED", `fetching the document answered HTTP ${response.status}`);
  if (Number(response.headers.get("content-length") ?? 0) > MAX_OPENAPI_BYTES) throw tooLarge();
  // Read at most 10 MB (and one byte more, to know it is over).
  const reader = response.body?.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  while (reader) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_OPENAPI_BYTES) {
      await reader.cancel();
      throw tooLarge();
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString("utf8");
}

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
      const body = { ...rest, text: text ?? (await readLocalFile(file!)) };
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
    /**
     * Draft HTTP tools from an OpenAPI 3.x JSON document (its text or JSON, a file, or an http(s) URL this client
     * fetches): nothing is stored and nothing runs. Each draft's `url` is the operation's path: make it full, review it,
     * and confirm it into a deploy, `updateAgent` or a skill. Refusals: TOOL_IMPORT_INVALID (with `reason`), TOOL_IMPORT_TOO_LARGE.
     */
    async importOpenApi(source: OpenApiSource): Promise<ImportedDrafts> {
      return http.post<ImportedDrafts>("/api/v1/tools/import-openapi", { document: await openApiText(source) });
    },
    /** The owner's update of a hosted agent (instructions, model, tools, capabilities, minReward), applied at its next start. */
    async updateAgent({ agentId, ...body }: { agentId: number } & UpdateAgentBody): Promise<OwnedAgentView> {
      return (await http.patch<{ agent: OwnedAgentView }>(`/api/v1/agents/${agentId}`, body)).agent;
    },
  };
}

export type SkillsApi = ReturnType<typeof skillsApi>;

/** Reads a local file (Node only: loaded when asked, so a web page that never reads a file loads no Node module). */
async function readLocalFile(file: string): Promise<string> {
  const { readFile } = await import("node:fs/promises");
  return readFile(file, "utf8");
}
