import type { Kysely, Transaction } from "kysely";
import type { Database } from "./schema";

/**
 * Holds `name` until the transaction ends: the transaction's first write upserts the name's row in `row_locks`. On
 * PostgreSQL the row stays locked until commit, so the same name waits on every connection of every API process; on
 * SQLite the write takes the database's write lock. Call it first in the transaction.
 */
export async function lockName(trx: Transaction<Database>, name: string, at: number): Promise<void> {
  await trx
    .insertInto("row_locks")
    .values({ name, locked_at: at })
    .onConflict((oc) => oc.column("name").doUpdateSet({ locked_at: at }))
    .execute();
}

/**
 * Runs `work` in a transaction that holds `name` (lockName): one at a time per name across every API process on the
 * database. `work` must use the transaction it is given, never `db` (on SQLite the one connection is the transaction's).
 */
export async function withNameLocked<T>(
  db: Kysely<Database>,
  name: string,
  at: number,
  work: (trx: Transaction<Database>) => Promise<T>,
): Promise<T> {
  return db.transaction().execute(async (trx) => {
    await lockName(trx, name, at);
    return work(trx);
  });
}
