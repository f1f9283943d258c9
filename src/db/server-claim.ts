import { Database as SqliteDatabase } from "bun:sqlite";
import { closeSync, existsSync, mkdirSync, openSync } from "node:fs";
import { join } from "node:path";
import { PRIVATE_DIR, PRIVATE_FILE } from "./data-dir.ts";

/** Name of the file a running server keeps locked inside its data dir. */
export const SERVER_LOCK_FILE = "server.lock";

/** A data dir claimed by this process's server until `release`. */
export interface ServerClaim {
  release(): void;
}

/**
 * Claim the data dir for one server. A second server on the same data dir
 * would take the first's live runs and sessions for what a crashed server left
 * behind, and kill them as it starts (even one that then finds its port taken),
 * so it must refuse before it touches anything. The claim is an exclusive
 * SQLite lock on `server.lock`: a POSIX record lock, which the kernel drops
 * when the process dies (a crash leaves no stale claim) and which the
 * processes it starts do not inherit. The CLI never claims: it shares the
 * database with a running server by design.
 *
 * @example
 * const claim = claimDataDir(config.dataDir); // throws while another server runs on it
 * claim.release();
 */
export function claimDataDir(dataDir: string): ServerClaim {
  mkdirSync(dataDir, { recursive: true, mode: PRIVATE_DIR });
  const path = join(dataDir, SERVER_LOCK_FILE);
  if (!existsSync(path)) closeSync(openSync(path, "a", PRIVATE_FILE));
  const lock = new SqliteDatabase(path);
  try {
    // No wait: a running server holds it for its whole life.
    lock.exec("PRAGMA busy_timeout = 0");
    lock.exec("BEGIN EXCLUSIVE");
  } catch (error) {
    lock.close();
    if ((error as { code?: string }).code === "SQLITE_BUSY") {
      throw new Error(`Cannot use the data dir ${dataDir}: another hatch server is running on it`);
    }
    throw error;
  }
  let released = false;
  return {
    release: () => {
      if (released) return;
      released = true;
      lock.close();
    },
  };
}
