import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmdirSync } from "node:fs";
import { readdir, readFile, rmdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { unavailable } from "../platform/index.ts";
import { unescapeMountPath } from "./mount-points.ts";

/**
 * The cgroup v2 subtree hatch keeps below its own cgroup: one leaf per session
 * and per workflow run. A program enters its leaf before it runs, and
 * everything it starts is born there and cannot leave it without write access
 * to cgroupfs, so the end of a session or run kills all of it at once
 * (`cgroup.kill`): what left the process group, what cleared its environment
 * (`env -i`) and a chain that forks and exits faster than /proc can be read.
 *
 * Where the host gives no such subtree (cgroup v1 only, a read-only
 * /sys/fs/cgroup in a container, a kernel before 5.14, a user without
 * delegation) it is `dir: null`, leaves do nothing, and the environment sweep
 * (`killMarkedProcesses`) is the only net.
 */
export interface ProcessCgroups {
  /** The subtree, or null where cgroups are unavailable. */
  readonly dir: string | null;
  /** Why there is no subtree (for the start-up log), or null when there is one. */
  readonly unavailableBecause: string | null;
  /** Make the leaf `name` (a session's or run's scratch dir name: unique per data dir). */
  leaf(name: string): CgroupLeaf;
  /** Kill what every leaf still holds and remove the subtree (shutdown). */
  close(): Promise<void>;
}

/** One session's or run's cgroup. */
export interface CgroupLeaf {
  /** The argv that enters this cgroup and then execs `argv` (the same pid), so the program never runs outside it. */
  enter(argv: string[]): string[];
  /** Kill everything in it, wait until it is empty, and remove it. Idempotent. */
  end(): Promise<void>;
}

/** Where to find the subtree and how to report trouble. */
export interface ProcessCgroupsOptions {
  /** The data dir: the subtree is named after it, so two servers in one cgroup never touch each other's. */
  dataDir: string;
  /** The service's own cgroup dir; by default read from /proc/self/cgroup and /proc/self/mountinfo. */
  ownCgroup?: string | null;
  log?: (line: string) => void;
}

/** Run by /bin/sh as `$0` = the leaf's cgroup.procs: "0" moves the writer itself, and exec keeps the pid. */
const ENTER_SCRIPT = 'echo 0 2>/dev/null >"$0" || { echo "hatch: cannot enter the cgroup $0" >&2; exit 126; }; exec "$@"';
/** How long a kill may take to empty a cgroup: SIGKILL is prompt, but a process in uninterruptible sleep is not. */
const EMPTY_WAIT_MS = 2000;
const EMPTY_POLL_MAX_MS = 20;

/** A subtree that does nothing: the host has no usable cgroup v2. */
function noCgroups(because: string): ProcessCgroups {
  const leaf: CgroupLeaf = { enter: (argv) => argv, end: async () => {} };
  return { dir: null, unavailableBecause: because, leaf: () => leaf, close: async () => {} };
}

/**
 * Open hatch's subtree for this data dir, or the no-op one where the host has
 * none. Whatever a previous server of this data dir left in it (it crashed
 * mid-session or mid-run) is killed first: call it after the data dir is
 * claimed and before any session or run starts.
 *
 * @example
 * const cgroups = await openProcessCgroups({ dataDir: config.dataDir });
 * const leaf = cgroups.leaf("run-x1y2"); spawn(leaf.enter(argv)); … await leaf.end();
 */
export async function openProcessCgroups(options: ProcessCgroupsOptions): Promise<ProcessCgroups> {
  const log = options.log ?? ((line: string) => console.warn(line));
  const own = options.ownCgroup === undefined ? ownCgroupDir() : options.ownCgroup;
  if (own === null) return noCgroups("this host has no cgroup v2 hierarchy for the service's cgroup");
  // Named after the directory itself, not the path it was given by: a data dir reached through a symlink is the same one.
  const dir = join(own, `hatch-${createHash("sha256").update(realPathOf(options.dataDir)).digest("hex").slice(0, 16)}`);
  try {
    mkdirSync(dir, { recursive: true });
  } catch (error) {
    return noCgroups(`cannot make ${dir}: ${(error as Error).message}`);
  }
  if (!existsSync(join(dir, "cgroup.kill"))) {
    rmdirSync(dir);
    return noCgroups("the kernel has no cgroup.kill (Linux 5.14 or later has)");
  }
  await clear(dir, "a previous server left in", log);
  const refused = enterRefused(dir);
  if (refused !== null) {
    await rmdir(dir).catch(() => {});
    return noCgroups(refused);
  }
  return {
    dir,
    unavailableBecause: null,
    leaf: (name) => {
      const path = join(dir, name);
      try {
        mkdirSync(path);
      } catch (error) {
        throw unavailable("cgroup_unavailable", `Cannot start the program: its cgroup cannot be made (${(error as Error).message})`);
      }
      let ending: Promise<void> | undefined;
      return {
        enter: (argv) => ["/bin/sh", "-c", ENTER_SCRIPT, join(path, "cgroup.procs"), ...argv],
        end: () => (ending ??= killAndRemove(path, log)),
      };
    },
    close: async () => {
      await clear(dir, "still running at shutdown in", log);
      await removeCgroupTree(dir, log);
    },
  };
}

/** Kill everything below `dir` and remove its leaves (a previous server's, or what a shutdown found still there). */
async function clear(dir: string, whose: string, log: (line: string) => void): Promise<void> {
  if (!existsSync(dir)) return; // closed already
  const names = readdirSync(dir, { withFileTypes: true }).filter((entry) => entry.isDirectory()).map((entry) => entry.name);
  if (names.length === 0) return;
  // One write ends the whole subtree, leaf by leaf as the kernel walks it.
  if (!(await killAndWait(dir, log))) return;
  for (const name of names) await removeCgroupTree(join(dir, name), log);
  log(`hatch: ended the processes of ${names.length} sessions or runs ${whose} ${dir}`);
}

/** Kill a leaf's processes and remove it; what cannot be removed is logged, and the next close or start tries again. */
async function killAndRemove(path: string, log: (line: string) => void): Promise<void> {
  if (!(await killAndWait(path, log))) return;
  await removeCgroupTree(path, log);
}

/**
 * Remove a cgroup and the cgroups its programs made below it (a bare session
 * may: a nested hatch, `systemd-run`), deepest first: a cgroup with children
 * cannot be removed. Once killed they hold no process.
 */
async function removeCgroupTree(path: string, log: (line: string) => void): Promise<void> {
  const children = await readdir(path, { withFileTypes: true }).catch(() => []);
  for (const child of children) if (child.isDirectory()) await removeCgroupTree(join(path, child.name), log);
  await rmdir(path).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== "ENOENT") log(`hatch: cannot remove the cgroup ${path}: ${error.message}`);
  });
}

/** The data dir's real path; the path as given when it cannot be resolved. */
function realPathOf(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

/** Write cgroup.kill and wait until `populated 0`; false if it did not empty in time. */
async function killAndWait(path: string, log: (line: string) => void): Promise<boolean> {
  try {
    await writeFile(join(path, "cgroup.kill"), "1");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return true; // already removed
    log(`hatch: cannot kill the processes of the cgroup ${path}: ${(error as Error).message}`);
    return false;
  }
  const started = performance.now();
  for (let wait = 1; performance.now() - started < EMPTY_WAIT_MS; wait = Math.min(wait * 2, EMPTY_POLL_MAX_MS)) {
    const events = await readFile(join(path, "cgroup.events"), "utf8").catch(() => "populated 0");
    if (/^populated 0$/m.test(events)) return true;
    await delay(wait);
  }
  log(`hatch: the processes of the cgroup ${path} did not end within ${EMPTY_WAIT_MS} ms of being killed`);
  return false;
}

/** Why a child cannot enter a leaf of `dir` (the service may make cgroups but not move processes), or null when it can. */
function enterRefused(dir: string): string | null {
  const probe = join(dir, `probe-${process.pid}`);
  try {
    mkdirSync(probe);
  } catch (error) {
    return `cannot make a cgroup in ${dir}: ${(error as Error).message}`;
  }
  try {
    const child = Bun.spawnSync(["/bin/sh", "-c", ENTER_SCRIPT, join(probe, "cgroup.procs"), "true"], { stdout: "ignore", stderr: "pipe" });
    if (child.exitCode === 0) return null;
    return `a process cannot enter a cgroup in ${dir}: ${child.stderr.toString().trim() || `exit ${child.exitCode}`}`;
  } finally {
    rmdirSync(probe);
  }
}

/**
 * The service's own cgroup v2 directory: its path from /proc/self/cgroup
 * (`0::/path`) under the cgroup2 mount that holds it (/proc/self/mountinfo),
 * or null on a host without one.
 */
function ownCgroupDir(): string | null {
  let path: string | undefined;
  let mounts: string;
  try {
    path = readFileSync("/proc/self/cgroup", "utf8")
      .split("\n")
      .find((line) => line.startsWith("0::"))
      ?.slice(3);
    mounts = readFileSync("/proc/self/mountinfo", "utf8");
  } catch {
    return null; // not Linux
  }
  if (!path?.startsWith("/")) return null;
  for (const line of mounts.split("\n")) {
    const [left, right] = line.split(" - ");
    if (!right?.startsWith("cgroup2 ")) continue;
    const fields = left!.split(" ");
    const root = unescapeMountPath(fields[3] ?? "");
    const mountPoint = unescapeMountPath(fields[4] ?? "");
    if (path === root) return mountPoint;
    if (path.startsWith(root === "/" ? "/" : `${root}/`)) return join(mountPoint, path.slice(root.length));
  }
  return null;
}
