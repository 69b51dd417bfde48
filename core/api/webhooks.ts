import { Type, type Static } from "@sinclair/typebox";
import { ChainNameString } from "./common";
import { EventTypeString } from "./events";

/** Webhooks (issue 27, docs/events.md): an account's subscriptions to its event log, and their delivery log. */
export const WebhookCreateBody = Type.Object(
  {
    url: Type.String({ minLength: 1, maxLength: 2048, description: "https URL the events are POSTed to." }),
    chain: Type.Optional(ChainNameString),
    types: Type.Optional(Type.Array(EventTypeString, { minItems: 1, maxItems: 20, uniqueItems: true, description: "Default: every type." })),
    after: Type.Optional(
      Type.String({ pattern: "^[0-9]{1,15}$", description: "Deliver events after this cursor (default: only events from now on)." }),
    ),
  },
  { additionalProperties: false },
);
export type WebhookCreateBody = Static<typeof WebhookCreateBody>;

export const WebhookView = Type.Object(
  {
    id: Type.Integer(),
    url: Type.String(),
    chain: ChainNameString,
    types: Type.Union([Type.Array(EventTypeString), Type.Null()]),
    status: Type.Union([Type.Literal("active"), Type.Literal("disabled")]),
    disabledReason: Type.Union([Type.String(), Type.Null()]),
    cursor: Type.String({ description: "Events up to this cursor are queued for delivery." }),
    createdAt: Type.Integer(),
  },
  { additionalProperties: false },
);
export type WebhookView = Static<typeof WebhookView>;

export const WebhookCreated = Type.Object(
  {
    webhook: WebhookView,
    secret: Type.String({ description: "The signing secret (`whsec_...`): shown this once, never again." }),
  },
  { additionalProperties: false },
);
export type WebhookCreated = Static<typeof WebhookCreated>;

export const WebhookList = Type.Object({ webhooks: Type.Array(WebhookView) }, { additionalProperties: false });
export type WebhookList = Static<typeof WebhookList>;

export const WebhookParams = Type.Object({ id: Type.String({ pattern: "^[0-9]{1,10}$" }) }, { additionalProperties: false });
export type WebhookParams = Static<typeof WebhookParams>;

export const DeliveryStatus = Type.Union([Type.Literal("pending"), Type.Literal("delivered"), Type.Literal("failed")]);

export const WebhookDelivery = Type.Object(
  {
    id: Type.Integer(),
    eventId: Type.String(),
    cursor: Type.String(),
    status: DeliveryStatus,
    attempts: Type.Integer(),
    nextAttemptAt: Type.Union([Type.Integer(), Type.Null()]),
    lastStatus: Type.Union([Type.Integer(), Type.Null()]),
    lastError: Type.Union([Type.String(), Type.Null()]),
    deliveredAt: Type.Union([Type.Integer(), Type.Null()]),
  },
  { additionalProperties: false },
);
export type WebhookDelivery = Static<typeof WebhookDelivery>;

export const WebhookDeliveriesQuery = Type.Object(
  {
    status: Type.Optional(DeliveryStatus),
    before: Type.Optional(Type.String({ pattern: "^[0-9]{1,10}$", description: "Deliveries with a smaller id (newest first)." })),
  },
  { additionalProperties: false },
);
export type WebhookDeliveriesQuery = Static<typeof WebhookDeliveriesQuery>;

export const WebhookDeliveries = Type.Object({ deliveries: Type.Array(WebhookDelivery) }, { additionalProperties: false });
export type WebhookDeliveries = Static<typeof WebhookDeliveries>;

export const RedeliverBody = Type.Object(
  {
    eventIds: Type.Optional(
      Type.Array(Type.String({ maxLength: 100 }), { minItems: 1, maxItems: 500, description: "Default: every failed delivery." }),
    ),
  },
  { additionalProperties: false },
);
export type RedeliverBody = Static<typeof RedeliverBody>;

export const Redelivered = Type.Object({ requeued: Type.Integer() }, { additionalProperties: false });
export type Redelivered = Static<typeof Redelivered>;
