import { mkdirSync } from "node:fs";
import { PRIVATE_DIR } from "./data-dir.ts";
import { lockDirectory } from "./directory-lock.ts";

/** A data dir claimed by this process's server until `release`. */
export interface ServerClaim {
  release(): void;
}

/**
 * Claim the data dir for one server. A second server on the same data dir
 * would take the first's live runs and sessions for what a crashed server left
 * behind, and kill them as it starts (even one that then finds its port taken),
 * so it must refuse before it touches anything. The claim is an exclusive
 * lock on the data dir itself, so no file an operator might delete as a stale
 * lock can free it; the kernel drops it when the process dies (a crash leaves
 * no stale claim). The CLI never claims: it shares the database with a running
 * server by design.
 *
 * @example
 * const claim = claimDataDir(config.dataDir); // throws while another server runs on it
 * claim.release();
 */
export function claimDataDir(dataDir: string): ServerClaim {
  mkdirSync(dataDir, { recursive: true, mode: PRIVATE_DIR });
  const unlock = lockDirectory(dataDir);
  if (!unlock) throw new Error(`Cannot use the data dir ${dataDir}: another hatch server is running on it`);
  let released = false;
  return {
    release: () => {
      if (released) return;
      released = true;
      unlock();
    },
  };
}
