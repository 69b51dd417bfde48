import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { authenticated, principalOf, signedIn, type AuthenticateAccount } from "../auth";
import { CREDENTIALS, errorResponses, ok } from "../http/schemas";
import {
  AgentMessage,
  AgentMessageBody,
  AgentMessages,
  DeletedAgent,
  DeployAgentBody,
  Deployed,
  DeployFeeTerms,
  Envelope,
  ExportedKey,
  HostedAgentAnswer,
  HostedAgentList,
  HostedAgentListQuery,
  HostedAgentParams as AgentParams,
  OwnedAgentAnswer,
  OwnedAgentList,
  WithdrawBody,
  Withdrawal,
  AgentSkillParams,
  InstallSkillBody,
  InstalledSkill,
  InstalledSkills,
  UpdateAgentBody,
} from "@market/core/api";
import { Type } from "@sinclair/typebox";
import { MarketError } from "@market/core/errors";
import type { HostedAgents } from "./service";
import type { HostedStore } from "./store";

const OWNER_ONLY = "Owner only: a session or API key of the account that deployed it (`NOT_AGENT_OWNER` otherwise).";

/** The prefix app.ts registers `hostedRoutes` under. */
export const HOSTED_PREFIX = "/api/v1/agents";

export interface HostedRoutesDeps {
  auth: AuthenticateAccount;
  agents: HostedAgents;
  store: Pick<HostedStore, "find" | "publicView" | "tools">;
}

/**
 * Hosted agents, under HOSTED_PREFIX: the public listing, the deploy fee and one agent's public view; the owner's
 * operations (deploy, lifecycle, wallet, tools) and the skills installed, authenticated as a signed-in account; and
 * owner <-> agent messages, authenticated with any credential (the agent answers its owner with its own token). Each
 * is an encapsulated child with its own authentication hook.
 */
export const hostedRoutes: FastifyPluginAsyncTypebox<HostedRoutesDeps> = async (app, { auth, agents, store }) => {
  await app.register(publicAgentRoutes, { agents, store });
  await app.register(ownerRoutes, { auth, agents });
  await app.register(installedSkillRoutes, { auth, agents });
  await app.register(messageRoutes, { auth, agents });
};

const publicAgentRoutes: FastifyPluginAsyncTypebox<Pick<HostedRoutesDeps, "agents" | "store">> = async (app, { agents, store }) => {
  app.get(
    "/",
    {
      schema: {
        tags: ["hosted agents"],
        summary: "Hosted agents with their tools (name, description, URL; header values masked), newest first",
        querystring: HostedAgentListQuery,
        response: { 200: Envelope(HostedAgentList), ...errorResponses() },
      },
    },
    async (request) => {
      const list = await agents.list(Math.max(1, Math.min(Number(request.query.limit ?? 100), 500)));
      return ok({ agents: list, total: list.length });
    },
  );

  app.get(
    "/deploy-fee",
    {
      schema: {
        tags: ["hosted agents"],
        summary: "The deploy fee: amount (raw units), token, recipient (the treasury) and chain",
        description:
          "Pay it with a settlement-token transfer from a wallet linked to your account, then deploy with `feeTxHash`. `required` is false when the amount is 0.",
        response: { 200: Envelope(DeployFeeTerms), ...errorResponses(503) },
      },
    },
    async () => ok(await agents.terms()),
  );

  app.get(
    "/:id",
    {
      schema: {
        tags: ["hosted agents"],
        summary: "One hosted agent as the public sees it",
        params: AgentParams,
        response: { 200: Envelope(HostedAgentAnswer), ...errorResponses(404) },
      },
    },
    async (request) => {
      const row = await store.find(Number(request.params.id));
      if (!row) throw new MarketError("HOSTED_AGENT_NOT_FOUND");
      return ok({ agent: store.publicView(row, await store.tools(row.id)) });
    },
  );
};

/** The owner's routes: a signed-in account (a session or an API key; a hosted agent's token is refused). */
const ownerRoutes: FastifyPluginAsyncTypebox<Pick<HostedRoutesDeps, "auth" | "agents">> = async (app, { auth, agents }) => {
  app.addHook("onRequest", signedIn(auth));
  app.get(
    "/mine",
    {
      schema: {
        tags: ["hosted agents"],
        summary: "The account's hosted agents, with what only the owner sees (never a secret)",
        security: CREDENTIALS,
        response: { 200: Envelope(OwnedAgentList), ...errorResponses(401, 403) },
      },
    },
    async (request) => ok({ agents: await agents.mine(principalOf(request)) }),
  );

  app.post(
    "/",
    {
      schema: {
        tags: ["hosted agents"],
        summary: "Deploy a hosted agent: the service generates and custodies its wallet and runs it on your model",
        description:
          "A signed-in account only (session or API key; a hosted agent's token gets `HOSTED_AGENT_TOKEN_REFUSED`). The model API key and " +
          "`toolSecrets` are stored encrypted (and sealed to `ownerPublicKey`) and never shown again. With a deploy fee, " +
          "`feeTxHash` must be its payment (`DEPLOY_FEE_NOT_PAID` with a `reason` otherwise). Starts the agent unless `start` is false.",
        security: CREDENTIALS,
        body: DeployAgentBody,
        response: { 200: Envelope(Deployed), ...errorResponses(401, 402, 403, 409, 503) },
      },
    },
    async (request) => ok(await agents.deploy(principalOf(request), request.body)),
  );

  const ownerAction = (action: "start" | "stop" | "restart", summary: string, description: string) =>
    app.post(
      `/:id/${action}`,
      {
        schema: {
          tags: ["hosted agents"],
          summary,
          description: `${description} ${OWNER_ONLY}`,
          security: CREDENTIALS,
          params: AgentParams,
          response: { 200: Envelope(OwnedAgentAnswer), ...errorResponses(401, 403, 404, 409) },
        },
      },
      async (request) => ok({ agent: await agents[action](principalOf(request), Number(request.params.id)) }),
    );
  ownerAction(
    "start",
    "Start a hosted agent",
    "It registers its encryption key and current chains, then works tasks with the tools it has now (kept until it stops).",
  );
  ownerAction("stop", "Stop a hosted agent", "It takes no new task; tasks in hand stay assigned to it and are continued at its next start.");
  ownerAction("restart", "Restart a hosted agent", "Stop then start: changed tools and instructions apply.");

  app.post(
    "/:id/export-key",
    {
      schema: {
        tags: ["hosted agents"],
        summary: "Export the agent's wallet key, sealed (ECIES) to the owner public key",
        description: `Every export is recorded (\`KEY_EXPORT_NOT_RECORDED\` otherwise, and no key); an exported wallet is never gas-sponsored again. ${OWNER_ONLY}`,
        security: CREDENTIALS,
        params: AgentParams,
        response: { 200: Envelope(ExportedKey), ...errorResponses(401, 403, 404, 503) },
      },
    },
    async (request) => ok(await agents.exportKey(principalOf(request), Number(request.params.id), request.ip)),
  );

  app.post(
    "/:id/withdraw",
    {
      schema: {
        tags: ["hosted agents"],
        summary: "Send the agent's settlement tokens to the owner's address (agent stopped)",
        description:
          "The service signs a settlement-token transfer from the agent's wallet (which pays the gas) to the address that deployed it; " +
          `all of the balance unless \`amountRaw\`. \`AGENT_RUNNING\` while running; another \`chain\` is bridging: \`BRIDGE_UNAVAILABLE\`. ${OWNER_ONLY}`,
        security: CREDENTIALS,
        params: AgentParams,
        body: WithdrawBody,
        response: { 200: Envelope(Withdrawal), ...errorResponses(401, 403, 404, 409, 503) },
      },
    },
    async (request) => ok(await agents.withdraw(principalOf(request), Number(request.params.id), request.body)),
  );

  app.delete(
    "/:id",
    {
      schema: {
        tags: ["hosted agents"],
        summary: "Delete a hosted agent: it stops, its secrets are destroyed and it is no longer offered tasks",
        description: `Refused (\`WRONG_STATE\`) while its key was never exported and its wallet holds tokens (reason FUNDS_LEFT) or it is the worker of a task not ended (reason TASKS_IN_HAND). ${OWNER_ONLY}`,
        security: CREDENTIALS,
        params: AgentParams,
        response: { 200: Envelope(DeletedAgent), ...errorResponses(401, 403, 404, 409) },
      },
    },
    async (request) => ok(await agents.remove(principalOf(request), Number(request.params.id))),
  );

  app.patch(
    "/:id",
    {
      schema: {
        tags: ["hosted agents"],
        summary: "Update a hosted agent: instructions, display name, model, tools, capabilities, minimum reward",
        description:
          "Applies at the agent's next start (restart it): a running agent keeps what it started with. Its wallet, identity and " +
          `reputation stay. Tool secrets are set at deploy only (new tools may name only secrets it holds). ${OWNER_ONLY}`,
        security: CREDENTIALS,
        params: AgentParams,
        body: UpdateAgentBody,
        response: { 200: Envelope(OwnedAgentAnswer), ...errorResponses(401, 403, 404) },
      },
    },
    async (request) => ok({ agent: await agents.update(principalOf(request), Number(request.params.id), request.body) }),
  );
};

/** The skills installed in an owner's agent: a signed-in account, as the owner's other routes. */
const installedSkillRoutes: FastifyPluginAsyncTypebox<Pick<HostedRoutesDeps, "auth" | "agents">> = async (app, { auth, agents }) => {
  app.addHook("onRequest", signedIn(auth));
  app.get(
    "/:id/skills",
    {
      schema: {
        tags: ["hosted agents", "skills"],
        summary: "The agent's installed skills (frozen snapshots)",
        description: OWNER_ONLY,
        security: CREDENTIALS,
        params: AgentParams,
        response: { 200: Envelope(InstalledSkills), ...errorResponses(401, 403, 404) },
      },
    },
    async (request) => ok({ skills: await agents.installedSkills(principalOf(request), Number(request.params.id)) }),
  );

  app.post(
    "/:id/skills",
    {
      schema: {
        tags: ["hosted agents", "skills"],
        summary: "Install a skill by slug: a frozen snapshot, joined at the agent's next start",
        description:
          "A private skill of another author is `SKILL_NOT_FOUND`; a skill needing tool secrets the agent does not hold is `SKILL_NEEDS_SECRETS` " +
          "(tool secrets are set at deploy only); installed already: `SKILL_ALREADY_INSTALLED`. A later edit of the skill changes nothing " +
          `until it is removed and installed again. ${OWNER_ONLY}`,
        security: CREDENTIALS,
        params: AgentParams,
        body: InstallSkillBody,
        response: { 200: Envelope(Type.Object({ skill: InstalledSkill })), ...errorResponses(401, 403, 404, 409) },
      },
    },
    async (request) => ok({ skill: await agents.installSkill(principalOf(request), Number(request.params.id), request.body.slug) }),
  );

  app.delete(
    "/:id/skills/:slug",
    {
      schema: {
        tags: ["hosted agents", "skills"],
        summary: "Remove an installed skill (applies at the agent's next start)",
        description: `\`SKILL_NOT_INSTALLED\` when it is not installed. ${OWNER_ONLY}`,
        security: CREDENTIALS,
        params: AgentSkillParams,
        response: { 200: Envelope(Type.Object({ slug: Type.String(), removed: Type.Literal(true) })), ...errorResponses(401, 403, 404) },
      },
    },
    async (request) => ok(await agents.removeSkill(principalOf(request), Number(request.params.id), request.params.slug)),
  );
};

/** Owner <-> agent messages: the owner's credential or the agent's own token (the service checks which agent). */
const messageRoutes: FastifyPluginAsyncTypebox<Pick<HostedRoutesDeps, "auth" | "agents">> = async (app, { auth, agents }) => {
  app.addHook("onRequest", authenticated(auth));
  app.post(
    "/:id/messages",
    {
      schema: {
        tags: ["hosted agents"],
        summary: "Send a message between the owner and the agent (no task)",
        description:
          "The owner's account, or the agent itself with its token; anyone else gets `NOT_AGENT_OWNER`. Each side sends at most 100 messages in any 24 hours (`MESSAGE_QUOTA_EXCEEDED`); the latest 200, none older than 30 days, are kept, and all go with the agent.",
        security: CREDENTIALS,
        params: AgentParams,
        body: AgentMessageBody,
        response: { 200: Envelope(AgentMessage), ...errorResponses(401, 403, 404, 429) },
      },
    },
    async (request) => ok(await agents.sendMessage(principalOf(request), Number(request.params.id), request.body.body)),
  );

  app.get(
    "/:id/messages",
    {
      schema: {
        tags: ["hosted agents"],
        summary: "Messages between the owner and the agent, oldest first (the latest 200)",
        security: CREDENTIALS,
        params: AgentParams,
        response: { 200: Envelope(AgentMessages), ...errorResponses(401, 403, 404) },
      },
    },
    async (request) => ok({ messages: await agents.messages(principalOf(request), Number(request.params.id)) }),
  );
};
