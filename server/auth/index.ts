import { createHash, randomBytes } from "node:crypto";
import { getAddress, verifyMessage } from "ethers";
import { MAX_SERIAL_ID, retryConflicts, type Db } from "../db";
import { MarketError } from "../../core/errors";
import { formatSignInMessage, parseSignInMessage } from "../../core/siwe";

/** Who a request acts as. An API key acts as the wallet recorded on it; a session as the wallet that signed in. */
export interface Principal {
  kind: "apiKey" | "session";
  accountId: number;
  wallet: string;
  keyId?: number;
  sessionId?: number;
}

interface Headers {
  headers: Record<string, string | string[] | undefined>;
}

/** A credential as a request presents it: an `X-API-Key`, a `Bearer` token, or an Authorization header of neither form. */
export type Presented = { via: "api-key" | "bearer"; token: string } | { via: "malformed" };

/**
 * The one reading of a request's credential, for authentication and for the per-key rate limit alike: a non-empty
 * `X-API-Key`, else `Authorization: Bearer <token>` (any case, any spacing); undefined when neither header is sent.
 */
export function presentedCredential(headers: Headers["headers"]): Presented | undefined {
  const key = headers["x-api-key"];
  if (typeof key === "string" && key.length > 0) return { via: "api-key", token: key };
  const authorization = headers.authorization;
  if (typeof authorization !== "string" || authorization.length === 0) return undefined;
  const token = /^Bearer\s+(\S+)$/i.exec(authorization)?.[1];
  return token ? { via: "bearer", token } : { via: "malformed" };
}

export const API_KEY_PREFIX = "sk_";
export const NONCE_TTL_MS = 10 * 60_000;
export const SESSION_TTL_MS = 24 * 60 * 60_000;
/** `last_used_at` is written at most this often per key, so reads do not become writes. */
const LAST_USED_RESOLUTION_MS = 60_000;
/** Expired nonces and sessions are deleted at most this often, by the sign-in requests that add them. */
export const AUTH_SWEEP_INTERVAL_MS = 60_000;
/** An expired session is kept this long, so its token is still answered `SESSION_EXPIRED` rather than unknown. */
export const EXPIRED_SESSION_KEPT_MS = 7 * 24 * 60 * 60_000;

export const sha256Hex = (text: string) => createHash("sha256").update(text).digest("hex");

export interface AuthOptions {
  db: Db;
  now: () => number;
  /** Domain and URI that sign-in messages must name (from the public URL). */
  publicUrl?: string;
  /** Chain id that sign-in messages must name. */
  signInChainId?: number;
}

export type Auth = ReturnType<typeof createAuth>;

export function createAuth({ db, now, publicUrl = "http://127.0.0.1:3000", signInChainId = 1 }: AuthOptions) {
  const domain = new URL(publicUrl).host;
  const lastUsedWritten = new Map<number, number>();
  let lastSweep = 0;

  /**
   * Deletes nonces past their expiry (used or not, they can never sign in again) and sessions expired for longer
   * than EXPIRED_SESSION_KEPT_MS, at most once per AUTH_SWEEP_INTERVAL_MS.
   */
  async function sweep(at: number) {
    if (at - lastSweep < AUTH_SWEEP_INTERVAL_MS) return;
    lastSweep = at;
    await db.deleteFrom("auth_nonces").where("expires_at", "<=", at).execute();
    await db.deleteFrom("sessions").where("expires_at", "<=", at - EXPIRED_SESSION_KEPT_MS).execute();
  }

  async function fromApiKey(key: string): Promise<Principal> {
    const row = await db
      .selectFrom("api_keys")
      .select(["id", "account_id", "wallet_address", "revoked_at"])
      .where("key_hash", "=", sha256Hex(key))
      .executeTakeFirst();
    if (!row || row.revoked_at !== null) throw new MarketError("INVALID_TOKEN", "The API key is wrong or revoked.");
    const at = now();
    if (at - (lastUsedWritten.get(row.id) ?? 0) >= LAST_USED_RESOLUTION_MS) {
      lastUsedWritten.set(row.id, at);
      await db.updateTable("api_keys").set({ last_used_at: at }).where("id", "=", row.id).execute();
    }
    return { kind: "apiKey", accountId: row.account_id, wallet: row.wallet_address, keyId: row.id };
  }

  async function fromSession(token: string): Promise<Principal> {
    const row = await db
      .selectFrom("sessions")
      .select(["id", "account_id", "address", "expires_at", "revoked_at"])
      .where("token_hash", "=", sha256Hex(token))
      .executeTakeFirst();
    if (!row || row.revoked_at !== null) throw new MarketError("INVALID_TOKEN", "The session token is wrong or revoked.");
    if (row.expires_at <= now()) throw new MarketError("INVALID_TOKEN", "The session expired; sign in again.", { reason: "SESSION_EXPIRED" });
    return { kind: "session", accountId: row.account_id, wallet: row.address, sessionId: row.id };
  }

  /** The request's principal; undefined without credentials; `INVALID_TOKEN` for wrong ones. */
  async function optional(request: Headers): Promise<Principal | undefined> {
    const presented = presentedCredential(request.headers);
    if (!presented) return undefined;
    if (presented.via === "malformed") throw new MarketError("INVALID_TOKEN", "Authorization must be `Bearer <session token>`.");
    const { via, token } = presented;
    return via === "api-key" || token.startsWith(API_KEY_PREFIX) ? fromApiKey(token) : fromSession(token);
  }

  async function required(request: Headers): Promise<Principal> {
    const principal = await optional(request);
    if (!principal) throw new MarketError("AUTH_REQUIRED", "Send `X-API-Key: sk_...` (or a session token).");
    return principal;
  }

  async function accountOfWallet(address: string): Promise<number | undefined> {
    const row = await db.selectFrom("account_wallets").select("account_id").where("address", "=", address).executeTakeFirst();
    return row?.account_id;
  }

  /** The account whose wallet this is, created with the wallet as its first linked wallet when new. */
  async function accountForWallet(address: string): Promise<number> {
    const wallet = getAddress(address);
    // Two first sign-ins of one wallet race to create its account: the loser's rerun finds the winner's.
    const create = () =>
      db.transaction().execute(async (trx) => {
        const existing = await trx.selectFrom("account_wallets").select("account_id").where("address", "=", wallet).executeTakeFirst();
        if (existing) return existing.account_id;
        const at = now();
        const account = await trx.insertInto("accounts").values({ created_at: at }).returning("id").executeTakeFirstOrThrow();
        await trx.insertInto("account_wallets").values({ address: wallet, account_id: account.id, position: 0, linked_at: at }).execute();
        return account.id;
      });
    return retryConflicts(create, { retryUnique: true });
  }

  async function firstWallet(accountId: number): Promise<string> {
    const row = await db
      .selectFrom("account_wallets")
      .select("address")
      .where("account_id", "=", accountId)
      .orderBy("position")
      .executeTakeFirstOrThrow();
    return row.address;
  }

  async function issueNonce(address: string) {
    const wallet = getAddress(address);
    const nonce = randomBytes(16).toString("hex");
    const at = now();
    await sweep(at);
    const expiresAt = at + NONCE_TTL_MS;
    await db.insertInto("auth_nonces").values({ nonce, address: wallet, created_at: at, expires_at: expiresAt, used_at: null }).execute();
    const message = formatSignInMessage({
      domain,
      address: wallet,
      statement: "Sign in to the task marketplace.",
      uri: publicUrl,
      version: "1",
      chainId: signInChainId,
      nonce,
      issuedAt: new Date(at).toISOString(),
      expirationTime: new Date(expiresAt).toISOString(),
    });
    return { nonce, message, expiresAt };
  }

  /** Checks an EIP-4361 message and its signature, and consumes its nonce. Returns the signing wallet. */
  async function verifySignIn(messageText: string, signature: string): Promise<string> {
    const message = parseSignInMessage(messageText);
    if (!message) throw new MarketError("SIGN_IN_MESSAGE_INVALID", "The message is not an EIP-4361 sign-in message.");
    if (message.domain !== domain) throw new MarketError("SIGN_IN_MESSAGE_INVALID", `The message is for ${message.domain}, not ${domain}.`);
    if (message.chainId !== signInChainId) {
      throw new MarketError("SIGN_IN_MESSAGE_INVALID", `The message names chain ${message.chainId}, not ${signInChainId}.`);
    }
    const at = now();
    if (message.expirationTime && Date.parse(message.expirationTime) <= at) {
      throw new MarketError("SIGN_IN_MESSAGE_INVALID", "The message has expired.");
    }
    let signer: string;
    try {
      signer = verifyMessage(messageText, signature);
    } catch (cause) {
      throw new MarketError("SIGNATURE_MISMATCH", "The signature is malformed.", { cause });
    }
    if (signer !== message.address) throw new MarketError("SIGNATURE_MISMATCH", "The signature was not made by the wallet in the message.");
    // Consume the nonce atomically: only one sign-in can ever use it.
    const used = await db
      .updateTable("auth_nonces")
      .set({ used_at: at })
      .where("nonce", "=", message.nonce)
      .where("address", "=", signer)
      .where("used_at", "is", null)
      .where("expires_at", ">", at)
      .executeTakeFirst();
    if (Number(used.numUpdatedRows) !== 1) throw new MarketError("NONCE_INVALID");
    return signer;
  }

  async function signIn(messageText: string, signature: string) {
    const wallet = await verifySignIn(messageText, signature);
    const accountId = await accountForWallet(wallet);
    const token = randomBytes(32).toString("base64url");
    const at = now();
    const expiresAt = at + SESSION_TTL_MS;
    await db
      .insertInto("sessions")
      .values({ token_hash: sha256Hex(token), account_id: accountId, address: wallet, created_at: at, expires_at: expiresAt, revoked_at: null })
      .execute();
    return { token, expiresAt, address: wallet, accountId };
  }

  /** Links another wallet to the signed-in account (proved by that wallet's own signed message). */
  async function linkWallet(principal: Principal, messageText: string, signature: string) {
    const wallet = await verifySignIn(messageText, signature);
    // Concurrent links race for the wallet and for the account's next position: a rerun sees the winner's row.
    const link = () =>
      db.transaction().execute(async (trx) => {
        const owner = await trx.selectFrom("account_wallets").select("account_id").where("address", "=", wallet).executeTakeFirst();
        if (owner && owner.account_id !== principal.accountId) throw new MarketError("WALLET_ALREADY_LINKED");
        if (!owner) {
          const last = await trx
            .selectFrom("account_wallets")
            .select((eb) => eb.fn.max("position").as("position"))
            .where("account_id", "=", principal.accountId)
            .executeTakeFirst();
          await trx
            .insertInto("account_wallets")
            .values({ address: wallet, account_id: principal.accountId, position: Number(last?.position ?? -1) + 1, linked_at: now() })
            .execute();
        }
        const wallets = await trx
          .selectFrom("account_wallets")
          .select("address")
          .where("account_id", "=", principal.accountId)
          .orderBy("position")
          .execute();
        return wallets.map((w) => w.address);
      });
    return retryConflicts(link, { retryUnique: true });
  }

  /** A new key acting as the account's first linked wallet. The key is returned once and stored hashed. */
  async function createApiKey(accountId: number, name: string) {
    const key = `${API_KEY_PREFIX}${randomBytes(32).toString("base64url")}`;
    const wallet = await firstWallet(accountId);
    const at = now();
    const row = await db
      .insertInto("api_keys")
      .values({
        account_id: accountId,
        wallet_address: wallet,
        key_hash: sha256Hex(key),
        key_prefix: key.slice(0, 10),
        name,
        created_at: at,
        revoked_at: null,
        last_used_at: null,
      })
      .returning("id")
      .executeTakeFirstOrThrow();
    return { id: row.id, key, prefix: key.slice(0, 10), name, wallet, createdAt: at };
  }

  async function listApiKeys(accountId: number) {
    return db
      .selectFrom("api_keys")
      .select(["id", "name", "key_prefix", "wallet_address", "created_at", "revoked_at", "last_used_at"])
      .where("account_id", "=", accountId)
      .orderBy("id")
      .execute();
  }

  async function revokeApiKey(accountId: number, id: number) {
    // Ids are PostgreSQL `serial` (int4): a larger number names no key, and comparing with it would fail the query.
    if (id > MAX_SERIAL_ID) throw new MarketError("KEY_NOT_FOUND");
    const result = await db
      .updateTable("api_keys")
      .set({ revoked_at: now() })
      .where("id", "=", id)
      .where("account_id", "=", accountId)
      .where("revoked_at", "is", null)
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) === 0) {
      const exists = await db.selectFrom("api_keys").select("id").where("id", "=", id).where("account_id", "=", accountId).executeTakeFirst();
      if (!exists) throw new MarketError("KEY_NOT_FOUND");
    }
  }

  async function revokeAllApiKeys(accountId: number): Promise<number> {
    const result = await db
      .updateTable("api_keys")
      .set({ revoked_at: now() })
      .where("account_id", "=", accountId)
      .where("revoked_at", "is", null)
      .executeTakeFirst();
    return Number(result.numUpdatedRows);
  }

  return {
    optional,
    required,
    accountOfWallet,
    accountForWallet,
    issueNonce,
    signIn,
    linkWallet,
    createApiKey,
    listApiKeys,
    revokeApiKey,
    revokeAllApiKeys,
  };
}
