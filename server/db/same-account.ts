/**
 * The same-account rule (issue 14 item 5, issue 23 item 5): the accounts an address acts for. A wallet linked to an
 * account, a registered agent's account, and a hosted agent's owner (its custodied wallet is never a linked wallet, yet
 * it is the owner's as much as any): each is the account's, everywhere two parties must not be one person (taking one's
 * own task, crediting reputation to oneself, delegating a paid sub-task back to the poster).
 */
import type { Kysely, Transaction } from "kysely";
import type { Database } from "./schema";

type Q = Kysely<Database> | Transaction<Database>;

/** Every account `address` acts for (linked wallet, registered agent, hosted agent of any state). */
export async function accountsOfAddress(q: Q, address: string): Promise<Set<number>> {
  // One after another: inside a transaction they share one connection.
  const linked = await q.selectFrom("account_wallets").select("account_id").where("address", "=", address).execute();
  const registered = await q.selectFrom("agents").select("account_id").where("address", "=", address).execute();
  const hosted = await q.selectFrom("hosted_agents").select("account_id").where("address", "=", address).execute();
  const out = new Set<number>();
  for (const row of [...linked, ...registered, ...hosted]) if (row.account_id !== null) out.add(row.account_id);
  return out;
}

/** The account a poster's wallet belongs to: its linked wallet's, else the owner of the hosted agent it is. */
export async function posterAccountOf(q: Q, poster: string): Promise<number | null> {
  const linked = await q.selectFrom("account_wallets").select("account_id").where("address", "=", poster).executeTakeFirst();
  if (linked) return linked.account_id;
  const hosted = await q.selectFrom("hosted_agents").select("account_id").where("address", "=", poster).executeTakeFirst();
  return hosted?.account_id ?? null;
}

/** Whether the two addresses are one account's (or one address). */
export async function sameAccount(q: Q, a: string, b: string): Promise<boolean> {
  if (a === b) return true;
  const left = await accountsOfAddress(q, a);
  const right = await accountsOfAddress(q, b);
  for (const id of left) if (right.has(id)) return true;
  return false;
}
