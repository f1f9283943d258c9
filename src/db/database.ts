import { Database as SqliteDatabase } from "bun:sqlite";
import { drizzle, type BunSQLiteDatabase } from "drizzle-orm/bun-sqlite";
import { readMigrationFiles } from "drizzle-orm/migrator";
import { fileURLToPath } from "node:url";
import * as schema from "./schema.ts";

/** The drizzle handle every service receives; there is exactly one per process. `$client` is its bun:sqlite connection. */
export type Db = BunSQLiteDatabase<typeof schema> & { $client: SqliteDatabase };

/** An open database and its dispose. */
export interface OpenDatabase {
  db: Db;
  /** The raw bun:sqlite handle, for transactions drizzle cannot express. */
  sqlite: SqliteDatabase;
  close(): void;
}

const MIGRATIONS_FOLDER = fileURLToPath(new URL("../../drizzle", import.meta.url));
/** drizzle's bookkeeping table of applied migrations (drizzle-kit reads it too). */
const MIGRATIONS_TABLE = "__drizzle_migrations";
/** Wait this long for a lock instead of failing at once: the CLI and the server may share the file. */
const BUSY_TIMEOUT_MS = 5000;

/**
 * Open (creating if needed) the SQLite file, switch to WAL, enforce foreign keys
 * and apply every pending migration.
 *
 * @example
 * const { db, close } = openDatabase(join(dataDir, "hatch.db"));
 */
export function openDatabase(path: string): OpenDatabase {
  const sqlite = new SqliteDatabase(path, { create: true, strict: true });
  try {
    // First: switching a new file to WAL takes a lock another process opening it (the server, the CLI) may hold.
    sqlite.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
    sqlite.exec("PRAGMA journal_mode = WAL");
    sqlite.exec("PRAGMA foreign_keys = ON");
    sqlite.exec("PRAGMA synchronous = NORMAL");
    applyMigrations(sqlite);
  } catch (error) {
    // A file that is not a database opens, and fails only here: it must not stay open.
    sqlite.close();
    throw error;
  }
  return { db: drizzle(sqlite, { schema }), sqlite, close: () => sqlite.close() };
}

/**
 * Apply the migrations not applied yet, recorded in drizzle's own table as
 * drizzle's migrator does. Its migrator reads what is applied before it begins
 * its transaction, so two processes opening a new or just upgraded database at
 * once both applied the same migrations and the second failed ("table already
 * exists"), or would apply a data migration twice. Here the read is inside one
 * IMMEDIATE transaction: the second process waits, then finds nothing to do.
 */
function applyMigrations(sqlite: SqliteDatabase): void {
  const migrations = readMigrationFiles({ migrationsFolder: MIGRATIONS_FOLDER });
  sqlite.exec(`CREATE TABLE IF NOT EXISTS ${MIGRATIONS_TABLE} (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at numeric)`);
  const last = sqlite.query<{ createdAt: number }, []>(`SELECT created_at AS createdAt FROM ${MIGRATIONS_TABLE} ORDER BY created_at DESC LIMIT 1`);
  const record = sqlite.query(`INSERT INTO ${MIGRATIONS_TABLE} (hash, created_at) VALUES (?, ?)`);
  sqlite
    .transaction(() => {
      const applied = last.get()?.createdAt;
      for (const migration of migrations) {
        if (applied !== undefined && Number(applied) >= migration.folderMillis) continue;
        for (const statement of migration.sql) sqlite.run(statement);
        record.run(migration.hash, migration.folderMillis);
      }
    })
    .immediate();
}
