import { getAddress } from "ethers";
import { retryConflicts, type Db } from "../db";
import type { Clock } from "../http/types";

export type Accounts = ReturnType<typeof createAccounts>;

/** Accounts and the wallets linked to them (position 0: the first linked wallet, which API keys act as). */
export function createAccounts({ db, now }: { db: Db; now: Clock }) {
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

  /** Every wallet linked to the account, in the order they were linked. */
  async function walletsOf(accountId: number): Promise<string[]> {
    const rows = await db.selectFrom("account_wallets").select("address").where("account_id", "=", accountId).orderBy("position").execute();
    return rows.map((r) => r.address);
  }

  return { accountOfWallet, accountForWallet, firstWallet, walletsOf };
}
