import { mkdirSync } from "node:fs";
import path from "node:path";
import SQLite from "better-sqlite3";
import { Kysely, Migrator, PostgresDialect, SqliteDialect, type MigrationProvider } from "kysely";
import type { Database } from "./schema";
import { migrations } from "./migrations";

export type Db = Kysely<Database>;
export type { Database } from "./schema";

export interface DatabaseOptions {
  /** PostgreSQL connection string; when set, PostgreSQL is used through the same Kysely code. */
  databaseUrl?: string;
  /** SQLite file (or `:memory:`). */
  sqlitePath?: string;
}

/** Opens the database (SQLite in WAL mode by default, PostgreSQL when `databaseUrl` is set). */
export function createDatabase(options: DatabaseOptions): Db {
  if (options.databaseUrl) return new Kysely<Database>({ dialect: postgresDialect(options.databaseUrl) });
  const file = options.sqlitePath ?? ":memory:";
  if (file !== ":memory:") mkdirSync(path.dirname(file), { recursive: true });
  const sqlite = new SQLite(file);
  sqlite.pragma("journal_mode = WAL");
  sqlite.pragma("synchronous = NORMAL");
  sqlite.pragma("foreign_keys = ON");
  sqlite.pragma("busy_timeout = 5000");
  return new Kysely<Database>({ dialect: new SqliteDialect({ database: sqlite }) });
}

function postgresDialect(connectionString: string): PostgresDialect {
  // Loaded only when PostgreSQL is configured.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const pg = require("pg") as typeof import("pg");
  // bigint columns hold epoch milliseconds and block numbers, all below 2^53: read them as numbers.
  pg.types.setTypeParser(pg.types.builtins.INT8, (value: string) => Number(value));
  return new PostgresDialect({ pool: new pg.Pool({ connectionString, max: 10 }) });
}

/** Largest id of a `serial` column (PostgreSQL int4); ids from requests above it name no row. */
export const MAX_SERIAL_ID = 2 ** 31 - 1;

const provider: MigrationProvider = { getMigrations: async () => migrations };

/** Brings the schema to the latest migration; throws with the failing migration's error. */
export async function migrateToLatest(db: Db): Promise<void> {
  const { error, results } = await new Migrator({ db, provider }).migrateToLatest();
  const failed = results?.find((r) => r.status === "Error");
  if (error || failed) {
    throw new Error(`migration ${failed?.migrationName ?? ""} failed: ${error instanceof Error ? error.message : String(error)}`, {
      cause: error,
    });
  }
}

/** JSON text column helpers (lists and objects are stored as JSON text for portability). */
export const json = {
  write: (value: unknown): string => JSON.stringify(value),
  read: <T>(text: string | null): T | null => (text === null ? null : (JSON.parse(text) as T)),
};

/** A unique or primary-key violation, on SQLite or PostgreSQL: someone else wrote the row first. */
export function isUniqueViolation(error: unknown): boolean {
  const e = error as { code?: string; message?: string };
  return e?.code === "23505" || e?.code === "SQLITE_CONSTRAINT_PRIMARYKEY" || e?.code === "SQLITE_CONSTRAINT_UNIQUE";
}
