import { chmodSync, closeSync, existsSync, mkdirSync, openSync, statSync } from "node:fs";
import { join } from "node:path";
import { openDatabase, type OpenDatabase } from "./database.ts";

/** Name of the SQLite file inside the data dir. */
export const DATABASE_FILE = "hatch.db";
/** Owner only: the data dir holds the database (password hashes, encrypted secrets, audit) and the key. */
const PRIVATE_DIR = 0o700;
const PRIVATE_FILE = 0o600;

/**
 * Make the data dir private and open its database. A data dir an operator made
 * by hand (or an older hatch left) may be open to other users: it is narrowed
 * to its owner, never widened, as is the SQLite file (SQLite gives its -wal and
 * -shm files the database file's mode). Returns what it narrowed, for a log line.
 */
export function openDataDir(dataDir: string): OpenDatabase & { narrowed: string[] } {
  mkdirSync(dataDir, { recursive: true, mode: PRIVATE_DIR });
  const path = join(dataDir, DATABASE_FILE);
  // Created owner-only before SQLite sees it: SQLite would create it 0644 under the usual umask.
  if (!existsSync(path)) closeSync(openSync(path, "a", PRIVATE_FILE));
  const narrowed = [dataDir, path, `${path}-wal`, `${path}-shm`].filter((p) => narrowToOwner(p, p === dataDir ? PRIVATE_DIR : PRIVATE_FILE));
  return { ...openDatabase(path), narrowed };
}

/** Take group and other permissions away from `path` when it has any; true when it did. */
function narrowToOwner(path: string, mode: number): boolean {
  let current: number;
  try {
    current = statSync(path).mode & 0o777;
  } catch {
    return false;
  }
  if ((current & ~mode) === 0) return false;
  chmodSync(path, current & mode);
  return true;
}
