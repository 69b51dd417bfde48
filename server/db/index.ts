import { mkdirSync } from "node:fs";
import path from "node:path";
import SQLite from "better-sqlite3";
import { Kysely, Migrator, PostgresDialect, SqliteDialect, type MigrationProvider } from "kysely";
import type { Database } from "./schema";
import { migrations } from "./migrations";
import { cachingStatements } from "./statement-cache";
import { checkpointInBackground } from "./checkpointer";

export type Db = Kysely<Database>;
export type { Database } from "./schema";

export interface DatabaseOptions {
  /** PostgreSQL connection string; when set, PostgreSQL is used through the same Kysely code. */
  databaseUrl?: string;
  /** SQLite file (or `:memory:`). */
  sqlitePath?: string;
  /** A whole SQLite database file's bytes, opened as a private in-memory copy (tests restore a migrated image). */
  sqliteImage?: Buffer;
}

/** Opens the database (SQLite in WAL mode by default, PostgreSQL when `databaseUrl` is set). */
export function createDatabase(options: DatabaseOptions): Db {
  if (options.databaseUrl) return new Kysely<Database>({ dialect: postgresDialect(options.databaseUrl) });
  const file = options.sqlitePath ?? ":memory:";
  if (!options.sqliteImage && file !== ":memory:") mkdirSync(path.dirname(file), { recursive: true });
  const sqlite = options.sqliteImage ? new SQLite(options.sqliteImage) : new SQLite(file);
  // 16 KiB pages for a new file (an existing file keeps its own): a catch-up writes a quarter as many pages to the WAL,
  // about 15% less indexer CPU (bench/indexer.ts); set before WAL mode, which fixes the page size.
  sqlite.pragma("page_size = 16384");
  sqlite.pragma("journal_mode = WAL");
  sqlite.pragma("synchronous = NORMAL");
  sqlite.pragma("foreign_keys = ON");
  sqlite.pragma("busy_timeout = 5000");
  const database = cachingStatements(sqlite);
  if (!options.sqliteImage && file !== ":memory:") {
    // WAL checkpoints on a thread of the file's own, not inside this connection's commits (checkpointer.ts).
    const release = checkpointInBackground(sqlite, path.resolve(file));
    const close = database.close.bind(database);
    database.close = () => {
      release();
      close();
    };
  }
  return new Kysely<Database>({ dialect: new SqliteDialect({ database }) });
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

/**
 * A transaction that lost a race to a concurrent writer and may simply be run again: SQLite busy or a stale WAL
 * snapshot (a read-then-write transaction overtaken by another connection's commit), PostgreSQL serialization failure
 * or deadlock.
 */
export function isWriteConflict(error: unknown): boolean {
  const code = (error as { code?: string })?.code;
  return code === "SQLITE_BUSY" || code === "SQLITE_BUSY_SNAPSHOT" || code === "40001" || code === "40P01";
}

/**
 * Runs `work` (a whole transaction) again when it loses a race, up to `attempts` times with a short growing pause.
 * `retryUnique` also retries unique violations, for read-then-insert transactions whose next run reads the winner's
 * row instead of inserting.
 */
export async function retryConflicts<T>(work: () => Promise<T>, options: { retryUnique?: boolean; attempts?: number } = {}): Promise<T> {
  const attempts = options.attempts ?? 5;
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      const retryable = isWriteConflict(error) || (options.retryUnique === true && isUniqueViolation(error));
      if (!retryable || attempt >= attempts) throw error;
      await new Promise((resolve) => setTimeout(resolve, 5 * attempt + Math.random() * 10));
    }
  }
}
