import { chmodSync, closeSync, existsSync, mkdirSync, openSync, realpathSync, statSync, type Stats } from "node:fs";
import { join } from "node:path";
import { openDatabase, type OpenDatabase } from "./database.ts";

/** Name of the SQLite file inside the data dir. */
export const DATABASE_FILE = "hatch.db";
/** Owner only: the data dir holds the database (password hashes, encrypted secrets, audit) and the key. */
export const PRIVATE_DIR = 0o700;
export const PRIVATE_FILE = 0o600;
/** Group and other permission bits. */
const OTHERS = 0o077;
const STICKY = 0o1000;
const WRITABLE_BY_ALL = 0o002;

/**
 * Make the data dir private and open its database. A data dir an operator made
 * by hand (or an older hatch left) may be open to other users: it is narrowed
 * to its owner, never widened, as is the SQLite file (SQLite gives its -wal and
 * -shm files the database file's mode). Returns what it narrowed, for a log line.
 * A failure names the data dir: SQLite's own words ("file is not a database",
 * for a wrong restore) name no file.
 */
export function openDataDir(dataDir: string): OpenDatabase & { narrowed: string[] } {
  try {
    return openPrivately(dataDir);
  } catch (error) {
    throw new Error(`Cannot open the data dir ${dataDir}: ${(error as Error).message}`, { cause: error });
  }
}

function openPrivately(dataDir: string): OpenDatabase & { narrowed: string[] } {
  mkdirSync(dataDir, { recursive: true, mode: PRIVATE_DIR });
  const shared = sharedDirectory(dataDir);
  if (shared) throw new Error(`${dataDir} is ${shared}: other users share it, and hatch would take it over; give HATCH_DATA_DIR a directory of its own`);
  const path = join(dataDir, DATABASE_FILE);
  // Created owner-only before SQLite sees it: SQLite would create it 0644 under the usual umask.
  if (!existsSync(path)) closeSync(openSync(path, "a", PRIVATE_FILE));
  const narrowed = [dataDir, path, `${path}-wal`, `${path}-shm`].filter(narrowToOwner);
  return { ...openDatabase(path), narrowed };
}

/**
 * Why `dir` is a directory other users share (`/`, a sticky one such as
 * /tmp, or one every user may write), or null. Narrowing it to its owner, as
 * a data dir is, would lock them out of it.
 */
function sharedDirectory(dir: string): string | null {
  const mode = statSync(dir).mode;
  if (realpathSync(dir) === "/") return "the root directory";
  if (mode & STICKY) return "a sticky directory (as /tmp is)";
  if (mode & WRITABLE_BY_ALL) return "writable by every user";
  return null;
}

/**
 * Take group and other permissions away from `path` when it has any and this
 * process owns it (setgid and sticky bits stay); true when it did. A path
 * someone else owns (a shared group volume, say) is theirs to set: it is
 * left as it is, with a warning.
 */
function narrowToOwner(path: string): boolean {
  let info: Stats;
  try {
    info = statSync(path);
  } catch {
    return false;
  }
  const mode = info.mode & 0o7777;
  if ((mode & OTHERS) === 0) return false;
  if (process.getuid && info.uid !== process.getuid()) {
    console.warn(`hatch: ${path} is open to other users and owned by uid ${info.uid}, not this process: left as it is`);
    return false;
  }
  chmodSync(path, mode & ~OTHERS);
  return true;
}
