import { constants } from "node:fs";
import { chmod, lstat, mkdir, open, opendir, readdir, rm, stat } from "node:fs/promises";
import { join, resolve } from "node:path";
import { killMarkedProcesses, scratchMarks } from "./marked-processes.ts";
import { mountsAtOrBelow } from "./mount-points.ts";

/**
 * Private scratch directories, one per PTY: `TMPDIR` and friends point there
 * so the shared `/tmp` can stay non-writable. This is a filesystem edge; the
 * names are unguessable and the directories are mode 0700 whatever the umask.
 */

/** Every scratch directory's name starts with this; the sweep removes nothing else. */
export const SCRATCH_DIR_PREFIX = "hatch-scratch-";

/** 128 bits: another local user cannot guess a live directory's name. */
const NAME_RANDOM_BYTES = 16;
/** Exactly what `createScratchDir` makes: the prefix and 32 lower-case hex digits. */
const SCRATCH_NAME = new RegExp(`^${SCRATCH_DIR_PREFIX}[0-9a-f]{${NAME_RANDOM_BYTES * 2}}$`);
/** Owner only: the scratch holds pasted images and tool temp files. */
const PRIVATE_DIR_MODE = 0o700;
/**
 * How many entries a start-up sweep looks at. Bounded so a base directory
 * flooded with entries cannot stall start; leftovers go at the next start.
 */
export const DEFAULT_SWEEP_MAX_ENTRIES = 1024;

/** One session's scratch directory; remove it when the PTY ends. */
export interface ScratchDir {
  /** Absolute path, `<base>/hatch-scratch-<32 hex>`. */
  readonly path: string;
  /** Delete the directory and everything in it. Idempotent; concurrent calls share one removal. */
  remove(): Promise<void>;
  /** Same as `remove`, for `await using`. */
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * True for a name `createScratchDir` could have made.
 *
 * @example
 * isScratchDirName("hatch-scratch-" + "0".repeat(32)) // true
 */
export function isScratchDirName(name: string): boolean {
  return SCRATCH_NAME.test(name);
}

/**
 * Create a new scratch directory under `base` (created 0700 if missing).
 *
 * @example
 * await using scratch = await createScratchDir(join(config.dataDir, "scratch"));
 * spawn({ env: { TMPDIR: scratch.path } });
 */
export async function createScratchDir(base: string): Promise<ScratchDir> {
  const root = await ensurePrivateDir(resolve(base));
  const path = join(root, SCRATCH_DIR_PREFIX + randomHex(NAME_RANDOM_BYTES));
  // Not recursive: an existing entry of this name means something is wrong, so fail.
  // mkdir's mode can only be narrowed by the umask, never widened, so there is no
  // moment where the directory is more open than 0700; chmod then undoes a narrowing.
  await mkdir(path, { mode: PRIVATE_DIR_MODE });
  await chmod(path, PRIVATE_DIR_MODE);

  let removal: Promise<void> | undefined;
  const remove = () =>
    (removal ??= removeTree(path).catch((error) => {
      // A failed removal (a busy mount, say) may be retried by the next caller.
      removal = undefined;
      throw error;
    }));
  return { path, remove, [Symbol.asyncDispose]: remove };
}

/**
 * Remove a directory tree. The program owns its scratch and can lock parts of
 * it (`chmod 000` on a subdirectory), which stops a server not running as
 * root: then every directory in it is opened to its owner (symlinks are
 * never followed) and the removal tried again. A tree with something mounted
 * in it is not touched (the removal would delete the mounted data): it fails,
 * naming the mount, and stays for the operator.
 */
export async function removeTree(path: string): Promise<void> {
  const mounts = await mountsAtOrBelow(path);
  if (mounts.length > 0) throw new Error(`Cannot remove ${path}: ${mounts.join(", ")} is mounted inside it; unmount it, and the next start removes the rest`);
  try {
    await rm(path, { recursive: true, force: true });
  } catch {
    await openToOwner(path);
    await rm(path, { recursive: true, force: true });
  }
}

/** Linux's O_PATH, which node:fs does not name: a descriptor for a place, opened without read permission. */
const O_PATH = 0o10000000;

async function openToOwner(dir: string): Promise<void> {
  // A program still running could swap a directory for a symlink, or rename one above it, between a check and a
  // chmod by path, and have the service chmod what the link points at. So each directory is opened once, without
  // following a link, and everything below is reached through that descriptor (/proc/self/fd/N/name), never by
  // path again. O_PATH opens a directory its mode closes (chmod 000, the reason for this walk).
  const handle = await open(dir, O_PATH | constants.O_DIRECTORY | constants.O_NOFOLLOW).catch(() => null);
  if (!handle) return;
  try {
    const opened = `/proc/self/fd/${handle.fd}`;
    await chmod(opened, PRIVATE_DIR_MODE).catch(() => {});
    for (const entry of await readdir(opened, { withFileTypes: true }).catch(() => [])) {
      if (entry.isDirectory()) await openToOwner(join(opened, entry.name));
    }
  } finally {
    await handle.close();
  }
}

/** What the orphan sweep is told about the running server. */
export interface SweepOptions {
  /** True for a path (`<base>/<name>`, as `ScratchDir.path`) a live session still owns. */
  isLive(path: string): boolean;
  /** Entries looked at before stopping; defaults to `DEFAULT_SWEEP_MAX_ENTRIES`. */
  maxEntries?: number;
}

/**
 * Remove scratch directories left by an unclean exit, and end the processes
 * still started from them. Only real directories
 * directly inside `base` whose name matches the scratch pattern exactly, and
 * that no live session owns, are removed. Symlinks are never followed (a link
 * named like a scratch directory is left alone, as is its target), other names
 * are never touched, and a failure on one entry does not stop the sweep.
 *
 * @example
 * const { removed } = await sweepOrphanScratch(scratchBase, { isLive: (p) => sessions.ownsScratch(p) });
 */
export async function sweepOrphanScratch(base: string, options: SweepOptions): Promise<{ removed: string[] }> {
  const maxEntries = options.maxEntries ?? DEFAULT_SWEEP_MAX_ENTRIES;
  if (!Number.isInteger(maxEntries) || maxEntries < 0) throw new RangeError(`Cannot sweep with maxEntries ${maxEntries}: expected a non-negative integer`);
  const root = resolve(base);
  const removed: string[] = [];
  const dir = await opendir(root).catch((error: NodeJS.ErrnoException) => {
    if (error.code === "ENOENT") return null;
    throw error;
  });
  if (!dir) return { removed };

  let seen = 0;
  // for-await closes the directory handle on every way out of the loop.
  for await (const entry of dir) {
    if (seen++ >= maxEntries) break;
    if (!isScratchDirName(entry.name)) continue;
    const path = join(root, entry.name);
    // lstat, not the dirent type: some filesystems report "unknown", and a
    // symlink must read as a symlink here, never as its target.
    const info = await lstat(path).catch(() => null);
    if (!info?.isDirectory() || options.isLive(path)) continue;
    // A session of a server that crashed can have left processes running in it: they end before their dir goes.
    await killMarkedProcesses(scratchMarks(path)).catch(() => []);
    try {
      await removeTree(path);
      removed.push(path);
    } catch (error) {
      // Best effort: the next start tries again.
      console.error(`hatch: cannot remove the leftover scratch dir ${path}:`, error instanceof Error ? error.message : error);
    }
  }
  return { removed };
}

async function ensurePrivateDir(path: string): Promise<string> {
  await mkdir(path, { recursive: true, mode: PRIVATE_DIR_MODE });
  const info = await stat(path);
  if ((info.mode & 0o777) !== PRIVATE_DIR_MODE) await chmod(path, PRIVATE_DIR_MODE);
  return path;
}

function randomHex(bytes: number): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(bytes)), (b) => b.toString(16).padStart(2, "0")).join("");
}
