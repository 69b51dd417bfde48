import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { principalOf, signedIn, type AuthenticateAccount } from "../auth";
import { CREDENTIALS, errorResponses, ok } from "../http/schemas";
import {
  CreateSkillBody,
  DeletedSkill,
  Envelope,
  ImportSkillBody,
  SkillAnswer,
  SkillList,
  SkillListQuery,
  SkillParams,
  UpdateSkillBody,
  ImportOpenApiBody,
  ImportedDrafts,
} from "@market/core/api";
import { MarketError } from "@market/core/errors";
import { importOpenApi, MAX_OPENAPI_BYTES, OpenApiImportError } from "@market/core/openapi-import";
import { createWindows, rateLimited } from "../http/rate-limit";
import type { SkillStore } from "./store";

const AUTHOR_ONLY = "Author only: a session or API key of the account that created it (`NOT_SKILL_AUTHOR` otherwise).";
const LIMITS =
  "Limits, each with its code: instructions 16 KB (`SKILL_INSTRUCTIONS_TOO_LONG`), 20 tools (`SKILL_TOO_MANY_TOOLS`), 10 tags " +
  "(`SKILL_TOO_MANY_CAPABILITIES`), tool names 64 characters (`TOOL_NAME_TOO_LONG`); a `js_eval` or `sandbox` tool is `SANDBOX_TOOL_IN_SKILL`.";

export interface SkillRoutesDeps {
  auth: AuthenticateAccount;
  skills: SkillStore;
}

/**
 * The skills registry, under API_PREFIX: the public listing, one skill, and its author's create, import, edit and delete
 * (a signed-in account, authenticated by the route's hook).
 */
export const skillRoutes: FastifyPluginAsyncTypebox<SkillRoutesDeps> = async (app, { auth, skills }) => {
  const requireAccount = signedIn(auth);
  /** OpenAPI imports per account per hour (each parses up to 10 MB). */
  const imports = createWindows(60 * 60_000);

  app.post(
    "/tools/import-openapi",
    {
      onRequest: requireAccount,
      // 10 MB of document, JSON-escaped, with room for the envelope; the document's own size is checked apart.
      bodyLimit: 2 * MAX_OPENAPI_BYTES + 64 * 1024,
      schema: {
        tags: ["skills"],
        summary: "Draft HTTP tools from an OpenAPI 3.x JSON document, to review and confirm into an agent or a skill",
        description:
          "Nothing is stored and nothing runs: each draft's `url` is the operation's path, to be made a full URL before it is sent in a deploy, " +
          "an agent update or a skill. Name from `operationId`, description from the summary; API key in a header and HTTP bearer schemes " +
          "become `auth`; header parameters map to `header` (dropped when called); request-body fields become query parameters. " +
          "YAML, Swagger 2, 3.1-only constructs: `TOOL_IMPORT_INVALID` with a `reason`; over 10 MB: `TOOL_IMPORT_TOO_LARGE`. 30 imports per account per hour.",
        security: CREDENTIALS,
        body: ImportOpenApiBody,
        response: { 200: Envelope(ImportedDrafts), ...errorResponses(401, 403, 413, 429) },
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const retryAfter = imports.hit(`account:${principal.accountId}`, 30, Date.now());
      if (retryAfter !== undefined) throw rateLimited(retryAfter, "OpenAPI imports");
      try {
        return ok(importOpenApi(request.body.document));
      } catch (error) {
        if (error instanceof OpenApiImportError) throw new MarketError(error.code, error.message, error.reason ? { reason: error.reason } : {});
        throw error;
      }
    },
  );

  app.get(
    "/skills",
    {
      schema: {
        tags: ["skills"],
        summary: "The public skill registry, most installed first",
        description: "Public skills only; `tag` keeps skills with that capability tag, `q` searches slug, name and description.",
        querystring: SkillListQuery,
        response: { 200: Envelope(SkillList), ...errorResponses() },
      },
    },
    async (request) => {
      const limit = Math.max(1, Math.min(Number(request.query.limit ?? 50), 100));
      const offset = Number(request.query.offset ?? 0);
      return ok(
        await skills.list({
          limit,
          offset,
          ...(request.query.tag ? { tag: request.query.tag } : {}),
          ...(request.query.q ? { q: request.query.q } : {}),
        }),
      );
    },
  );

  app.get(
    "/skills/:slug",
    {
      schema: {
        tags: ["skills"],
        summary: "One skill: a private skill is visible to its author only (`SKILL_NOT_FOUND` to anyone else)",
        params: SkillParams,
        response: { 200: Envelope(SkillAnswer), ...errorResponses(401, 404) },
      },
    },
    async (request) => ok({ skill: await skills.get(await auth.optional(request), request.params.slug) }),
  );

  app.post(
    "/skills",
    {
      onRequest: requireAccount,
      schema: {
        tags: ["skills"],
        summary: "Create a skill: instructions, optional HTTP or MCP tools, the secrets they need, capability tags",
        description: `A taken slug is \`SKILL_SLUG_TAKEN\` (deleted skills keep theirs). ${LIMITS}`,
        security: CREDENTIALS,
        body: CreateSkillBody,
        response: { 200: Envelope(SkillAnswer), ...errorResponses(401, 403, 409) },
      },
    },
    async (request) => ok({ skill: await skills.create(principalOf(request), request.body) }),
  );

  app.post(
    "/skills/import",
    {
      onRequest: requireAccount,
      schema: {
        tags: ["skills"],
        summary: "Create a skill from a SKILL.md file's text (frontmatter name, description, version, license; the body is the instructions)",
        description:
          "Bundled files are never imported. Malformed frontmatter or an empty body: `SKILL_FILE_MALFORMED`; no name: `SKILL_NAME_MISSING`; " +
          `the slug defaults to the name's. ${LIMITS}`,
        security: CREDENTIALS,
        body: ImportSkillBody,
        response: { 200: Envelope(SkillAnswer), ...errorResponses(401, 403, 409) },
      },
    },
    async (request) => ok({ skill: await skills.importFile(principalOf(request), request.body) }),
  );

  app.patch(
    "/skills/:slug",
    {
      onRequest: requireAccount,
      schema: {
        tags: ["skills"],
        summary: "Edit a skill; agents that installed it keep their snapshot until they remove and reinstall it",
        description: `${AUTHOR_ONLY} ${LIMITS}`,
        security: CREDENTIALS,
        params: SkillParams,
        body: UpdateSkillBody,
        response: { 200: Envelope(SkillAnswer), ...errorResponses(401, 403, 404) },
      },
    },
    async (request) => ok({ skill: await skills.update(principalOf(request), request.params.slug, request.body) }),
  );

  app.delete(
    "/skills/:slug",
    {
      onRequest: requireAccount,
      schema: {
        tags: ["skills"],
        summary: "Delete a skill: no longer listed nor installable; agents that installed it keep it",
        description: AUTHOR_ONLY,
        security: CREDENTIALS,
        params: SkillParams,
        response: { 200: Envelope(DeletedSkill), ...errorResponses(401, 403, 404) },
      },
    },
    async (request) => ok(await skills.remove(principalOf(request), request.params.slug)),
  );
};
