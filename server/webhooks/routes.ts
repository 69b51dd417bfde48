import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "@sinclair/typebox";
import type { Authenticate } from "../auth";
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
} from "../../core/api";
import { webhookView, type WebhookStore } from "./store";

export interface WebhookRoutesDeps {
  auth: Authenticate;
  store: WebhookStore;
}

/** An account's webhooks: each route acts on the caller's account only (another's answers WEBHOOK_NOT_FOUND). */
export const webhookRoutes: FastifyPluginAsyncTypebox<WebhookRoutesDeps> = async (app, { auth, store }) => {
  const tags = ["events"];
  const security = CREDENTIALS;

  app.post(
    "/api/v1/webhooks",
    {
      schema: {
        tags,
        summary: "Subscribe a URL to this key's events; the signing secret is answered once",
        security,
        body: WebhookCreateBody,
        response: { 200: Envelope(WebhookCreated), ...errorResponses(401, 409, 503) },
      },
    },
    async (request) => ok(await store.subscribe(await auth.required(request), request.body)),
  );

  app.get(
    "/api/v1/webhooks",
    { schema: { tags, summary: "The account's webhooks", security, response: { 200: Envelope(WebhookList), ...errorResponses(401) } } },
    async (request) => ok({ webhooks: await store.list(await auth.required(request)) }),
  );

  app.get(
    "/api/v1/webhooks/:id",
    {
      schema: {
        tags,
        summary: "One of the account's webhooks",
        security,
        params: WebhookParams,
        response: { 200: Envelope(WebhookView), ...errorResponses(401, 404) },
      },
    },
    async (request) => ok(webhookView(await store.owned(await auth.required(request), Number(request.params.id)))),
  );

  app.delete(
    "/api/v1/webhooks/:id",
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
      await store.remove(await auth.required(request), Number(request.params.id));
      return ok({ deleted: true as const });
    },
  );

  app.post(
    "/api/v1/webhooks/:id/enable",
    {
      schema: {
        tags,
        summary: "Enable a disabled webhook again; its pending deliveries resume",
        security,
        params: WebhookParams,
        response: { 200: Envelope(WebhookView), ...errorResponses(401, 404) },
      },
    },
    async (request) => ok(await store.enable(await auth.required(request), Number(request.params.id))),
  );

  app.post(
    "/api/v1/webhooks/:id/redeliver",
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
    async (request) => ok({ requeued: await store.redeliver(await auth.required(request), Number(request.params.id), request.body.eventIds) }),
  );

  app.get(
    "/api/v1/webhooks/:id/deliveries",
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
      const deliveries = await store.deliveries(await auth.required(request), Number(request.params.id), {
        ...(status ? { status } : {}),
        ...(before ? { before: Number(before) } : {}),
      });
      return ok({ deliveries });
    },
  );
};
