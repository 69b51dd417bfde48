/**
 * The skills registry (spec "Skill"): authors create, edit and delete skills by slug; the public ones are listed most
 * installed first. A private skill exists for its author only (`SKILL_NOT_FOUND` to anyone else). Every limit has its
 * own code, checked before anything is written. Installing (a frozen snapshot into an agent) is the hosted domain's:
 * it reads skills through `forInstall`.
 */
import { sql } from "kysely";
import { isUniqueViolation, json, type Db } from "../db";
import type { Principal } from "../auth";
import type { Selectable } from "kysely";
import type { SkillsTable } from "../db/schema";
import { capabilityTags } from "../agents";
import { MarketError } from "@market/core/errors";
import { parseSkillFile, SkillFileError, slugOf } from "@market/core/skill-md";
import { refuseSandboxToolsInSkill } from "@market/core/sandbox";
import {
  MAX_SKILL_CAPABILITIES,
  MAX_SKILL_INSTRUCTIONS_BYTES,
  MAX_SKILL_TOOLS,
  MAX_SKILLS_PER_ACCOUNT,
  MAX_SKILL_FILE_BYTES,
  SKILL_SLUG_PATTERN,
  asAddress,
  type AgentTool,
  type CreateSkillBody,
  type ImportSkillBody,
  type SkillView,
  type UpdateSkillBody,
} from "@market/core/api";

/** The tool checks of the hosted domain (names, URLs, auth), given by the composition root. */
export type CheckToolDefinition = (tool: AgentTool, field: string) => void;

export type SkillRow = Selectable<SkillsTable>;
export type SkillStore = ReturnType<typeof createSkillStore>;

/** The fields of a skill once checked: what is stored. */
interface SkillFields {
  name: string;
  description: string;
  version: string;
  license: string | null;
  instructions: string;
  tools: AgentTool[];
  secretRefs: string[];
  capabilities: string[];
  isPublic: boolean;
}

export function createSkillStore({ db, now, checkTool }: { db: Db; now: () => number; checkTool: CheckToolDefinition }) {
  function refuseAgentToken(principal: Principal) {
    if (principal.kind === "hostedAgent") throw new MarketError("HOSTED_AGENT_TOKEN_REFUSED", "A hosted agent's token cannot author skills.");
  }

  /** Every limit with its code, then each tool by its type's rules: the fields as stored. */
  function check(fields: SkillFields): SkillFields {
    const bytes = Buffer.byteLength(fields.instructions, "utf8");
    if (bytes > MAX_SKILL_INSTRUCTIONS_BYTES)
      throw new MarketError("SKILL_INSTRUCTIONS_TOO_LONG", `The instructions are ${bytes} bytes; at most ${MAX_SKILL_INSTRUCTIONS_BYTES}.`);
    if (fields.tools.length > MAX_SKILL_TOOLS)
      throw new MarketError("SKILL_TOO_MANY_TOOLS", `${fields.tools.length} tools; a skill holds at most ${MAX_SKILL_TOOLS}.`);
    if (fields.capabilities.length > MAX_SKILL_CAPABILITIES)
      throw new MarketError("SKILL_TOO_MANY_CAPABILITIES", `${fields.capabilities.length} tags; a skill holds at most ${MAX_SKILL_CAPABILITIES}.`);
    const capabilities = capabilityTags(fields.capabilities, "body.capabilities");
    const names = new Set<string>();
    const secretRefs = new Set(fields.secretRefs);
    // JS Eval and Sandbox tools need the hosted sandbox: never inside a skill (issue 26's own code).
    refuseSandboxToolsInSkill(fields.tools, "body.tools");
    fields.tools.forEach((tool, i) => {
      checkTool(tool, `body.tools.${i}`);
      if (names.has(tool.name))
        throw new MarketError("VALIDATION_FAILED", `body.tools.${i}.name is used by another tool`, {
          details: [{ field: `body.tools.${i}.name`, message: "is used by another tool" }],
        });
      names.add(tool.name);
      // A secret a tool authenticates with is a secret the skill needs.
      const auth = "auth" in tool ? tool.auth : undefined;
      const ref = auth && auth.type !== "none" ? auth.secretRef : undefined;
      if (ref) secretRefs.add(ref);
    });
    return { ...fields, capabilities, secretRefs: [...secretRefs].sort() };
  }

  async function installs(skillIds: number[]): Promise<Map<number, number>> {
    if (skillIds.length === 0) return new Map();
    const rows = await db
      .selectFrom("hosted_agent_skills")
      .innerJoin("hosted_agents", "hosted_agents.id", "hosted_agent_skills.agent_id")
      .select(["hosted_agent_skills.skill_id as id", (eb) => eb.fn.countAll<number>().as("n")])
      .where("hosted_agent_skills.skill_id", "in", skillIds)
      .where("hosted_agents.state", "!=", "deleted")
      .groupBy("hosted_agent_skills.skill_id")
      .execute();
    return new Map(rows.map((r) => [r.id, Number(r.n)]));
  }

  /** Per skill: the settled completions and failures credited to it over every agent (issue 25 item 7). */
  async function records(skillIds: number[]): Promise<Map<number, { completions: number; failures: number }>> {
    if (skillIds.length === 0) return new Map();
    const rows = await db
      .selectFrom("skill_stats")
      .select([
        "skill_id as id",
        (eb) => eb.fn.sum<number | string>("completions").as("completions"),
        (eb) => eb.fn.sum<number | string>("failures").as("failures"),
      ])
      .where("skill_id", "in", skillIds)
      .groupBy("skill_id")
      .execute();
    // PostgreSQL answers bigint sums as strings.
    return new Map(rows.map((r) => [r.id, { completions: Number(r.completions), failures: Number(r.failures) }]));
  }

  function view(row: SkillRow, installCount: number, record = { completions: 0, failures: 0 }): SkillView {
    return {
      slug: row.slug,
      name: row.name,
      description: row.description,
      version: row.version,
      license: row.license,
      instructions: row.instructions,
      tools: json.read<unknown[]>(row.tools) ?? [],
      secretRefs: json.read<string[]>(row.secret_refs) ?? [],
      capabilities: json.read<string[]>(row.capabilities) ?? [],
      isPublic: row.is_public === 1,
      author: asAddress(row.author_address),
      installs: installCount,
      completions: record.completions,
      failures: record.failures,
      createdAt: row.created_at,
      updatedAt: row.updated_at,
    };
  }

  async function viewOf(row: SkillRow): Promise<SkillView> {
    return view(row, (await installs([row.id])).get(row.id) ?? 0, (await records([row.id])).get(row.id));
  }

  async function findLive(slug: string): Promise<SkillRow | undefined> {
    const row = await db.selectFrom("skills").selectAll().where("slug", "=", slug).where("deleted_at", "is", null).executeTakeFirst();
    return row;
  }

  /** The skill as `principal` may see it: a private skill of another author does not exist for them. */
  async function visible(slug: string, principal: Principal | undefined): Promise<SkillRow> {
    const row = await findLive(slug);
    if (!row || (row.is_public !== 1 && row.account_id !== principal?.accountId)) throw new MarketError("SKILL_NOT_FOUND", `No skill ${slug}.`);
    return row;
  }

  /** The skill, for its author only: `SKILL_NOT_FOUND` when `principal` may not see it, `NOT_SKILL_AUTHOR` when it may but is not its author. */
  async function authored(slug: string, principal: Principal): Promise<SkillRow> {
    refuseAgentToken(principal);
    const row = await visible(slug, principal);
    if (row.account_id !== principal.accountId) throw new MarketError("NOT_SKILL_AUTHOR");
    return row;
  }

  async function create(principal: Principal, body: CreateSkillBody): Promise<SkillView> {
    refuseAgentToken(principal);
    const fields = check({
      name: body.name,
      description: body.description ?? "",
      version: body.version ?? "1.0.0",
      license: body.license ?? null,
      instructions: body.instructions,
      tools: (body.tools ?? []) as AgentTool[],
      secretRefs: body.secretRefs ?? [],
      capabilities: body.capabilities ?? [],
      isPublic: body.isPublic ?? false,
    });
    const taken = await db.selectFrom("skills").select("id").where("slug", "=", body.slug).executeTakeFirst();
    if (taken) throw new MarketError("SKILL_SLUG_TAKEN", `The slug ${body.slug} is taken.`);
    const authoredCount = await db
      .selectFrom("skills")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .where("account_id", "=", principal.accountId)
      .where("deleted_at", "is", null)
      .executeTakeFirstOrThrow();
    if (Number(authoredCount.n) >= MAX_SKILLS_PER_ACCOUNT)
      throw new MarketError("SKILL_QUOTA_EXCEEDED", `An account may author ${MAX_SKILLS_PER_ACCOUNT} skills; delete one first.`);
    const at = now();
    try {
      await db
        .insertInto("skills")
        .values({
          slug: body.slug,
          account_id: principal.accountId,
          author_address: principal.wallet,
          name: fields.name,
          description: fields.description,
          version: fields.version,
          license: fields.license,
          instructions: fields.instructions,
          tools: json.write(fields.tools),
          secret_refs: json.write(fields.secretRefs),
          capabilities: json.write(fields.capabilities),
          is_public: fields.isPublic ? 1 : 0,
          created_at: at,
          updated_at: at,
          deleted_at: null,
        })
        .execute();
    } catch (error) {
      if (isUniqueViolation(error)) throw new MarketError("SKILL_SLUG_TAKEN", `The slug ${body.slug} is taken.`);
      throw error;
    }
    return viewOf((await findLive(body.slug))!);
  }

  async function update(principal: Principal, slug: string, body: UpdateSkillBody): Promise<SkillView> {
    const row = await authored(slug, principal);
    const current = view(row, 0);
    const fields = check({
      name: body.name ?? current.name,
      description: body.description ?? current.description,
      version: body.version ?? current.version,
      license: body.license === undefined ? current.license : body.license,
      instructions: body.instructions ?? current.instructions,
      tools: (body.tools ?? current.tools) as AgentTool[],
      // Without new tools or secret names, the needed secrets stay as they are.
      secretRefs: body.secretRefs ?? (body.tools ? [] : current.secretRefs),
      capabilities: body.capabilities ?? current.capabilities,
      isPublic: body.isPublic ?? current.isPublic,
    });
    await db
      .updateTable("skills")
      .set({
        name: fields.name,
        description: fields.description,
        version: fields.version,
        license: fields.license,
        instructions: fields.instructions,
        tools: json.write(fields.tools),
        secret_refs: json.write(fields.secretRefs),
        capabilities: json.write(fields.capabilities),
        is_public: fields.isPublic ? 1 : 0,
        updated_at: now(),
      })
      .where("id", "=", row.id)
      .execute();
    return viewOf((await findLive(slug))!);
  }

  /** Marks the skill deleted (its slug stays taken); agents that installed it keep their snapshot. */
  async function remove(principal: Principal, slug: string): Promise<{ slug: string; deleted: true }> {
    const row = await authored(slug, principal);
    await db.updateTable("skills").set({ deleted_at: now(), updated_at: now() }).where("id", "=", row.id).execute();
    return { slug, deleted: true };
  }

  async function get(principal: Principal | undefined, slug: string): Promise<SkillView> {
    return viewOf(await visible(slug, principal));
  }

  /** The public registry, most installed first (then newest), by tag and text, paged. */
  async function list(query: { tag?: string; q?: string; limit: number; offset: number }): Promise<{ skills: SkillView[]; total: number }> {
    let base = db.selectFrom("skills").where("is_public", "=", 1).where("deleted_at", "is", null);
    // LIKE with `\` escaping its wildcards (ESCAPE is the same in SQLite and PostgreSQL).
    const like = (column: "slug" | "name" | "description" | "capabilities", text: string) =>
      sql<boolean>`lower(${sql.ref(`skills.${column}`)}) like ${`%${text.toLowerCase().replace(/[%_\\]/g, "\\$&")}%`} escape '\\'`;
    // A blank tag (spaces alone) filters nothing, as a blank entry of `capabilities` does elsewhere.
    const [tag] = query.tag ? capabilityTags([query.tag], "query.tag") : [];
    if (tag) {
      // Tags are stored as a JSON array of strings: `"tag"` appears in it exactly when the tag is one of them.
      base = base.where(like("capabilities", JSON.stringify(tag)));
    }
    if (query.q) {
      const q = query.q;
      base = base.where((eb) => eb.or([like("slug", q), like("name", q), like("description", q)]));
    }
    const total = Number((await base.select((eb) => eb.fn.countAll<number>().as("n")).executeTakeFirstOrThrow()).n);
    const installed = db
      .selectFrom("hosted_agent_skills")
      .innerJoin("hosted_agents", "hosted_agents.id", "hosted_agent_skills.agent_id")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .whereRef("hosted_agent_skills.skill_id", "=", sql.ref("skills.id"))
      .where("hosted_agents.state", "!=", "deleted");
    const rows = await base
      .selectAll("skills")
      .select(installed.as("installs"))
      .orderBy(sql`installs`, "desc")
      .orderBy("skills.id", "desc")
      .limit(query.limit)
      .offset(query.offset)
      .execute();
    const credited = await records(rows.map((r) => r.id));
    return { skills: rows.map((r) => view(r, Number(r.installs ?? 0), credited.get(r.id))), total };
  }

  /** A skill to install for `principal` (public, or their own): `SKILL_NOT_FOUND` otherwise. */
  async function forInstall(principal: Principal, slug: string) {
    const row = await visible(slug, principal);
    const v = view(row, 0);
    return {
      id: row.id,
      slug: v.slug,
      name: v.name,
      version: v.version,
      instructions: v.instructions,
      tools: v.tools as AgentTool[],
      secretRefs: v.secretRefs,
      capabilities: v.capabilities,
      isPublic: v.isPublic,
    };
  }

  /** A SKILL.md file's text as a new skill: its name, description, version, license and body (as instructions). */
  async function importFile(principal: Principal, body: ImportSkillBody): Promise<SkillView> {
    refuseAgentToken(principal);
    if (Buffer.byteLength(body.text, "utf8") > MAX_SKILL_FILE_BYTES)
      throw new MarketError("SKILL_FILE_MALFORMED", `The file is over ${MAX_SKILL_FILE_BYTES} bytes.`);
    let file;
    try {
      file = parseSkillFile(body.text);
    } catch (error) {
      if (error instanceof SkillFileError) throw new MarketError(error.code, error.message);
      throw error;
    }
    const slug = body.slug ?? slugOf(file.name);
    if (!new RegExp(SKILL_SLUG_PATTERN).test(slug))
      throw new MarketError("VALIDATION_FAILED", "body.slug is needed: the name gives no slug", {
        details: [{ field: "body.slug", message: "required" }],
      });
    return create(principal, {
      slug,
      name: file.name.slice(0, 100),
      description: file.description.slice(0, 2000),
      version: file.version.slice(0, 32),
      ...(file.license ? { license: file.license.slice(0, 100) } : {}),
      instructions: file.instructions,
      ...(body.tools ? { tools: body.tools } : {}),
      ...(body.secretRefs ? { secretRefs: body.secretRefs } : {}),
      ...(body.capabilities ? { capabilities: body.capabilities } : {}),
      ...(body.isPublic === undefined ? {} : { isPublic: body.isPublic }),
    });
  }

  return { create, importFile, update, remove, get, list, forInstall };
}

export type SkillForInstall = Awaited<ReturnType<SkillStore["forInstall"]>>;
