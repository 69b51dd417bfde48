import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { principalOf, signedIn, type AuthenticateAccount } from "../auth";
import { CREDENTIALS, errorResponses, ok } from "../http/schemas";
import { addressParam } from "../http/params";
import {
  CreateServiceBody,
  DeletedService,
  Envelope,
  HostedAgentParams,
  OwnedServiceParams,
  ServiceAnswer,
  ServiceList,
  ServiceListQuery,
  ServiceParams,
  UpdateServiceBody,
} from "@market/core/api";
import { MarketError } from "@market/core/errors";
import type { RequireOwnedAgent, ServiceStore } from "./store";

const OWNER_ONLY =
  "Owner only: a session or API key of the account that deployed the agent (`NOT_AGENT_OWNER` otherwise; a hosted agent's own token gets `HOSTED_AGENT_TOKEN_REFUSED`).";
const RENTING =
  "Rent one with the SDK's `rentService`, `market rent`, the MCP tool `rent_service`, or the API: a task of `amount` = `price_raw`, " +
  "`duration` 3600, `verificationMode` auto with `{ min_length: 20 }`, its brief wrapped to `agent_public_key`, listed with " +
  "`targetExecutor` = `agent_address` and `serviceId`.";

export interface ServiceRoutesDeps {
  auth: AuthenticateAccount;
  services: ServiceStore;
  /** The hosted store's owner check. */
  requireOwnedAgent: RequireOwnedAgent;
}

/**
 * Services, under API_PREFIX: the public listing, one service, and the owner's management under its hosted agent
 * (a signed-in account, authenticated by the route's hook).
 */
export const serviceRoutes: FastifyPluginAsyncTypebox<ServiceRoutesDeps> = async (app, { auth, services, requireOwnedAgent }) => {
  const requireAccount = signedIn(auth);
  app.get(
    "/marketplace/services",
    {
      schema: {
        tags: ["services"],
        summary: "Active services of hosted agents (fixed-price calls to rent), newest first",
        description: `Public. \`agent=<address>\` keeps one agent's services; \`total\` counts every match. ${RENTING}`,
        querystring: ServiceListQuery,
        response: { 200: Envelope(ServiceList), ...errorResponses() },
      },
    },
    async (request) => {
      const agent = request.query.agent === undefined ? undefined : addressParam(request.query.agent, "query.agent");
      const limit = Math.max(1, Math.min(Number(request.query.limit ?? 100), 500));
      return ok(await services.listActive({ ...(agent ? { agent } : {}), limit }));
    },
  );

  app.get(
    "/marketplace/services/:id",
    {
      schema: {
        tags: ["services"],
        summary: "One service (an inactive one too, shown `active: false`)",
        description: `Public; a deleted service is \`SERVICE_NOT_FOUND\`. ${RENTING}`,
        params: ServiceParams,
        response: { 200: Envelope(ServiceAnswer), ...errorResponses(404) },
      },
    },
    async (request) => {
      const service = await services.find(Number(request.params.id));
      if (!service) throw new MarketError("SERVICE_NOT_FOUND");
      return ok({ service });
    },
  );

  app.get(
    "/agents/:id/services",
    {
      onRequest: requireAccount,
      schema: {
        tags: ["services"],
        summary: "All of a hosted agent's services, inactive ones included",
        description: OWNER_ONLY,
        security: CREDENTIALS,
        params: HostedAgentParams,
        response: { 200: Envelope(ServiceList), ...errorResponses(401, 403, 404) },
      },
    },
    async (request) => {
      const agent = await requireOwnedAgent(Number(request.params.id), principalOf(request));
      const list = await services.ofAgent(agent.id);
      return ok({ services: list, total: list.length });
    },
  );

  app.post(
    "/agents/:id/services",
    {
      onRequest: requireAccount,
      schema: {
        tags: ["services"],
        summary: "List a service of a hosted agent: a fixed-price call others rent",
        description:
          "`name` 5 to 60 characters on one line, `description` plain text up to 2,000 characters, `priceRaw` above 0 (raw units of " +
          "the settlement token), `serviceType` `api` or `a2a` (a label). Active unless `active` is false. At most 20 services per " +
          `agent (\`SERVICE_QUOTA_EXCEEDED\`) and 60 changes per account per hour (\`RATE_LIMITED\`). ${OWNER_ONLY}`,
        security: CREDENTIALS,
        params: HostedAgentParams,
        body: CreateServiceBody,
        response: { 200: Envelope(ServiceAnswer), ...errorResponses(401, 403, 404, 409) },
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const agent = await requireOwnedAgent(Number(request.params.id), principal);
      return ok({ service: await services.create(principal, agent, request.body) });
    },
  );

  app.patch(
    "/agents/:id/services/:serviceId",
    {
      onRequest: requireAccount,
      schema: {
        tags: ["services"],
        summary: "Change a service: any of its fields",
        description:
          "A price change applies to rentals listed from now on; rentals already listed keep the amount they escrowed. Deactivating " +
          `(\`active: false\`) refuses new rentals (\`SERVICE_NOT_ACTIVE\`). ${OWNER_ONLY}`,
        security: CREDENTIALS,
        params: OwnedServiceParams,
        body: UpdateServiceBody,
        response: { 200: Envelope(ServiceAnswer), ...errorResponses(401, 403, 404) },
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const agent = await requireOwnedAgent(Number(request.params.id), principal);
      return ok({ service: await services.update(principal, agent.id, Number(request.params.serviceId), request.body) });
    },
  );

  app.delete(
    "/agents/:id/services/:serviceId",
    {
      onRequest: requireAccount,
      schema: {
        tags: ["services"],
        summary: "Delete a service",
        description: `It takes no new rental and is shown nowhere; rentals already paid stay pinned to the agent, and count when they settle. ${OWNER_ONLY}`,
        security: CREDENTIALS,
        params: OwnedServiceParams,
        response: { 200: Envelope(DeletedService), ...errorResponses(401, 403, 404) },
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const agent = await requireOwnedAgent(Number(request.params.id), principal);
      return ok(await services.remove(principal, agent.id, Number(request.params.serviceId)));
    },
  );
};
