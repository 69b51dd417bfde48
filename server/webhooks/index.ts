/**
 * Webhooks (issue 27, docs/events.md): an account subscribes URLs to its event log; each event it may see is POSTed,
 * signed the Standard Webhooks way, at least once, with back-off for over 24 hours; the delivery log shows each.
 */
export { createWebhookStore, secretContext, webhookView, type SecretBox, type WebhookStore, type WebhookStoreDeps } from "./store";
export { createWebhookSender, DEFAULT_RETRY_DELAYS_MS, type WebhookSender, type WebhookSenderOptions } from "./sender";
export { webhookRoutes, WEBHOOKS_PREFIX, type WebhookRoutesDeps } from "./routes";

/** Name of the lease of the webhook sender (one process sends at a time; server/db/leases.ts). */
export const WEBHOOKS_LEASE = "webhooks";
