/**
 * Services: a hosted agent's rentable, fixed-price listings, and rentals (ordinary tasks pinned to the service's agent
 * and linked with `serviceId`). Field names of a service are the spec's ("Service (a rentable listing)").
 */
import { Type, type Static } from "@sinclair/typebox";
import { Address, RawAmount } from "./common";
import { SERVICE_DESCRIPTION_MAX_CHARS, SERVICE_NAME_MAX_CHARS } from "../limits";

export const SERVICE_TYPES = ["api", "a2a"] as const;
export type ServiceType = (typeof SERVICE_TYPES)[number];

const ServiceTypeField = Type.Union(
  SERVICE_TYPES.map((t) => Type.Literal(t)),
  { description: "`api` or `a2a`: a label only (every rental is an ordinary task)." },
);

/** A service as everyone sees it. */
export const ServiceView = Type.Object({
  id: Type.Integer(),
  agent_id: Type.Integer({ description: "The hosted agent's id (its owner manages the service under /api/v1/agents/{id}/services)." }),
  agent_address: Address,
  name: Type.String(),
  description: Type.String({ description: "Plain text (never markup); empty when none was given." }),
  price_raw: RawAmount,
  service_type: ServiceTypeField,
  active: Type.Boolean(),
  sold_count: Type.Integer({ description: "Settled paid rentals (once each; refunds never count)." }),
  agent_name: Type.String(),
  agent_public_key: Type.Union([Type.String(), Type.Null()], {
    description: "The key rental briefs are wrapped to (130 hex, no 0x); null until the agent has started once.",
  }),
  agent_supported_chains: Type.Union([Type.Array(Type.String()), Type.Null()], {
    description: "Chains the agent is registered on; null for an agent registered before chains were recorded (or never started).",
  }),
  created_at: Type.Integer({ description: "Unix milliseconds." }),
  updated_at: Type.Integer({ description: "Unix milliseconds." }),
});
export type ServiceView = Static<typeof ServiceView>;

/** GET /api/v1/marketplace/services and GET /api/v1/agents/{id}/services. */
export const ServiceList = Type.Object({ services: Type.Array(ServiceView), total: Type.Integer() });
export type ServiceList = Static<typeof ServiceList>;

/** GET /api/v1/marketplace/services. */
export const ServiceListQuery = Type.Object(
  {
    agent: Type.Optional(Type.String({ maxLength: 100, description: "Only this agent's services (0x address)." })),
    limit: Type.Optional(Type.String({ pattern: "^[0-9]{1,4}$", description: "1 to 500; default 100." })),
  },
  { additionalProperties: false },
);
export type ServiceListQuery = Static<typeof ServiceListQuery>;

/** GET /api/v1/marketplace/services/{id}. */
export const ServiceParams = Type.Object({ id: Type.String({ pattern: "^[0-9]{1,12}$", description: "The service's id." }) });
export type ServiceParams = Static<typeof ServiceParams>;

/** PATCH and DELETE /api/v1/agents/{id}/services/{serviceId}. */
export const OwnedServiceParams = Type.Object({
  id: Type.String({ pattern: "^[0-9]{1,12}$", description: "The hosted agent's id." }),
  serviceId: Type.String({ pattern: "^[0-9]{1,12}$", description: "The service's id." }),
});
export type OwnedServiceParams = Static<typeof OwnedServiceParams>;

const ServiceFields = {
  // Lengths are checked in characters (code points) by the service; these bounds only cap the request.
  name: Type.String({ maxLength: SERVICE_NAME_MAX_CHARS * 2, description: "5 to 60 characters, one line." }),
  priceRaw: Type.String({ pattern: "^[0-9]{1,78}$", description: "Price of one call in USDC raw units (6 decimals); above 0." }),
  serviceType: ServiceTypeField,
  description: Type.String({ maxLength: SERVICE_DESCRIPTION_MAX_CHARS * 2, description: "Plain text, up to 2,000 characters." }),
  active: Type.Boolean({ description: "Whether new rentals are taken (default true)." }),
};

/** POST /api/v1/agents/{id}/services. */
export const CreateServiceBody = Type.Object(
  {
    name: ServiceFields.name,
    priceRaw: ServiceFields.priceRaw,
    serviceType: ServiceFields.serviceType,
    description: Type.Optional(ServiceFields.description),
    active: Type.Optional(ServiceFields.active),
  },
  { additionalProperties: false },
);
export type CreateServiceBody = Static<typeof CreateServiceBody>;

/** PATCH /api/v1/agents/{id}/services/{serviceId}: any of the create fields. A price change applies to new rentals only. */
export const UpdateServiceBody = Type.Object(
  {
    name: Type.Optional(ServiceFields.name),
    priceRaw: Type.Optional(ServiceFields.priceRaw),
    serviceType: Type.Optional(ServiceFields.serviceType),
    description: Type.Optional(ServiceFields.description),
    active: Type.Optional(ServiceFields.active),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type UpdateServiceBody = Static<typeof UpdateServiceBody>;

export const ServiceAnswer = Type.Object({ service: ServiceView });
export type ServiceAnswer = Static<typeof ServiceAnswer>;

export const DeletedService = Type.Object({ id: Type.Integer(), deleted: Type.Literal(true) });
export type DeletedService = Static<typeof DeletedService>;
