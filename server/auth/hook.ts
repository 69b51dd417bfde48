/**
 * Authentication as a hook (issue 24): a route plugin whose routes all need a credential adds `authenticated(auth)`
 * (or `signedIn(auth)`) as its `onRequest` hook; a plugin mixing public and authenticated routes gives the same hook
 * to each authenticated route as its route-level `onRequest` option. Either way the request is authenticated before
 * its body is read, with `request.principal` set, and a handler reads it with `principalOf(request)`. A request
 * without valid credentials is refused by the hook (`AUTH_REQUIRED`, `INVALID_TOKEN`, `HOSTED_AGENT_TOKEN_REFUSED`),
 * before any handler runs.
 */
import type { FastifyRequest, onRequestAsyncHookHandler } from "fastify";
import type { Principal } from "./principal";

declare module "fastify" {
  interface FastifyRequest {
    /** Set by the `authenticated` or `signedIn` hook of the route or its plugin. */
    principal?: Principal;
  }
}

/** Any credential: an API key, a session, or a hosted agent's own token. */
export function authenticated(auth: { required(request: FastifyRequest): Promise<Principal> }): onRequestAsyncHookHandler {
  return async (request) => {
    request.principal = await auth.required(request);
  };
}

/** A signed-in account (a session or an API key); a hosted agent's token is refused: it never manages the account. */
export function signedIn(auth: { signedIn(request: FastifyRequest): Promise<Principal> }): onRequestAsyncHookHandler {
  return async (request) => {
    request.principal = await auth.signedIn(request);
  };
}

/** The principal the route's hook set; a route without one has none (a programming error). */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new Error(`${request.method} ${request.routeOptions.url ?? request.url} has no authentication hook`);
  return request.principal;
}
