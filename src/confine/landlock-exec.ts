/**
 * The Landlock helper: a separate process, run as the last stage of every
 * confined spawn (inside bwrap when bwrap is used). It builds a Landlock
 * ruleset, sets no_new_privs, drops every capability, restricts itself and
 * `execve`s the program, so the program starts already confined.
 *
 * Usage (see `helper-args.ts` for the full shape):
 * `bun --config=/dev/null --no-env-file landlock-exec.ts --ro / --rw /src --env K=V -- /bin/bash`
 *
 * Fail closed: if anything before `execve` fails, it prints one JSON line
 * `{"error":{"code":...,"message":...}}` on stderr and exits 126. It never
 * runs the program unrestricted.
 */
import { fstatSync, lstatSync, readdirSync, readFileSync, readlinkSync, writeSync } from "node:fs";
import { isatty } from "node:tty";
import { argsFromEnv, type HelperArgs, parseHelperArgs } from "./helper-args.ts";
import {
  DEVICE_RIGHTS,
  FILE_RIGHTS,
  FS,
  handledFsRights,
  handledNetRights,
  handledScopes,
  LIST_RIGHTS,
  READ_RIGHTS,
  rulesetAttrSize,
  WRITE_RIGHTS,
} from "./landlock-abi.ts";
import { compileRules, type PathGrant, type TreeReader } from "./landlock-rules.ts";
import { type LinuxCalls, loadLinuxCalls, SyscallError } from "./linux-calls.ts";
import { realPathOrSelf } from "./real-path.ts";
import { seccompFilter } from "./seccomp-filter.ts";

/** Shell convention for "found but could not run": every refusal before exec. */
const EXIT_REFUSED = 126;
/** Shell convention for "command not found". */
const EXIT_NOT_FOUND = 127;
const ENOENT = 2;

function fail(code: string, message: string, exitCode = EXIT_REFUSED, detail?: Record<string, unknown>): never {
  writeSync(2, `${JSON.stringify({ error: { code, message, ...(detail ? { detail } : {}) } })}\n`);
  process.exit(exitCode);
}

const tree: TreeReader = {
  list(dir) {
    try {
      return readdirSync(dir);
    } catch {
      return []; // unreadable: grant nothing beneath it
    }
  },
  kind(path) {
    try {
      const st = lstatSync(path);
      return st.isSymbolicLink() ? "symlink" : st.isDirectory() ? "dir" : "file";
    } catch {
      return "missing";
    }
  },
};

/** The terminal on fds 0-2 (opened before the helper started) must stay usable by path, e.g. `/dev/stdout`. */
function ownTerminals(): string[] {
  const paths = new Set<string>();
  for (const fd of [0, 1, 2]) {
    if (!isatty(fd)) continue;
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      if (target.startsWith("/")) paths.add(target);
    } catch {
      // not resolvable by path: nothing to grant
    }
  }
  return [...paths];
}

function buildRuleset(calls: LinuxCalls, abi: number, args: HelperArgs): number {
  const grants: PathGrant[] = [
    ...args.list.map((path) => ({ path, access: LIST_RIGHTS })),
    ...args.ro.map((path) => ({ path, access: READ_RIGHTS })),
    ...args.rw.map((path) => ({ path, access: WRITE_RIGHTS })),
    ...args.roNoExec.map((path) => ({ path, access: READ_RIGHTS & ~FS.EXECUTE })),
    ...args.rwNoExec.map((path) => ({ path, access: WRITE_RIGHTS & ~FS.EXECUTE })),
    ...[...args.dev, ...ownTerminals()].map((path) => ({ path, access: DEVICE_RIGHTS })),
  ];
  const handled = handledFsRights(abi);
  const rulesetFd = calls.createRuleset(handled, handledNetRights(abi), handledScopes(abi), rulesetAttrSize(abi));
  // No network rule is added: with ABI 4+ every TCP bind and connect is denied.
  for (const rule of compileRules(grants, args.deny.map(realPathOrSelf), tree)) {
    const fd = calls.openPath(rule.path);
    if (fd === null) continue; // missing: granting nothing is the closed side
    try {
      const st = fstatSync(fd);
      if (st.isSymbolicLink()) continue; // swapped for a link since listing: never grant through it
      assertReachedDirectly(rule.path, fd);
      const access = (st.isDirectory() ? rule.access : rule.access & FILE_RIGHTS) & handled;
      if (access !== 0) calls.addPathRule(rulesetFd, fd, access);
    } finally {
      calls.close(fd);
    }
  }
  return rulesetFd;
}

/** A grant's path led somewhere else than itself: the whole spawn is refused, not just that grant. */
class PathMovedError extends Error {}

/**
 * The planner checked that every root is its own real path, but a directory
 * above one can be renamed and replaced by a symlink between that check and
 * this open (or, inside bwrap, before bwrap mounted it), so the path now leads
 * elsewhere: into another team's tree, or `/etc`. O_NOFOLLOW only guards the
 * last component. What the kernel says the opened file's path is settles it:
 * a grant is only added for the very file its path names.
 */
function assertReachedDirectly(path: string, fd: number): void {
  const reached = readlinkSync(`/proc/self/fd/${fd}`);
  if (reached !== path) throw new PathMovedError(`"${path}" now leads to "${reached}" (a directory on the way was replaced since the spawn was planned)`);
}

/** Read the calling thread's capability sets; all must be zero before exec. */
function assertNoCapabilities(): void {
  const status = readFileSync("/proc/thread-self/status", "utf8");
  const held = status.split("\n").filter((line) => /^Cap(Inh|Prm|Eff|Bnd|Amb):\s*[0-9a-f]*[1-9a-f]/.test(line));
  if (held.length > 0) throw new Error(`capabilities remain: ${held.join(", ")}`);
}

function main(readArgs: () => string[]): never {
  let args: HelperArgs;
  try {
    args = parseHelperArgs(readArgs());
  } catch (error) {
    fail("helper_usage", (error as Error).message);
  }
  let calls: LinuxCalls;
  try {
    calls = loadLinuxCalls();
  } catch (error) {
    fail("confinement_unavailable", `Cannot load libc for Landlock: ${(error as Error).message}`);
  }
  const abi = calls.landlockAbi();
  if (abi === null) fail("confinement_unavailable", "Cannot confine: Landlock is not available (kernel without it, or disabled at boot)");
  if (abi < args.abiMin) {
    fail("confinement_unavailable", `Cannot confine: Landlock ABI ${abi} is below the required ${args.abiMin}`, EXIT_REFUSED, { abi, abiMin: args.abiMin });
  }
  try {
    const rulesetFd = buildRuleset(calls, abi, args);
    if (args.cwd !== null) calls.chdir(args.cwd);
    if (args.newSession) calls.setsid();
    calls.cloexecFrom(3, () => readdirSync("/proc/self/fd").map(Number));
    // Landlock alone as root: no network at all, as in bwrap (Landlock's own rights cover TCP connect and bind only).
    calls.unshareNetwork();
    calls.noNewPrivs();
    calls.dropCapabilities();
    assertNoCapabilities();
    calls.installSeccomp(seccompFilter(process.arch));
    calls.restrictSelf(rulesetFd);
  } catch (error) {
    if (error instanceof PathMovedError) fail("root_invalid", `Cannot confine: ${error.message}`);
    fail("confinement_unavailable", `Cannot confine: ${(error as Error).message}`, EXIT_REFUSED, { abi });
  }
  try {
    calls.execve(args.argv[0]!, args.argv, args.env);
  } catch (error) {
    const errno = error instanceof SyscallError ? error.errno : 0;
    fail("exec_failed", `Cannot run "${args.argv[0]}": errno ${errno}`, errno === ENOENT ? EXIT_NOT_FOUND : EXIT_REFUSED);
  }
}

// The planner passes the arguments in the environment, off the world-readable command line.
main(() => argsFromEnv(process.env) ?? process.argv.slice(2));
