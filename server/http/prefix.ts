/**
 * The API's version prefix (issue 24): a route plugin whose routes span several areas is registered under it by app.ts;
 * one whose routes share a longer path exports that path as its own prefix (`WEBHOOKS_PREFIX`, `MARKETPLACE_PREFIX`...).
 * Route definitions name only the rest.
 */
export const API_PREFIX = "/api/v1";
