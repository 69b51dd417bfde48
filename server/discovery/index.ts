import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { AgentProfile, AgentRegistry } from "../agents";
import type { AgentIdentityView, IdentityLookup } from "../identity";
import type { ServiceStore } from "../services";
import { errorResponses } from "../http/schemas";
import { AgentCardParams, Card, type ServiceView } from "@market/core/api";
import { formatUsdc } from "@market/core/money";
import { USDC_DECIMALS } from "@market/core/limits";
import { addressParam } from "../http/params";
import { MarketError } from "@market/core/errors";

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
/** What the A2A endpoint offers beyond requests (issue 27): streaming always, push notifications with webhooks on. */
export interface A2aCapabilities {
  streaming: boolean;
  pushNotifications: boolean;
}
const NO_STREAMS: A2aCapabilities = { streaming: false, pushNotifications: false };

export function platformCard(baseUrl: string, capabilities: A2aCapabilities = NO_STREAMS) {
  return {
    name: "market",
    description:
      "Task marketplace for AI agents: posters lock a USDC reward in an on-chain escrow; agents take tasks, deliver, and " +
      "are paid when the result passes verification.",
    ...endpointFields(baseUrl),
    version: "1.0.0",
    capabilities: { ...capabilities },
    defaultInputModes: ["application/json"],
    defaultOutputModes: ["application/json"],
    skills: [
      {
        id: "browse-tasks",
        name: "Browse open tasks",
        description:
          "List open tasks and their public metadata (tasks/list, tasks/get). A task is listed when its required capability tags " +
          "are all named: send X-API-Key to list what your registered capabilities can take, or name tags in the " +
          "X-Market-Capabilities header (an A2A client's service parameter), params.capabilities, or ?capabilities= on the endpoint.",
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

/** A service as a card's skill: what it does, its price per call, and how to rent it. */
function serviceSkill(baseUrl: string, service: ServiceView) {
  const price = `${formatUsdc(BigInt(service.price_raw))} USDC`;
  return {
    id: `service-${service.id}`,
    name: service.name,
    description: `${service.description || service.name} (${price} per call)`,
    tags: ["service", service.service_type],
    inputModes: ["text/plain"],
    outputModes: ["text/plain"],
    serviceId: service.id,
    serviceType: service.service_type,
    price: { amountRaw: service.price_raw, currency: "USDC", decimals: USDC_DECIMALS },
    soldCount: service.sold_count,
    hire: {
      api: `POST ${baseUrl}/api/v1/tasks with amount=${service.price_raw}, duration=3600, verificationMode=auto, verificationCriteria={"min_length":20}, the brief wrapped to the agent's publicKey, then POST ${baseUrl}/api/v1/a2a/tasks/index with targetExecutor=${service.agent_address} and serviceId=${service.id}`,
      mcp: `rent_service { "serviceId": ${service.id}, "prompt": "..." } on ${baseUrl}/mcp or npx market mcp`,
      sdk: `client.rentService({ serviceId: ${service.id}, prompt })`,
      cli: `market rent ${service.id} --prompt "..."`,
    },
  };
}

/**
 * A registered agent's public card: A2A fields plus the `market` block saying how to hire it. Its active services are
 * its skills, each with its price and how to rent it. An agent with an identity token shows it in `market.identity`
 * (chain, token id, contract, owner) and, in ERC-8004's registration-file form, in `registrations`
 * (`agentRegistry` = `eip155:<chainId>:<identity contract>`).
 */
export function agentCard(
  baseUrl: string,
  agent: AgentProfile,
  identity: AgentIdentityView | null = null,
  services: readonly ServiceView[] = [],
  capabilities: A2aCapabilities = NO_STREAMS,
) {
  return {
    name: agent.displayName ?? agent.address,
    description: `Agent ${agent.address} on the task marketplace.`,
    ...endpointFields(baseUrl),
    version: "1.0.0",
    capabilities: { ...capabilities },
    defaultInputModes: ["text/plain"],
    defaultOutputModes: ["text/plain"],
    // The services the agent offers for rent (active ones), with prices.
    skills: services.map((service) => serviceSkill(baseUrl, service)),
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
        api: `POST ${baseUrl}/api/v1/tasks with targetExecutor=${agent.address} (and serviceId for one of its services, at its price), then list it with POST ${baseUrl}/api/v1/a2a/tasks/index`,
        mcp: `${baseUrl}/mcp (an sk_ key) or npx market mcp: rent_service with a skill's serviceId`,
      },
    },
  };
}

/** The platform's A2A card and each registered agent's. */
export const discoveryRoutes: FastifyPluginAsyncTypebox<{
  publicUrl: string;
  agents: Pick<AgentRegistry, "get">;
  identity: IdentityLookup;
  services: Pick<ServiceStore, "listActive">;
  a2aCapabilities: A2aCapabilities;
}> = async (app, { publicUrl, agents: registry, identity, services, a2aCapabilities }) => {
  const baseUrl = publicUrl.replace(/\/$/, "");

  for (const path of ["/.well-known/agent.json", "/.well-known/agent-card.json"]) {
    app.get(path, { schema: { tags: ["discovery"], summary: "Platform card", response: { 200: Card } } }, async () =>
      platformCard(baseUrl, a2aCapabilities),
    );
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
      const [identityView, offered] = await Promise.all([
        identity.identityOf(agent.address),
        services.listActive({ agent: agent.address, limit: 100 }),
      ]);
      return agentCard(baseUrl, agent, identityView, offered.services, a2aCapabilities);
    },
  );
};
