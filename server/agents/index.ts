import { Type } from "@sinclair/typebox";
import type { App, Context } from "../app";
import { addressParam } from "../http/params";
import { Address, Envelope, PublicKey, RawAmount, errorResponses, ok, CREDENTIALS } from "../http/schemas";
import { createAgentRegistry, type AgentProfile } from "./registry";
import { CHAIN_NAMES, isChainName, type ChainName } from "../../core/chains";
import { checkCapabilities } from "../../core/capabilities";
import { MarketError } from "../../core/errors";
import { MAX_UINT256 } from "../../core/limits";

export { createAgentRegistry, type AgentRegistry, type AgentProfile, type RegisteredAgent } from "./registry";

export const AgentProfileSchema = Type.Object({
  address: Address,
  publicKey: Type.Union([Type.String(), Type.Null()], { description: "130 hex characters, no 0x; null when not registered." }),
  displayName: Type.Union([Type.String(), Type.Null()]),
  capabilities: Type.Array(Type.String()),
  supportedChains: Type.Union([Type.Array(Type.String()), Type.Null()], {
    description: "null: registered before chains were recorded; treated as `base` only.",
  }),
  minReward: Type.Union([RawAmount, Type.Null()]),
  reputation: Type.Integer({ minimum: 0, maximum: 100 }),
  tasksCompleted: Type.Integer(),
  earnings: RawAmount,
  registeredAt: Type.Integer(),
});

const CapabilityQuery = Type.String({ maxLength: 2000, description: "Capability tags separated by commas." });

/** Tags from an API list: known tags only, each refusal named. */
export function capabilityTags(entries: readonly string[], field: string): string[] {
  const { tags, unknown } = checkCapabilities(entries);
  if (unknown.length > 0) {
    throw new MarketError("VALIDATION_FAILED", `${field} has unknown capability tags: ${unknown.join(", ")}`, {
      details: unknown.map((tag) => ({ field, message: `unknown capability tag ${JSON.stringify(tag)}` })),
    });
  }
  return tags;
}

/** `a,b,c` from a query string. */
export function capabilityQuery(text: string | undefined, field = "query.capabilities"): string[] {
  return text === undefined ? [] : capabilityTags(text.split(","), field);
}

export function agentRoutes(app: App, { auth, agents: registry }: Context) {

  app.post(
    "/api/v1/a2a/register",
    {
      schema: {
        tags: ["agents"],
        summary: "Create or replace the calling wallet's agent record",
        description:
          "The address comes from authentication, never from the body. Registering again replaces every field " +
          "(omitted ones are cleared) and keeps reputation, completed tasks and earnings. The public key is the key the " +
          "agent opens briefs with; clients check it is the wallet's own before registering (`OWNER_MISMATCH`).",
        security: CREDENTIALS,
        body: Type.Object(
          {
            publicKey: Type.Optional(PublicKey),
            capabilities: Type.Optional(Type.Array(Type.String({ maxLength: 64 }), { maxItems: 50 })),
            supportedChains: Type.Optional(Type.Array(Type.String({ enum: [...CHAIN_NAMES] }), { maxItems: 3 })),
            displayName: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
            minReward: Type.Optional(RawAmount),
          },
          { additionalProperties: false },
        ),
        response: { 200: Envelope(Type.Object({ profile: AgentProfileSchema })), ...errorResponses(401) },
      },
    },
    async (request) => {
      const principal = await auth.required(request);
      const body = request.body;
      const minReward = body.minReward === undefined ? undefined : BigInt(body.minReward);
      if (minReward !== undefined && minReward > MAX_UINT256) {
        throw new MarketError("VALIDATION_FAILED", "body.minReward is above 2^256-1", { details: [{ field: "body.minReward", message: "too large" }] });
      }
      const profile = await registry.register(principal.wallet, principal.accountId, {
        publicKey: body.publicKey,
        capabilities: capabilityTags(body.capabilities ?? [], "body.capabilities"),
        supportedChains: body.supportedChains?.filter(isChainName) as ChainName[] | undefined,
        displayName: body.displayName,
        minReward,
      });
      return ok({ profile });
    },
  );

  app.get(
    "/api/v1/a2a/executors",
    {
      schema: {
        tags: ["agents"],
        summary: "Registered agents: address, public key, capabilities, reputation, supported chains",
        description:
          "`capabilities`: only agents holding every tag. `chain`: only agents working on that chain with a public key, " +
          "i.e. the agents a private brief on that chain can be wrapped to.",
        querystring: Type.Object(
          {
            capabilities: Type.Optional(CapabilityQuery),
            chain: Type.Optional(Type.String({ enum: [...CHAIN_NAMES] })),
            limit: Type.Optional(Type.String({ pattern: "^[0-9]{1,4}$" })),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Envelope(Type.Object({ executors: Type.Array(AgentProfileSchema), total: Type.Integer() })),
          ...errorResponses(),
        },
      },
    },
    async (request) => {
      const { capabilities, chain, limit } = request.query;
      const executors: AgentProfile[] = await registry.find({
        capabilities: capabilityQuery(capabilities),
        chain: chain !== undefined && isChainName(chain) ? chain : undefined,
        limit: Math.min(Number(limit ?? 1000), 1000),
      });
      return ok({ executors, total: executors.length });
    },
  );

  app.get(
    "/api/v1/a2a/executors/:address",
    {
      schema: {
        tags: ["agents"],
        summary: "One registered agent",
        params: Type.Object({ address: Type.String({ maxLength: 100 }) }),
        response: { 200: Envelope(Type.Object({ profile: AgentProfileSchema })), ...errorResponses(404) },
      },
    },
    async (request) => {
      const profile = await registry.get(addressParam(request.params.address));
      if (!profile) throw new MarketError("EXECUTOR_NOT_FOUND");
      return ok({ profile });
    },
  );
}
