import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "@sinclair/typebox";
import { authenticated, principalOf, type Authenticate } from "../auth";
import { CREDENTIALS, errorResponses, ok } from "../http/schemas";
import {
  Envelope,
  RedeliverBody,
  Redelivered,
  WebhookCreateBody,
  WebhookCreated,
  WebhookDeliveries,
  WebhookDeliveriesQuery,
  WebhookList,
  WebhookParams,
  WebhookView,
} from "@market/core/api";
import { webhookView, type WebhookStore } from "./store";

/** The prefix app.ts registers `webhookRoutes` under. */
export const WEBHOOKS_PREFIX = "/api/v1/webhooks";

export interface WebhookRoutesDeps {
  auth: Authenticate;
  store: WebhookStore;
}

/** An account's webhooks: each route acts on the caller's account only (another's answers WEBHOOK_NOT_FOUND). */
export const webhookRoutes: FastifyPluginAsyncTypebox<WebhookRoutesDeps> = async (app, { auth, store }) => {
  const tags = ["events"];
  const security = CREDENTIALS;
  app.addHook("onRequest", authenticated(auth));

  app.post(
    "/",
    {
      schema: {
        tags,
        summary: "Subscribe a URL to this key's events; the signing secret is answered once",
        security,
        body: WebhookCreateBody,
        response: { 200: Envelope(WebhookCreated), ...errorResponses(401, 409, 503) },
      },
    },
    async (request) => ok(await store.subscribe(principalOf(request), request.body)),
  );

  app.get(
    "/",
    { schema: { tags, summary: "The account's webhooks", security, response: { 200: Envelope(WebhookList), ...errorResponses(401) } } },
    async (request) => ok({ webhooks: await store.list(principalOf(request)) }),
  );

  app.get(
    "/:id",
    {
      schema: {
        tags,
        summary: "One of the account's webhooks",
        security,
        params: WebhookParams,
        response: { 200: Envelope(WebhookView), ...errorResponses(401, 404) },
      },
    },
    async (request) => ok(webhookView(await store.owned(principalOf(request), Number(request.params.id)))),
  );

  app.delete(
    "/:id",
    {
      schema: {
        tags,
        summary: "Delete a webhook and its delivery log",
        security,
        params: WebhookParams,
        response: { 200: Envelope(Type.Object({ deleted: Type.Literal(true) })), ...errorResponses(401, 404) },
      },
    },
    async (request) => {
      await store.remove(principalOf(request), Number(request.params.id));
      return ok({ deleted: true as const });
    },
  );

  app.post(
    "/:id/enable",
    {
      schema: {
        tags,
        summary: "Enable a disabled webhook again; its pending deliveries resume",
        security,
        params: WebhookParams,
        response: { 200: Envelope(WebhookView), ...errorResponses(401, 404) },
      },
    },
    async (request) => ok(await store.enable(principalOf(request), Number(request.params.id))),
  );

  app.post(
    "/:id/redeliver",
    {
      schema: {
        tags,
        summary: "Queue failed deliveries again (or the events named)",
        security,
        params: WebhookParams,
        body: RedeliverBody,
        response: { 200: Envelope(Redelivered), ...errorResponses(401, 404) },
      },
    },
    async (request) => ok({ requeued: await store.redeliver(principalOf(request), Number(request.params.id), request.body.eventIds) }),
  );

  app.get(
    "/:id/deliveries",
    {
      schema: {
        tags,
        summary: "The webhook's delivery log, newest first (100 a page)",
        security,
        params: WebhookParams,
        querystring: WebhookDeliveriesQuery,
        response: { 200: Envelope(WebhookDeliveries), ...errorResponses(401, 404) },
      },
    },
    async (request) => {
      const { status, before } = request.query;
      const deliveries = await store.deliveries(principalOf(request), Number(request.params.id), {
        ...(status ? { status } : {}),
        ...(before ? { before: Number(before) } : {}),
      });
      return ok({ deliveries });
    },
  );
};
