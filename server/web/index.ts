/**
 * The web app (web/, issue 28) served by the API's own server on the same port: the files `npm run build` writes to
 * web/dist, hashed assets cached for good, index.html never cached, the page's own paths (`/tasks/0x…`) answered with
 * index.html so a reload or a shared link opens the app, and a strict Content-Security-Policy on all of them (no
 * inline script, the API on the same origin only). Nothing is served when web/dist is absent (a server built without
 * the app answers the API alone).
 */
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import path from "node:path";
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import fastifyStatic from "@fastify/static";

/** Where `npm run build` writes the app (web/vite.config.ts). */
export const WEB_DIST = path.resolve(__dirname, "..", "..", "web", "dist");

/**
 * The page's policy: scripts, styles, fonts and requests from this origin only; no plugin, no frame, no base
 * rewrite; images also as data: URLs (the app's inline SVG icons).
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
  "form-action 'self'",
].join("; ");

/** Paths of the API and its protocols: never answered with the app's page. */
const API_PREFIXES = ["/api/", "/.well-known/", "/health", "/mcp", "/a2a", "/openapi.json"];

interface HeaderTarget {
  setHeader(name: string, value: string): unknown;
}

function securityHeaders(res: HeaderTarget) {
  res.setHeader("Content-Security-Policy", CONTENT_SECURITY_POLICY);
  res.setHeader("X-Content-Type-Options", "nosniff");
  res.setHeader("Referrer-Policy", "no-referrer");
  res.setHeader("Cross-Origin-Opener-Policy", "same-origin");
}

export interface WebOptions {
  /** The built app (default WEB_DIST). */
  root?: string;
}

/** Whether the built app is there to serve. */
export function webBuilt(root = WEB_DIST): boolean {
  return existsSync(path.join(root, "index.html"));
}

/** The app's files: one GET route per built file (no wildcard: unknown paths reach the not-found handler). */
export const webRoutes: FastifyPluginAsync<WebOptions> = async (app, { root = WEB_DIST }) => {
  await app.register(fastifyStatic, {
    root,
    wildcard: false,
    index: false,
    cacheControl: false,
    etag: true,
    lastModified: true,
    // The schema of every route is hidden from the OpenAPI document.
    schemaHide: true,
    setHeaders(res, file) {
      securityHeaders(res);
      const hashed = path.relative(root, file).startsWith(`assets${path.sep}`);
      res.setHeader("Cache-Control", hashed ? "public, max-age=31536000, immutable" : "no-cache");
    },
  });
  app.get("/", { schema: { hide: true } }, (request, reply) => sendPage(reply, root));
};

/** index.html, never cached (it names the current hashed assets); read at each ask, so a rebuild shows at once. */
async function sendPage(reply: FastifyReply, root: string) {
  const page = await readFile(path.join(root, "index.html"));
  securityHeaders(reply.raw);
  return reply.header("Cache-Control", "no-cache").type("text/html; charset=utf-8").send(page);
}

/**
 * The not-found handler's first look: a browser's GET of one of the app's own paths (anything but the API's) is
 * answered with index.html, and the app's router shows the page. Answers false when the request is not one.
 */
export function answerWithPage(request: FastifyRequest, reply: FastifyReply, root = WEB_DIST): false | Promise<FastifyReply> {
  if (request.method !== "GET" && request.method !== "HEAD") return false;
  const pathname = request.url.split("?")[0] ?? "";
  if (API_PREFIXES.some((prefix) => pathname === prefix.replace(/\/$/, "") || pathname.startsWith(prefix))) return false;
  if (!/\btext\/html\b/.test(request.headers.accept ?? "")) return false;
  if (!webBuilt(root)) return false;
  return sendPage(reply, root);
}
