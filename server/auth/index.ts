import type { Db } from "../db";
import { MarketError } from "@market/core/errors";
import { presentedCredential, type Headers } from "../http/credentials";
import type { Clock } from "../http/types";
import { createAccounts } from "./accounts";
import { API_KEY_PREFIX, createApiKeys } from "./api-keys";
import { createSessions } from "./sessions";
import { HOSTED_TOKEN_PREFIX, createAgentTokens } from "./agent-tokens";
import type { Principal } from "./principal";

export type { Principal } from "./principal";
export { authenticated, principalOf, signedIn } from "./hook";
export { API_KEY_PREFIX, sha256Hex } from "./api-keys";
export { HOSTED_TOKEN_PREFIX, createAgentTokens, type AgentTokens } from "./agent-tokens";
export { AUTH_SWEEP_INTERVAL_MS, EXPIRED_SESSION_KEPT_MS, NONCE_TTL_MS, SESSION_TTL_MS } from "./sessions";

export interface AuthOptions {
  db: Db;
  now: Clock;
  /** Domain and URI that sign-in messages must name (from the public URL). */
  publicUrl?: string;
  /** Chain id that sign-in messages must name. */
  signInChainId?: number;
}

export type Auth = ReturnType<typeof createAuth>;
/** What a route that only needs to know who calls it depends on. */
export type Authenticate = Pick<Auth, "optional" | "required">;
/** What a route that manages an account (keys, hosted agents) depends on. */
export type AuthenticateAccount = Pick<Auth, "optional" | "required" | "signedIn">;

/**
 * Authentication: accounts and their wallets, wallet sign-in sessions and API keys, and the principal of a request
 * (`optional`, `required`, `signedIn`) from whichever credential it presents, and the tokens of running hosted agents.
 */
export function createAuth({ db, now, publicUrl = "http://127.0.0.1:3000", signInChainId = 1 }: AuthOptions) {
  const accounts = createAccounts({ db, now });
  const apiKeys = createApiKeys({ db, now, accounts });
  const sessions = createSessions({ db, now, accounts, publicUrl, signInChainId });
  const agentTokens = createAgentTokens({ db, now });

  /** The request's principal; undefined without credentials; `INVALID_TOKEN` for wrong ones. */
  async function optional(request: { headers: Headers }): Promise<Principal | undefined> {
    const presented = presentedCredential(request.headers);
    if (!presented) return undefined;
    if (presented.via === "malformed") throw new MarketError("INVALID_TOKEN", "Authorization must be `Bearer <session token>`.");
    const { via, token } = presented;
    if (token.startsWith(HOSTED_TOKEN_PREFIX)) return agentTokens.principalOf(token);
    return via === "api-key" || token.startsWith(API_KEY_PREFIX) ? apiKeys.principalOf(token) : sessions.principalOf(token);
  }

  async function required(request: { headers: Headers }): Promise<Principal> {
    const principal = await optional(request);
    if (!principal) throw new MarketError("AUTH_REQUIRED", "Send `X-API-Key: sk_...` (or a session token).");
    return principal;
  }

  /**
   * A signed-in account: a session or an API key. A hosted agent's own token is refused (`HOSTED_AGENT_TOKEN_REFUSED`):
   * it works tasks as its agent, never manages the account (API keys, deploys, its owner's routes).
   */
  async function signedIn(request: { headers: Headers }): Promise<Principal> {
    const principal = await required(request);
    if (principal.kind === "hostedAgent") {
      throw new MarketError("HOSTED_AGENT_TOKEN_REFUSED", "A hosted agent's token cannot do this; sign in or use an API key of the account.");
    }
    return principal;
  }

  return { optional, required, signedIn, accounts, sessions, apiKeys, agentTokens };
}
