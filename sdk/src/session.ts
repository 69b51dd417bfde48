/**
 * Signing in with a wallet (EIP-4361, the API's nonce-and-signature flow) to manage the account's API keys: what a
 * new wallet needs before it has any key. The private key signs the sign-in message locally and never leaves.
 */
import { getAddress, Wallet } from "ethers";
import { createHttp, type Http } from "./http";
import { clientError } from "./errors";
import { parseSignInMessage } from "@market/core/siwe";
import type { ApiKeyInfo, ApiKeyList, CreatedApiKey, LoggedOut, NonceAnswer, RevokedApiKey, Session } from "@market/core/api";

export type { ApiKeyInfo, CreatedApiKey } from "@market/core/api";

export interface SignInOptions {
  /** The wallet's private key (0x-hex): it signs the sign-in message, here. */
  privateKey: string;
  /** Default: MARKET_API_URL, else http://127.0.0.1:3000. */
  baseUrl?: string;
  fetch?: typeof fetch;
  /** Per request (ms). */
  timeoutMs?: number;
}

/** A signed-in session (24 h) of the account the wallet belongs to (created at its first sign-in). */
export class AccountSession {
  readonly #http: Http;
  readonly address: string;
  readonly accountId: number;
  readonly expiresAt: number;

  constructor(http: Http, session: Session) {
    this.#http = http;
    this.address = session.address;
    this.accountId = session.accountId;
    this.expiresAt = session.expiresAt;
  }

  /** A new API key acting as the account's first linked wallet: `key` is shown in this answer only. */
  async createApiKey({ name }: { name: string }): Promise<CreatedApiKey> {
    return this.#http.post("/api/v1/api-keys", { name });
  }

  /** The account's API keys (never the keys themselves), revoked ones included. */
  async listApiKeys(): Promise<ApiKeyInfo[]> {
    return (await this.#http.get<ApiKeyList>("/api/v1/api-keys")).keys;
  }

  /** Revokes one key of the account (`KEY_NOT_FOUND` for another account's or an unknown id). */
  async revokeApiKey({ id }: { id: number }): Promise<RevokedApiKey> {
    return this.#http.del(`/api/v1/api-keys/${id}`);
  }

  /** Ends this session (its token stops working at once). */
  async logout(): Promise<LoggedOut> {
    return this.#http.post("/api/v1/auth/logout");
  }
}

/**
 * Signs in with the wallet: asks the API for a nonce and its EIP-4361 message, checks the message is a sign-in for
 * this wallet (`SIGN_IN_MESSAGE_INVALID` otherwise: nothing is signed), signs it locally and exchanges the signature
 * for a session.
 */
export async function signIn(options: SignInOptions): Promise<AccountSession> {
  const wallet = new Wallet(options.privateKey);
  const baseUrl = options.baseUrl ?? process.env.MARKET_API_URL ?? "http://127.0.0.1:3000";
  const anonymous = createHttp({ baseUrl, fetch: options.fetch, timeoutMs: options.timeoutMs });
  const { message } = await anonymous.post<NonceAnswer>("/api/v1/auth/nonce", { address: wallet.address });
  const parsed = parseSignInMessage(message);
  if (!parsed || getAddress(parsed.address) !== wallet.address) {
    throw clientError(
      "SIGN_IN_MESSAGE_INVALID",
      `The service asked to sign something other than a sign-in for ${wallet.address}; nothing was signed.`,
    );
  }
  const session = await anonymous.post<Session>("/api/v1/auth/verify", { message, signature: await wallet.signMessage(message) });
  return new AccountSession(createHttp({ baseUrl, fetch: options.fetch, timeoutMs: options.timeoutMs, sessionToken: session.token }), session);
}
