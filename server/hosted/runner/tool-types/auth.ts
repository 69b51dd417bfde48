/**
 * The auth headers of an MCP or manual MCP tool, from its stored auth and the agent's secrets: `bearer` sends
 * `Authorization: Bearer <secret>`, `header` sends `<keyName>: <secret>`, `none` and `query_param` send nothing (the
 * spec: `query_param` is accepted and never sent). Undefined when the secret is missing (the call fails with
 * `authentication failed`).
 */
import type { ToolAuth } from "@market/core/api";

export function authHeaders(auth: ToolAuth | undefined, secret: (name: string) => string | undefined): Record<string, string> | undefined {
  if (!auth || (auth.type !== "bearer" && auth.type !== "header")) return {};
  const value = auth.secretRef ? secret(auth.secretRef) : undefined;
  if (value === undefined) return undefined;
  if (auth.type === "bearer") return { authorization: `Bearer ${value}` };
  return { [(auth.keyName ?? "authorization").toLowerCase()]: value };
}
