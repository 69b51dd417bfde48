import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { authenticated, principalOf, type Authenticate } from "../auth";
import { addressParam } from "../http/params";
import { CREDENTIALS, errorResponses, ok } from "../http/schemas";
import type { AgentRegistry } from "./registry";
import { capabilityQuery, capabilityTags } from "./capabilities";
import { AddressParams, AgentAnswer, Envelope, ExecutorsAnswer, ExecutorsQuery, RegisterBody } from "@market/core/api";
import { isChainName } from "@market/core/chains";
import { MarketError } from "@market/core/errors";
import { MAX_UINT256 } from "@market/core/limits";

/** The prefix app.ts registers `agentRoutes` under. */
export const AGENTS_PREFIX = "/api/v1/a2a";

/** Registering agents (authenticated by the route's hook) and finding them (public). */
export const agentRoutes: FastifyPluginAsyncTypebox<{ auth: Authenticate; agents: AgentRegistry }> = async (app, { auth, agents: registry }) => {
  app.post(
    "/register",
    {
      onRequest: authenticated(auth),
      schema: {
        tags: ["agents"],
        summary: "Create or replace the calling wallet's agent record",
        description:
          "The address comes from authentication, never from the body. Registering again replaces every field " +
          "(omitted ones are cleared) and keeps reputation, completed tasks and earnings. The public key is the key the " +
          "agent opens briefs with; clients check it is the wallet's own before registering (`OWNER_MISMATCH`).",
        security: CREDENTIALS,
        body: RegisterBody,
        response: { 200: Envelope(AgentAnswer), ...errorResponses(401) },
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const body = request.body;
      const minReward = body.minReward === undefined ? undefined : BigInt(body.minReward);
      if (minReward !== undefined && minReward > MAX_UINT256) {
        throw new MarketError("VALIDATION_FAILED", "body.minReward is above 2^256-1", {
          details: [{ field: "body.minReward", message: "too large" }],
        });
      }
      const profile = await registry.register(principal.wallet, principal.accountId, {
        publicKey: body.publicKey,
        capabilities: capabilityTags(body.capabilities ?? [], "body.capabilities"),
        supportedChains: body.supportedChains?.filter(isChainName),
        displayName: body.displayName,
        minReward,
      });
      return ok({ profile });
    },
  );

  app.get(
    "/executors",
    {
      schema: {
        tags: ["agents"],
        summary: "Registered agents: address, public key, capabilities, reputation, supported chains",
        description:
          "`capabilities`: only agents holding every tag. `chain`: only agents working on that chain with a public key, " +
          "i.e. the agents a private brief on that chain can be wrapped to.",
        querystring: ExecutorsQuery,
        response: { 200: Envelope(ExecutorsAnswer), ...errorResponses() },
      },
    },
    async (request) => {
      const { capabilities, chain, limit } = request.query;
      const executors = await registry.find({
        capabilities: capabilityQuery(capabilities),
        chain: chain !== undefined && isChainName(chain) ? chain : undefined,
        limit: Math.min(Number(limit ?? 1000), 1000),
      });
      return ok({ executors, total: executors.length });
    },
  );

  app.get(
    "/executors/:address",
    {
      schema: {
        tags: ["agents"],
        summary: "One registered agent",
        params: AddressParams,
        response: { 200: Envelope(AgentAnswer), ...errorResponses(404) },
      },
    },
    async (request) => {
      const profile = await registry.get(addressParam(request.params.address));
      if (!profile) throw new MarketError("AGENT_NOT_FOUND");
      return ok({ profile });
    },
  );
};
