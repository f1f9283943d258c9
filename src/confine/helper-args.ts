/**
 * The command line of the Landlock helper (`landlock-exec.ts`), written by the
 * planner and read by the helper, so both sides agree on one shape:
 *
 * ```
 * landlock-exec.ts [--abi-min N] [--new-session] [--cwd DIR]
 *                  [--list PATH]... [--ro PATH]... [--rw PATH]... [--ro-noexec PATH]... [--rw-noexec PATH]...
 *                  [--dev PATH]... [--deny PATH]...
 *                  [--env NAME=VALUE]... -- PROGRAM [ARG...]
 * ```
 *
 * The program's environment travels as `--env` arguments, not as the helper's
 * own environment: Bun reads `BUN_OPTIONS` (and a `bunfig.toml` in its cwd)
 * before the helper's first line runs, so a `--preload` there would execute
 * before Landlock is in force. The helper itself runs with a fixed minimal
 * environment and cwd `/`, and hands exactly the `--env` list to `execve`.
 *
 * The planner passes these arguments in the helper's environment instead
 * (`argsToEnv`), never on a command line: any process may read another's
 * `/proc/<pid>/cmdline`, so the host's users and other sandboxes could read a
 * session's environment there (bwrap's outer process keeps its command line
 * on the host for the whole run). Reading `/proc/<pid>/environ` takes ptrace
 * rights, which Landlock denies across sandboxes. Only `HATCH_HELPER_ARG_*`
 * names are used, so nothing Bun reads at start-up can be set through them.
 */
import { normalize } from "node:path";
import { DEFAULT_MIN_ABI } from "./landlock-abi.ts";

/** Parsed helper arguments. */
export interface HelperArgs {
  /** List directory names beneath each path, nothing more. */
  list: string[];
  /** Read and execute beneath each path. */
  ro: string[];
  /** Read, execute and write beneath each path. */
  rw: string[];
  /** Read beneath each path, never execute (a nested `ro`/`rw` grant may allow it again deeper). */
  roNoExec: string[];
  /** Read and write beneath each path, never execute. */
  rwNoExec: string[];
  /** Character devices (or directories of them) to read, write and ioctl. */
  dev: string[];
  /** Paths left unreachable even below an `--ro`/`--rw` grant. */
  deny: string[];
  /** `NAME=VALUE` entries: the program's whole environment. */
  env: string[];
  /** Directory to enter before exec; null keeps the helper's. */
  cwd: string | null;
  /** Lowest Landlock ABI accepted; below it the helper refuses to run the program. */
  abiMin: number;
  /** Call setsid() so the program has no controlling terminal (non-PTY runs). */
  newSession: boolean;
  /** Absolute program path and its arguments. */
  argv: string[];
}

const LIST_FLAGS = {
  "--list": "list",
  "--ro": "ro",
  "--rw": "rw",
  "--ro-noexec": "roNoExec",
  "--rw-noexec": "rwNoExec",
  "--dev": "dev",
  "--deny": "deny",
  "--env": "env",
} as const;

/** Render arguments for the helper (everything after the script path). */
export function formatHelperArgs(args: HelperArgs): string[] {
  const out = ["--abi-min", String(args.abiMin)];
  if (args.newSession) out.push("--new-session");
  if (args.cwd !== null) out.push("--cwd", args.cwd);
  for (const [flag, key] of Object.entries(LIST_FLAGS)) for (const value of args[key]) out.push(flag, value);
  out.push("--", ...args.argv);
  return out;
}

/**
 * Parse the helper's arguments; throws an Error naming the bad argument.
 *
 * @example
 * parseHelperArgs(["--ro", "/", "--", "/bin/true"]).argv // ["/bin/true"]
 */
export function parseHelperArgs(list: string[]): HelperArgs {
  const args: HelperArgs = { list: [], ro: [], rw: [], roNoExec: [], rwNoExec: [], dev: [], deny: [], env: [], cwd: null, abiMin: DEFAULT_MIN_ABI, newSession: false, argv: [] };
  let i = 0;
  const value = (flag: string) => {
    const v = list[++i];
    if (v === undefined) throw new Error(`Missing value after "${flag}"`);
    return v;
  };
  for (; i < list.length; i++) {
    const flag = list[i]!;
    if (flag === "--") {
      args.argv = list.slice(i + 1);
      break;
    }
    if (flag === "--new-session") args.newSession = true;
    else if (flag === "--cwd") args.cwd = absolute(flag, value(flag));
    else if (flag === "--abi-min") args.abiMin = abiMin(value(flag));
    else if (flag in LIST_FLAGS) {
      const key = LIST_FLAGS[flag as keyof typeof LIST_FLAGS];
      const v = value(flag);
      if (key === "env") {
        if (v.indexOf("=") < 1) throw new Error(`Cannot use --env "${v.split("=")[0]}": expected NAME=VALUE`);
        args.env.push(v);
      } else args[key].push(absolute(flag, v));
    } else throw new Error(`Unknown argument "${flag}"`);
  }
  if (args.argv.length === 0) throw new Error('Missing "-- PROGRAM [ARG...]"');
  if (!args.argv[0]!.startsWith("/")) throw new Error(`Cannot run "${args.argv[0]}": expected an absolute program path`);
  return args;
}

function absolute(what: string, path: string): string {
  if (!path.startsWith("/") || path.includes("\0")) throw new Error(`Cannot use ${what} "${path}": expected an absolute path`);
  const clean = normalize(path);
  return clean.length > 1 && clean.endsWith("/") ? clean.slice(0, -1) : clean;
}

function abiMin(raw: string): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`Cannot use --abi-min "${raw}": expected a positive integer`);
  return n;
}

/** Names of the helper's arguments in its environment: `HATCH_HELPER_ARGC`, then `HATCH_HELPER_ARG_<i>`. */
const ARGC_NAME = "HATCH_HELPER_ARGC";
const ARG_PREFIX = "HATCH_HELPER_ARG_";

/**
 * The helper's arguments as environment entries, one per argument (each entry
 * is bounded by the kernel like one argument, so no single one grows large).
 */
export function argsToEnv(args: string[]): Record<string, string> {
  const env: Record<string, string> = { [ARGC_NAME]: String(args.length) };
  args.forEach((arg, i) => (env[`${ARG_PREFIX}${i}`] = arg));
  return env;
}

/** The arguments `argsToEnv` put in `env`, or null when it holds none; throws on a broken set. */
export function argsFromEnv(env: Record<string, string | undefined>): string[] | null {
  const count = env[ARGC_NAME];
  if (count === undefined) return null;
  const n = Number(count);
  if (!Number.isInteger(n) || n < 0) throw new Error(`Cannot read ${ARGC_NAME}="${count}": expected a count`);
  return Array.from({ length: n }, (_, i) => {
    const arg = env[`${ARG_PREFIX}${i}`];
    if (arg === undefined) throw new Error(`Missing ${ARG_PREFIX}${i}`);
    return arg;
  });
}
