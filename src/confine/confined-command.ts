/**
 * The planner: from a confinement spec and what the host offers, the exact
 * command to spawn (bwrap → Landlock helper → program, or helper → program).
 * It never returns an unconfined command: every failure throws a HatchError.
 */
import { lstatSync, realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { type BwrapLayout, bwrapArgs, type HiddenPath } from "./bwrap-args.ts";
import { confinementUnavailable, confinementUnsupported, rootInvalid } from "./confine-errors.ts";
import { type ConfineRoot, type ConfineSpec, pathDepth, type ResolvedSpec, resolveConfineSpec } from "./confine-spec.ts";
import { coverBetween } from "./cover-between.ts";
import { argsToEnv, formatHelperArgs, type HelperArgs } from "./helper-args.ts";
import { HOST_SECRET_PATHS } from "./host-secrets.ts";
import { DEFAULT_MIN_ABI } from "./landlock-abi.ts";
import { isStrictlyWithin, isWithin } from "./landlock-rules.ts";
import type { ConfinementProbe } from "./probe.ts";
import { systemCodePaths } from "./system-code.ts";

/** Which layers confine the command. */
export type ConfinementMode = "landlock" | "landlock+bwrap";

/** How to run the Landlock helper: a Bun binary and the `landlock-exec.ts` script. */
export interface HelperCommand {
  bun: string;
  script: string;
}

/** Planner options. */
export interface PlanOptions {
  helper: HelperCommand;
  /** Layer bwrap when it works here (default true); false runs Landlock alone. */
  preferBwrap?: boolean;
  /** setsid() before exec: for non-PTY runs; off for interactive PTYs, which need job control. */
  newSession?: boolean;
  /** Lowest Landlock ABI accepted (default 3). */
  minLandlockAbi?: number;
  /** Host paths hidden unless a root lies below them (default `HOST_SECRET_PATHS`). */
  hostSecrets?: readonly string[];
  /**
   * Host paths the program must never write, such as the service's own code
   * (a tab that could edit it would run as the service at its next start).
   * The helper's Bun and script are always among them: planted code there
   * would run before Landlock. Carved read-only out of a writable root that
   * contains one; a writable root inside one is refused (`root_invalid`).
   */
  neverWritable?: readonly string[];
  /** Host paths where any write is code root runs later, treated as never writable (default `systemCodePaths()`). */
  systemCode?: readonly string[];
}

/** What to spawn. Pass `env` exactly (never merge in the server's) and only fds 0, 1, 2. */
export interface ConfinedCommand {
  argv: string[];
  env: Record<string, string>;
  cwd: string;
  mode: ConfinementMode;
}

/**
 * The outer process's environment, before the helper's arguments are added
 * to it (`argsToEnv`): empty. The program's environment is one of those
 * arguments, so nothing a spawner merges in (bun-pty adds the server's own
 * environment) can reach the program, and Bun never sees a `BUN_OPTIONS` from
 * the spec before Landlock is on.
 */
const OUTER_ENV: Record<string, string> = {};
/** Shared dirs full of other processes' sockets and files, hidden by an empty tmpfs in bwrap. */
const SHARED_DIRS = ["/tmp", "/var/tmp", "/run", "/var/run"];
/**
 * What a sandbox of `mode` hides from a tab by default, whatever its policy:
 * the host secrets, and under bwrap the shared dirs too. A root below one of
 * them still shows through.
 *
 * @example
 * hiddenFromSandbox("landlock") // ["/root", "/etc/shadow", ..., "/var/log", ...]
 */
export function hiddenFromSandbox(mode: string): string[] {
  return [...HOST_SECRET_PATHS, ...(mode === "landlock+bwrap" ? SHARED_DIRS : [])];
}

/** Devices every shell uses; the terminal on fds 0-2 is added by the helper itself. */
const STANDARD_DEVICES = ["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"];
/**
 * Inside bwrap, /dev is bwrap's own minimal tree: /dev/console is the session's
 * terminal (what `tty` prints), /dev/pts a private devpts (new PTYs for tmux or
 * script stay inside), /dev/shm a private dir. On the host these are shared
 * with other sessions, so Landlock alone grants none of them.
 */
const BWRAP_DEVICES = ["/dev/console", "/dev/pts"];
/** Bun's flags for the helper: ignore any bunfig.toml and .env file (they could preload code before Landlock). */
const BUN_HELPER_FLAGS = ["--config=/dev/null", "--no-env-file"];

/**
 * The helper shipped beside this module, run by the current Bun.
 *
 * @example
 * planConfinedCommand(spec, probe, { helper: defaultLandlockHelper() })
 */
export function defaultLandlockHelper(bun: string = process.execPath): HelperCommand {
  return { bun, script: fileURLToPath(new URL("./landlock-exec.ts", import.meta.url)) };
}

/**
 * Plan the confined spawn; throws `confinement_unsupported` off Linux,
 * `confinement_unavailable` without a usable Landlock, `root_invalid` for a bad spec.
 *
 * @example
 * const cmd = planConfinedCommand(spec, await probe(), { helper: defaultLandlockHelper() });
 * Bun.spawn(cmd.argv, { env: cmd.env, cwd: cmd.cwd, terminal: { cols, rows, data } });
 */
export function planConfinedCommand(spec: ConfineSpec, probe: ConfinementProbe, options: PlanOptions): ConfinedCommand {
  if (probe.platform !== "linux") throw confinementUnsupported(probe.platform);
  const abiMin = options.minLandlockAbi ?? DEFAULT_MIN_ABI;
  if (probe.landlockAbi === null) {
    throw confinementUnavailable("Cannot confine: Landlock is not available on this kernel (absent or disabled at boot)");
  }
  if (probe.landlockAbi < abiMin) {
    throw confinementUnavailable(`Cannot confine: Landlock ABI ${probe.landlockAbi} is below the required ${abiMin}`, {
      abi: probe.landlockAbi,
      abiMin,
    });
  }
  const secrets = existing(options.hostSecrets ?? HOST_SECRET_PATHS);
  const neverWritable = [options.helper.bun, dirOf(options.helper.script), ...(options.neverWritable ?? []), ...(options.systemCode ?? systemCodePaths())];
  const resolved = keepReadOnly(resolveConfineSpec(spec, secrets.map((s) => s.path)), neverWritable, secrets);
  const bwrap = options.preferBwrap !== false ? probe.bwrapPath : null;
  const newSession = options.newSession ?? false;
  const helper = [options.helper.bun, ...BUN_HELPER_FLAGS, options.helper.script];
  const helperArgs = landlockArgs(resolved, secrets, abiMin, newSession, bwrap !== null);
  if (bwrap === null) {
    return { argv: helper, env: { ...OUTER_ENV, ...argsToEnv(formatHelperArgs(helperArgs)) }, cwd: "/", mode: "landlock" };
  }
  const layout = bwrapLayout(resolved, secrets, options.helper, newSession);
  // bwrap's own process stays on the host for the whole run, its command line readable by any
  // host user; it hands its environment on to the helper, so the arguments travel there too.
  return {
    argv: [bwrap, ...bwrapArgs(layout), ...helper],
    env: { ...OUTER_ENV, ...argsToEnv(formatHelperArgs(helperArgs)) },
    cwd: "/",
    mode: "landlock+bwrap",
  };
}

function landlockArgs(spec: ResolvedSpec, secrets: HiddenPath[], abiMin: number, newSession: boolean, inBwrap: boolean): HelperArgs {
  const writable = spec.roots.filter((r) => r.write);
  const covers = coversOf(spec, secrets);
  // Alone, Landlock must carve read-only sub-rules out of writable roots itself. Inside bwrap the
  // read-only bind mount already does (EROFS), so the writable root's own top level stays usable.
  // That holds only where the writable root's rule reaches the sub-root: below a deny path or host
  // secret the rule is carved away, and the read-only root needs a rule of its own to be readable.
  // bwrap has no per-mount noexec, so a root that denies running programs always goes to Landlock.
  const inheritsWrite = (r: Required<ConfineRoot>) => writable.some((w) => isStrictlyWithin(r.path, w.path) && coverBetween(w.path, r.path, covers) === undefined);
  const readOnly = spec.roots.filter((r) => !r.write).filter((r) => !r.exec || !inBwrap || !inheritsWrite(r));
  const paths = (roots: Required<ConfineRoot>[], exec: boolean) => roots.filter((r) => r.exec === exec).map((r) => r.path);
  return {
    // /dev lists names only: device nodes open by explicit grant (uid 0 owns the raw disks).
    list: ["/dev"],
    ro: ["/", ...paths(readOnly, true).filter((p) => p !== "/")],
    rw: [...paths(writable, true), spec.scratch, ...(inBwrap ? ["/dev/shm"] : [])],
    roNoExec: paths(readOnly, false),
    rwNoExec: paths(writable, false),
    dev: [...STANDARD_DEVICES, ...(inBwrap ? BWRAP_DEVICES : [])],
    // Landlock needs no difference between the kinds: a grant below a deny path keeps its own rule.
    deny: coversOf(spec, secrets),
    env: Object.entries(spec.env).map(([name, value]) => `${name}=${value}`),
    cwd: spec.cwd,
    abiMin,
    newSession,
    argv: spec.argv,
  };
}

function bwrapLayout(spec: ResolvedSpec, secrets: HiddenPath[], helper: HelperCommand, newSession: boolean): BwrapLayout {
  const hide = SHARED_DIRS.filter((dir) => kindOf(dir) === "dir");
  // The helper must stay reachable even if Bun or the script lives under a hidden dir.
  const hidden = [...hide, ...secrets.map((s) => s.path), ...spec.policyDeny];
  const expose = [helper.bun, dirOf(helper.script)].filter((p) => hidden.some((h) => isWithin(p, h)));
  const roots = pinReadOnlyParents(spec.roots, coversOf(spec, secrets));
  return { hide, conceal: secrets, expose, roots, policyDeny: existing(spec.policyDeny), deny: existing(spec.deny), scratch: spec.scratch, newSession };
}

/** Every path the sandbox hides that a root below may show through or be cut off by: deny paths of both kinds, host secrets. */
function coversOf(spec: ResolvedSpec, secrets: HiddenPath[]): string[] {
  return [...spec.deny, ...spec.policyDeny, ...secrets.map((s) => s.path)];
}

/**
 * The spec with each never-writable path that lies in a writable root added as
 * a read-only root of its own (the compiler and bwrap then carve it out, as
 * any read-only rule below a writable one). A writable root at or inside such
 * a path cannot be carved that way and is refused. One behind a cover (a deny
 * path or host secret below the writable root) is out of reach already, and a
 * root there would show it through the cover.
 */
function keepReadOnly(spec: ResolvedSpec, neverWritable: readonly string[], secrets: HiddenPath[]): ResolvedSpec {
  const roots = [...spec.roots];
  const covers = coversOf(spec, secrets);
  const reachedBy = (path: string, root: Required<ConfineRoot>) => isStrictlyWithin(path, root.path) && coverBetween(root.path, path, covers) === undefined;
  for (const { path } of existing(neverWritable)) {
    const inside = roots.find((r) => r.write && isWithin(r.path, path));
    if (inside) throw rootInvalid(`Cannot make root "${inside.path}" writable: it lies inside "${path}", which confined programs must never write`, { path: inside.path });
    if (roots.some((r) => r.write && reachedBy(path, r)) && !roots.some((r) => r.path === path)) roots.push({ path, write: false, exec: true });
  }
  roots.sort((a, b) => pathDepth(a.path) - pathDepth(b.path) || a.path.localeCompare(b.path));
  return { ...spec, roots };
}

/**
 * Inside bwrap a read-only sub-root of a writable root is a read-only bind
 * mount, and Landlock leaves the writable root whole (so its top level stays
 * usable). A mount point itself cannot be renamed, but the directories above
 * it can: `mv lib lib.moved; mkdir -p lib/vendor` would put a writable
 * directory where the read-only rule stands. So every directory between the
 * writable root and the read-only sub-root is bound onto itself as well,
 * making each a mount point that cannot be renamed or removed (EBUSY).
 *
 * The pins stop at a cover (a deny path or host secret) on the way: below it
 * lies bwrap's empty tmpfs, not the host's directories, and binding one of
 * those onto itself would show the host's copy through the cover.
 */
function pinReadOnlyParents(roots: ResolvedSpec["roots"], covers: readonly string[]): ResolvedSpec["roots"] {
  const pinned = new Map(roots.map((root) => [root.path, root]));
  for (const readOnly of roots.filter((r) => !r.write)) {
    // The innermost root around it decides: inside a read-only one nothing can be renamed anyway.
    const around = roots.filter((r) => isStrictlyWithin(readOnly.path, r.path));
    const base = around.reduce<ResolvedSpec["roots"][number] | null>((a, b) => (a === null || b.path.length > a.path.length ? b : a), null);
    if (!base?.write) continue;
    const below = coverBetween(base.path, readOnly.path, covers) ?? readOnly.path;
    for (let dir = dirOf(below); isStrictlyWithin(dir, base.path); dir = dirOf(dir)) {
      if (!pinned.has(dir)) pinned.set(dir, { path: dir, write: true, exec: true });
    }
  }
  return [...pinned.values()].sort((a, b) => pathDepth(a.path) - pathDepth(b.path) || a.path.localeCompare(b.path));
}


/** The paths that exist, real, with their kind (only those can be covered by a mount). */
function existing(paths: readonly string[]): HiddenPath[] {
  const out: HiddenPath[] = [];
  for (const path of paths) {
    let real: string;
    try {
      real = realpathSync(path);
    } catch {
      continue;
    }
    const kind = kindOf(real);
    if (kind !== "other") out.push({ path: real, kind });
  }
  return out;
}

function kindOf(path: string): "dir" | "file" | "other" {
  try {
    const st = lstatSync(path);
    return st.isSymbolicLink() ? "other" : st.isDirectory() ? "dir" : "file";
  } catch {
    return "other";
  }
}

const dirOf = (path: string) => path.slice(0, path.lastIndexOf("/")) || "/";
