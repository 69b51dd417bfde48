import type { App } from "../../server/app";

export interface RegisteredRoute {
  method: string;
  /** Fastify's form: `/api/v1/api-keys/:id`. */
  path: string;
}

/**
 * Every route the app registers, read from Fastify's own route tree (`printRoutes`), so tests compare the OpenAPI
 * document and fuzz the routes against what is really served rather than against a hand-kept list.
 */
export function registeredRoutes(app: App, options: { head?: boolean } = {}): RegisteredRoute[] {
  const parents: string[] = [];
  const routes: RegisteredRoute[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split("\n")) {
    // "│   └── /ready (GET, HEAD)": four characters of indentation per level, then the segment and its methods.
    const match = /^((?:│ {3}| {4})*)[├└]── (.+?)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!match) continue;
    const depth = match[1]!.length / 4;
    parents.length = depth;
    parents.push(match[2]!);
    const path = parents.join("");
    for (const method of (match[3] ?? "").split(",").map((m) => m.trim())) {
      if (method === "" || (method === "HEAD" && !options.head)) continue;
      routes.push({ method, path });
    }
  }
  if (routes.length === 0) throw new Error(`could not read the route tree:\n${app.printRoutes({ commonPrefix: false })}`);
  return routes;
}

/** `/a/:id` as OpenAPI writes it: `/a/{id}`. */
export const openApiPath = (path: string) => path.replace(/:([A-Za-z0-9_]+)/g, "{$1}");

/** The names of a route's path parameters. */
export const pathParams = (path: string) => [...path.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1]!);
