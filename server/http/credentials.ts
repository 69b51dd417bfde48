/** Request headers, as Fastify and Node give them. */
export type Headers = Record<string, string | string[] | undefined>;

/** A credential as a request presents it: an `X-API-Key`, a `Bearer` token, or an Authorization header of neither form. */
export type Presented = { via: "api-key" | "bearer"; token: string } | { via: "malformed" };

/**
 * The one reading of a request's credential, for authentication and for the per-key rate limit alike: a non-empty
 * `X-API-Key`, else `Authorization: Bearer <token>` (any case, any spacing); undefined when neither header is sent.
 */
export function presentedCredential(headers: Headers): Presented | undefined {
  const key = headers["x-api-key"];
  if (typeof key === "string" && key.length > 0) return { via: "api-key", token: key };
  const authorization = headers.authorization;
  if (typeof authorization !== "string" || authorization.length === 0) return undefined;
  const token = /^Bearer\s+(\S+)$/i.exec(authorization)?.[1];
  return token ? { via: "bearer", token } : { via: "malformed" };
}
