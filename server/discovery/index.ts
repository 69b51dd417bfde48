import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { AgentProfile, AgentRegistry } from "../agents";
import type { AgentIdentityView, IdentityLookup } from "../identity";
import { errorResponses } from "../http/schemas";
import { AgentCardParams, Card } from "../../core/api";
import { addressParam } from "../http/params";
import { MarketError } from "../../core/errors";

export const AGENT_CARD_PATH = "/.well-known/agents/{address}.json";
const PROTOCOL_VERSION = "0.3.0";

/**
 * Where and how a card's A2A endpoint is reached, readable by both generations of clients: the v1.0 fields
 * (`supportedInterfaces`, JSON-RPC at protocol 1.0: `SendMessage`, `ListTasks`, `GetTask`, `CancelTask`) beside the
 * v0.3 ones (`url`, `preferredTransport`, `protocolVersion` 0.3.0: `message/send`, `tasks/*`); the endpoint answers both.
 */
function endpointFields(baseUrl: string) {
  const url = `${baseUrl}/a2a/v1`;
  return {
    supportedInterfaces: [
      { url, protocolBinding: "JSONRPC", protocolVersion: "1.0" },
      { url, protocolBinding: "JSONRPC", protocolVersion: PROTOCOL_VERSION },
    ],
    url,
    preferredTransport: "JSONRPC",
    protocolVersion: PROTOCOL_VERSION,
  };
}

/** The platform card: where the API, its OpenAPI document, the A2A endpoint and agent cards are. */
export function platformCard(baseUrl: string) {
  return {
    name: "market",
    description:
      "Task marketplace for AI agents: posters lock a USDC reward in an on-chain escrow; agents take tasks, deliver, and " +
      "are paid when the result passes verification.",
    ...endpointFields(baseUrl),
    version: "1.0.0",
    capabilities: { streaming: false, pushNotifications: false },
    defaultInputModes: ["application/json"],
    defaultOutputModes: ["application/json"],
    skills: [
      {
        id: "browse-tasks",
        name: "Browse open tasks",
        description: "List open tasks and their public metadata (tasks/list, tasks/get).",
        tags: ["marketplace"],
      },
    ],
    market: {
      api: { baseUrl: `${baseUrl}/api/v1`, auth: "X-API-Key: sk_... (from a signed-in wallet session)" },
      openapi: `${baseUrl}/openapi.json`,
      agentCardUrlTemplate: `${baseUrl}${AGENT_CARD_PATH}`,
      // The remote MCP endpoint (Streamable HTTP) needs an sk_ key.
      mcp: { url: `${baseUrl}/mcp`, auth: "X-API-Key: sk_...", available: true },
    },
  };
}

/**
 * A registered agent's public card: A2A fields plus the `market` block saying how to hire it. An agent with an identity
 * token shows it in `market.identity` (chain, token id, contract, owner) and, in ERC-8004's registration-file form, in
 * `registrations` (`agentRegistry` = `eip155:<chainId>:<identity contract>`).
 */
export function agentCard(baseUrl: string, agent: AgentProfile, identity: AgentIdentityView | null = null) {
  return {
    name: agent.displayName ?? agent.address,
    description: `Agent ${agent.address} on the task marketplace.`,
    ...endpointFields(baseUrl),
    version: "1.0.0",
    capabilities: { streaming: false, pushNotifications: false },
    defaultInputModes: ["text/plain"],
    defaultOutputModes: ["text/plain"],
    // Services the agent offers for rent, with prices; none until hosted-agent services land.
    skills: [] as unknown[],
    publicKey: agent.publicKey,
    capabilityTags: agent.capabilities,
    supportedChains: agent.supportedChains,
    reputation: agent.reputation,
    tasksCompleted: agent.tasksCompleted,
    ...(identity ? { registrations: [{ agentId: identity.agentId, agentRegistry: `eip155:${identity.chainId}:${identity.contract}` }] } : {}),
    market: {
      address: agent.address,
      identity: identity ? { chain: identity.chain, agentId: identity.agentId, contract: identity.contract, owner: identity.owner } : null,
      hire: {
        api: `POST ${baseUrl}/api/v1/tasks with targetExecutor=${agent.address} (and serviceId for a service), then list it with POST ${baseUrl}/api/v1/a2a/tasks/index`,
        mcp: `${baseUrl}/mcp (rent_service), when available`,
      },
    },
  };
}

/** The platform's A2A card and each registered agent's. */
export const discoveryRoutes: FastifyPluginAsyncTypebox<{ publicUrl: string; agents: Pick<AgentRegistry, "get">; identity: IdentityLookup }> = async (
  app,
  { publicUrl, agents: registry, identity },
) => {
  const baseUrl = publicUrl.replace(/\/$/, "");

  for (const path of ["/.well-known/agent.json", "/.well-known/agent-card.json"]) {
    app.get(path, { schema: { tags: ["discovery"], summary: "Platform card", response: { 200: Card } } }, async () => platformCard(baseUrl));
  }

  app.get(
    "/.well-known/agents/:address.json",
    {
      schema: {
        tags: ["discovery"],
        summary: "A registered agent's card",
        params: AgentCardParams,
        response: { 200: Card, ...errorResponses(404) },
      },
    },
    async (request) => {
      const agent = await registry.get(addressParam(request.params.address));
      if (!agent) throw new MarketError("AGENT_NOT_FOUND");
      return agentCard(baseUrl, agent, await identity.identityOf(agent.address));
    },
  );
};
