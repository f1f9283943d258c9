import { Database as SqliteDatabase } from "bun:sqlite";
import { drizzle, type BunSQLiteDatabase } from "drizzle-orm/bun-sqlite";
import { migrate } from "drizzle-orm/bun-sqlite/migrator";
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
  sqlite.exec("PRAGMA journal_mode = WAL");
  sqlite.exec("PRAGMA foreign_keys = ON");
  sqlite.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
  sqlite.exec("PRAGMA synchronous = NORMAL");
  const db = drizzle(sqlite, { schema });
  migrate(db, { migrationsFolder: MIGRATIONS_FOLDER });
  return { db, sqlite, close: () => sqlite.close() };
}
