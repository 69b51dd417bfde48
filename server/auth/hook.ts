/**
 * Authentication as a hook (issue 24): a route plugin adds `authenticated(auth)` as its `onRequest` hook, and every
 * route of that plugin is authenticated before its body is read, with `request.principal` set; a handler reads it
 * with `principalOf(request)`. A request without valid credentials is refused by the hook (`UNAUTHORIZED`,
 * `INVALID_TOKEN`...), before any handler runs.
 */
import type { FastifyRequest, onRequestAsyncHookHandler } from "fastify";
import type { Principal } from "./principal";

declare module "fastify" {
  interface FastifyRequest {
    /** Set by the `authenticated` hook of the route's plugin. */
    principal?: Principal;
  }
}

export function authenticated(auth: { required(request: FastifyRequest): Promise<Principal> }): onRequestAsyncHookHandler {
  return async (request) => {
    request.principal = await auth.required(request);
  };
}

/** The principal the plugin's `authenticated` hook set; a route outside such a plugin has none (a programming error). */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new Error(`${request.method} ${request.routeOptions.url ?? request.url} has no authentication hook`);
  return request.principal;
}
