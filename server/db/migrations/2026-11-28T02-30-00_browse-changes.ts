import { sql, type Kysely } from "kysely";

/**
 * What changed the browse answer, on PostgreSQL (issue 30; server/tasks/browse-version.ts). The browse cache was
 * dropped on any committed write (the database snapshot as its version), so a sign-in nonce every 20 ms re-ran the page
 * query and its serialization 50 times a second (47 ms p99 at 1,000,000 tasks, 8 ms without the writes). Each
 * transaction that writes `listings`, `listing_capabilities` or `escrow_tasks` now records its transaction id in
 * `browse_changes`, once (a statement trigger; nothing per row); the row becomes visible when, and only if, the write
 * commits, so "a change not visible in the snapshot a page was read at" is exact. `browse_change_horizon` holds the
 * transaction id below which records were removed (the API removes completed ones now and then): a snapshot older
 * than it counts as changed. SQLite keeps its data version (any write).
 */
export async function up(db: Kysely<any>): Promise<void> {
  if (!isPostgres(db)) return;
  await sql`create table browse_changes (xid xid8 primary key)`.execute(db);
  await sql`create table browse_change_horizon (id smallint primary key check (id = 1), xid xid8 not null)`.execute(db);
  await sql`insert into browse_change_horizon (id, xid) values (1, '0'::xid8)`.execute(db);
  await sql`create function browse_changed() returns trigger language plpgsql as $$
    begin
      insert into browse_changes (xid) values (pg_current_xact_id()) on conflict do nothing;
      return null;
    end
  $$`.execute(db);
  for (const table of TABLES) {
    await sql`create trigger ${sql.id(`${table}_browse_changed`)} after insert or update or delete or truncate on ${sql.id(table)}
      for each statement execute function browse_changed()`.execute(db);
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  if (!isPostgres(db)) return;
  for (const table of TABLES) await sql`drop trigger ${sql.id(`${table}_browse_changed`)} on ${sql.id(table)}`.execute(db);
  await sql`drop function browse_changed()`.execute(db);
  await sql`drop table browse_change_horizon`.execute(db);
  await sql`drop table browse_changes`.execute(db);
}

/** The tables a browse page and its total are read from (server/tasks/queries.ts `openFor`). */
const TABLES = ["listings", "listing_capabilities", "escrow_tasks"];

function isPostgres(db: Kysely<any>): boolean {
  return db.getExecutor().adapter.constructor.name === "PostgresAdapter";
}
