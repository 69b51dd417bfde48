import type { SqliteDatabase, SqliteStatement } from "kysely";

/** Statements kept per connection: the API's queries and the indexer's row statements are a few hundred shapes. */
const CACHED_STATEMENTS = 500;

/**
 * A SQLite connection for Kysely that prepares each distinct SQL text once. Kysely's SQLite driver prepares every
 * query it runs, and SQLite compiles the statement each time (15 µs for a one-row insert, 1 ms for a 512-row one):
 * about a tenth of the API's CPU under load and of an indexer catch-up (bench/indexer.json, bench/worker.ts). The most
 * recently used statements are kept; Kysely runs one statement at a time per connection, so a cached statement is
 * never in use twice.
 */
export function cachingStatements(database: SqliteDatabase): SqliteDatabase {
  const statements = new Map<string, SqliteStatement>();
  return {
    close: () => {
      statements.clear();
      database.close();
    },
    prepare(sql) {
      let statement = statements.get(sql);
      if (statement) statements.delete(sql);
      else {
        statement = database.prepare(sql);
        if (statements.size >= CACHED_STATEMENTS) statements.delete(statements.keys().next().value!);
      }
      statements.set(sql, statement);
      return statement;
    },
  };
}
