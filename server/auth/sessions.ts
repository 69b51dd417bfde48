import { randomBytes } from "node:crypto";
import { getAddress, verifyMessage } from "ethers";
import { retryConflicts, type Db } from "../db";
import { MarketError } from "@market/core/errors";
import { formatSignInMessage, parseSignInMessage } from "@market/core/siwe";
import type { Clock } from "../http/types";
import type { Accounts } from "./accounts";
import { sha256Hex } from "./api-keys";
import type { Principal } from "./principal";
import type { NoncePurpose } from "@market/core/api";

export const NONCE_TTL_MS = 10 * 60_000;
/** How far a message's issue time may lie ahead of the server's clock. */
export const CLOCK_SKEW_MS = 5 * 60_000;
/** The statement of each kind of signed message: one signature never serves both. */
export const STATEMENTS: Readonly<Record<NoncePurpose, string>> = {
  "sign-in": "Sign in to the task marketplace.",
  link: "Link this wallet to the signed-in task marketplace account.",
};
export const SESSION_TTL_MS = 24 * 60 * 60_000;
/** Expired nonces and sessions are deleted at most this often, by the sign-in requests that add them. */
export const AUTH_SWEEP_INTERVAL_MS = 60_000;
/** An expired session is kept this long, so its token is still answered `SESSION_EXPIRED` rather than unknown. */
export const EXPIRED_SESSION_KEPT_MS = 7 * 24 * 60 * 60_000;

export interface SessionOptions {
  db: Db;
  now: Clock;
  accounts: Pick<Accounts, "accountForWallet">;
  /** Domain and URI that sign-in messages must name (from the public URL). */
  publicUrl: string;
  /** Chain id that sign-in messages must name. */
  signInChainId: number;
}

export type Sessions = ReturnType<typeof createSessions>;

/** Wallet sign-in (EIP-4361): nonces, sessions, and linking more wallets to the signed-in account. */
export function createSessions({ db, now, accounts, publicUrl, signInChainId }: SessionOptions) {
  const domain = new URL(publicUrl).host;
  let lastSweep = 0;

  /**
   * Deletes nonces past their expiry (used or not, they can never sign in again) and sessions expired for longer
   * than EXPIRED_SESSION_KEPT_MS, at most once per AUTH_SWEEP_INTERVAL_MS.
   */
  async function sweep(at: number) {
    if (at - lastSweep < AUTH_SWEEP_INTERVAL_MS) return;
    lastSweep = at;
    await db.deleteFrom("auth_nonces").where("expires_at", "<=", at).execute();
    await db
      .deleteFrom("sessions")
      .where("expires_at", "<=", at - EXPIRED_SESSION_KEPT_MS)
      .execute();
  }

  /** The principal of a presented session token; `INVALID_TOKEN` when it is wrong, revoked or expired. */
  async function principalOf(token: string): Promise<Principal> {
    const row = await db
      .selectFrom("sessions")
      .select(["id", "account_id", "address", "expires_at", "revoked_at"])
      .where("token_hash", "=", sha256Hex(token))
      .executeTakeFirst();
    if (!row || row.revoked_at !== null) throw new MarketError("INVALID_TOKEN", "The session token is wrong or revoked.");
    if (row.expires_at <= now()) throw new MarketError("INVALID_TOKEN", "The session expired; sign in again.", { reason: "SESSION_EXPIRED" });
    return { kind: "session", accountId: row.account_id, wallet: row.address, sessionId: row.id };
  }

  async function issueNonce(address: string, purpose: NoncePurpose = "sign-in") {
    const wallet = getAddress(address);
    const nonce = randomBytes(16).toString("hex");
    const at = now();
    await sweep(at);
    const expiresAt = at + NONCE_TTL_MS;
    await db.insertInto("auth_nonces").values({ nonce, address: wallet, created_at: at, expires_at: expiresAt, used_at: null }).execute();
    const message = formatSignInMessage({
      domain,
      address: wallet,
      statement: STATEMENTS[purpose],
      uri: publicUrl,
      version: "1",
      chainId: signInChainId,
      nonce,
      issuedAt: new Date(at).toISOString(),
      expirationTime: new Date(expiresAt).toISOString(),
    });
    return { nonce, message, expiresAt };
  }

  /**
   * Checks an EIP-4361 message made for `purpose` (its statement: a sign-in message never links a wallet, nor the
   * reverse), its URI and issue time, and its signature, and consumes its nonce. Returns the signing wallet.
   */
  async function verifySignIn(messageText: string, signature: string, purpose: NoncePurpose): Promise<string> {
    const message = parseSignInMessage(messageText);
    if (!message) throw new MarketError("SIGN_IN_MESSAGE_INVALID", "The message is not an EIP-4361 sign-in message.");
    if (message.domain !== domain) throw new MarketError("SIGN_IN_MESSAGE_INVALID", `The message is for ${message.domain}, not ${domain}.`);
    if (message.statement !== STATEMENTS[purpose]) {
      throw new MarketError(
        "SIGN_IN_MESSAGE_INVALID",
        `The message was not made for ${purpose} (ask POST /api/v1/auth/nonce with purpose "${purpose}").`,
      );
    }
    if (message.uri !== publicUrl) throw new MarketError("SIGN_IN_MESSAGE_INVALID", `The message names URI ${message.uri}, not ${publicUrl}.`);
    const issuedAt = Date.parse(message.issuedAt);
    if (issuedAt > now() + CLOCK_SKEW_MS || issuedAt < now() - NONCE_TTL_MS - CLOCK_SKEW_MS) {
      throw new MarketError("SIGN_IN_MESSAGE_INVALID", "The message's issue time is in the future or older than a nonce lives.");
    }
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
    const wallet = await verifySignIn(messageText, signature, "sign-in");
    const accountId = await accounts.accountForWallet(wallet);
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
    const wallet = await verifySignIn(messageText, signature, "link");
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

  /** Ends one session (logout); true when it was live. */
  async function revokeSession(accountId: number, sessionId: number): Promise<boolean> {
    const result = await db
      .updateTable("sessions")
      .set({ revoked_at: now() })
      .where("id", "=", sessionId)
      .where("account_id", "=", accountId)
      .where("revoked_at", "is", null)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  /** Ends every session of the account (revoke-all after a leak); the number ended. */
  async function revokeAllSessions(accountId: number): Promise<number> {
    const result = await db
      .updateTable("sessions")
      .set({ revoked_at: now() })
      .where("account_id", "=", accountId)
      .where("revoked_at", "is", null)
      .executeTakeFirst();
    return Number(result.numUpdatedRows);
  }

  return { principalOf, issueNonce, signIn, linkWallet, revokeSession, revokeAllSessions };
}
