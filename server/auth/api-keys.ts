import { createHash, randomBytes } from "node:crypto";
import { MAX_SERIAL_ID, type Db } from "../db";
import { MarketError } from "@market/core/errors";
import type { Clock } from "../http/types";
import type { Accounts } from "./accounts";
import type { Principal } from "./principal";

export const API_KEY_PREFIX = "sk_";
/** `last_used_at` is written at most this often per key, so reads do not become writes. */
const LAST_USED_RESOLUTION_MS = 60_000;

export const sha256Hex = (text: string) => createHash("sha256").update(text).digest("hex");

export type ApiKeys = ReturnType<typeof createApiKeys>;

/** API keys: each acts as the wallet recorded on it; returned once, stored as a SHA-256 hash. */
export function createApiKeys({ db, now, accounts }: { db: Db; now: Clock; accounts: Pick<Accounts, "firstWallet"> }) {
  const lastUsedWritten = new Map<number, number>();

  /** The principal of a presented key; `INVALID_TOKEN` when it is wrong or revoked. */
  async function principalOf(key: string): Promise<Principal> {
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

  /** A new key acting as the account's first linked wallet. The key is returned once and stored hashed. */
  async function createApiKey(accountId: number, name: string) {
    const key = `${API_KEY_PREFIX}${randomBytes(32).toString("base64url")}`;
    const wallet = await accounts.firstWallet(accountId);
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

  /** Revokes one of the account's keys; false when it was revoked already (nothing changed). */
  async function revokeApiKey(accountId: number, id: number): Promise<boolean> {
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
      return false;
    }
    return true;
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

  return { principalOf, createApiKey, listApiKeys, revokeApiKey, revokeAllApiKeys };
}
