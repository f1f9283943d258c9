/**
 * What a confined command may touch, and the checks that turn a caller's
 * spec into real, validated paths before anything is spawned.
 */
import { lstatSync, realpathSync } from "node:fs";
import { isAbsolute, normalize } from "node:path";
import { rootInvalid } from "./confine-errors.ts";
import { coverBetween } from "./cover-between.ts";
import { isStrictlyWithin, isWithin } from "./landlock-rules.ts";
import { resolveWithinBoundary } from "./source-boundary.ts";

/** One directory (or file) the command may read, and write when `write` is set. */
export interface ConfineRoot {
  path: string;
  write: boolean;
  /** False: nothing at or below it may be executed, though it stays readable (default true). */
  exec?: boolean;
}

/** A request to run one command confined. */
export interface ConfineSpec {
  /** Each must exist; realpath'd here. Paths below a root may have their own entries (path-by-path confinement). */
  roots: ConfineRoot[];
  /** The session's private 0700 directory; always writable; TMPDIR etc. already point at it in `env`. */
  scratch: string;
  /** Never readable in any mode, and no root may lie inside one: the service's data dir, the key file. */
  deny: string[];
  /**
   * Paths the caller's own policy denies reading. Unreadable like `deny`, but
   * a root strictly below one (a deeper rule allowing it again) shows through,
   * since the policy's most specific path decides. Never the service's or the
   * host's secrets: those go in `deny` (or the planner's host secrets).
   */
  policyDeny?: string[];
  /** Working directory; must lie inside a root or the scratch dir. */
  cwd: string;
  /** Program and arguments; the program path is absolute. */
  argv: string[];
  /** Already clean: exactly this environment reaches the program. */
  env: Record<string, string>;
  /** When set, a root that resolves outside it, or passes through a symlink leading out of it, is refused. */
  sourceBoundary?: string;
}

/** A spec whose paths are real and checked. */
export interface ResolvedSpec {
  /** Sorted parents first, so deeper entries can override (mount order). */
  roots: Required<ConfineRoot>[];
  scratch: string;
  deny: string[];
  policyDeny: string[];
  cwd: string;
  argv: string[];
  env: Record<string, string>;
}

/** Kernel interfaces and devices: nothing at or below them is ever a writable root. */
const KERNEL_TREES = ["/proc", "/sys", "/dev"];
/**
 * Shared temp and runtime dirs (other users' sockets and files) and the system
 * itself: a writable root may live below them (a private dir under /tmp) but
 * never be one of them or contain one.
 */
const SYSTEM_DIRS = ["/tmp", "/var/tmp", "/run", "/var/run", "/var", "/etc", "/usr", "/boot", "/bin", "/sbin", "/lib", "/lib64", "/home", "/root"];

/** True when making `path` writable would expose a kernel tree, a shared dir or the system. */
export function isSystemPath(path: string): boolean {
  if (path === "/") return true;
  if (KERNEL_TREES.some((k) => isWithin(path, k) || isStrictlyWithin(k, path))) return true;
  return SYSTEM_DIRS.some((d) => isWithin(d, path));
}
/** Any permission bit for group or others on the scratch dir would let another user in. */
const SCRATCH_FOREIGN_BITS = 0o077;

/**
 * Validate `spec` and return its real paths; throws `root_invalid` (400).
 * `hidden` names further paths the sandbox covers (the planner's host
 * secrets), which no root reached through a symlink may land in.
 *
 * @example
 * resolveConfineSpec({ roots: [{ path: "/srv/app", write: true }], scratch, deny: [], cwd: "/srv/app", argv: ["/bin/bash"], env })
 */
export function resolveConfineSpec(spec: ConfineSpec, hidden: readonly string[] = []): ResolvedSpec {
  if (spec.argv.length === 0 || !isAbsolute(spec.argv[0]!)) {
    throw rootInvalid(`Cannot run "${spec.argv[0] ?? ""}": expected an absolute program path`, { field: "argv" });
  }
  for (const [name, value] of Object.entries(spec.env)) {
    if (name === "" || name.includes("=") || name.includes("\0") || value.includes("\0")) {
      throw rootInvalid(`Cannot pass environment variable "${name.replaceAll("\0", "")}": invalid name or value`, { field: "env" });
    }
  }
  const deny = spec.deny.map((d) => realOrNormal(d));
  const policyDeny = (spec.policyDeny ?? []).map((d) => realOrNormal(d));
  const scratch = resolveScratch(spec.scratch);
  const roots = resolveRoots(spec, deny, policyDeny, hidden);
  const cwd = real(spec.cwd, "working directory");
  if (isWithin(cwd, scratch)) return { roots, scratch, deny, policyDeny, cwd, argv: [...spec.argv], env: { ...spec.env } };
  const around = roots.filter((r) => isWithin(cwd, r.path));
  if (around.length === 0) {
    throw rootInvalid(`Cannot use working directory "${spec.cwd}": it lies outside every root`, { field: "cwd" });
  }
  // Below a policy deny only a root re-opened deeper than it (and reaching the cwd uncovered) makes the cwd usable.
  if (deny.some((d) => isWithin(cwd, d)) || around.every((r) => coverBetween(r.path, cwd, policyDeny) !== undefined)) {
    throw rootInvalid(`Cannot use working directory "${spec.cwd}": it lies inside a denied path`, { field: "cwd" });
  }
  return { roots, scratch, deny, policyDeny, cwd, argv: [...spec.argv], env: { ...spec.env } };
}

function resolveRoots(spec: ConfineSpec, deny: string[], policyDeny: string[], hidden: readonly string[]): Required<ConfineRoot>[] {
  const byPath = new Map<string, Required<ConfineRoot>>();
  // Roots reached through a symlink below the boundary, checked against those reached directly once all are known.
  const linked: { asked: string; root: Required<ConfineRoot> }[] = [];
  const direct = new Set<string>();
  for (const root of spec.roots) {
    if (!isAbsolute(root.path)) throw rootInvalid(`Cannot use root "${root.path}": expected an absolute path`, { path: root.path });
    const path = spec.sourceBoundary === undefined ? real(root.path, "root") : resolveWithinBoundary(spec.sourceBoundary, root.path);
    if (spec.sourceBoundary === undefined || path === trimmed(root.path)) direct.add(path);
    else linked.push({ asked: root.path, root: { path, write: root.write, exec: root.exec ?? true } });
    // The service's own deny paths are never re-opened. The caller's policy may re-open below its own
    // deny (a more specific path decides), but at the same path the deny wins, as in the policy.
    if (deny.some((d) => isWithin(path, d)) || policyDeny.includes(path)) {
      throw rootInvalid(`Cannot use root "${root.path}": it lies inside a denied path`, { path: root.path });
    }
    if (root.write && isSystemPath(path)) {
      throw rootInvalid(`Cannot make root "${root.path}" writable: it is or contains a system directory`, { path: root.path });
    }
    const previous = byPath.get(path);
    const exec = root.exec ?? true;
    if (previous !== undefined && previous.write !== root.write) {
      throw rootInvalid(`Cannot use root "${root.path}": it has both a read-only and a writable rule`, { path: root.path });
    }
    if (previous !== undefined && previous.exec !== exec) {
      throw rootInvalid(`Cannot use root "${root.path}": it both allows and denies running programs`, { path: root.path });
    }
    byPath.set(path, { path, write: root.write, exec });
  }
  const directRoots = [...byPath.values()].filter((root) => direct.has(root.path));
  for (const { asked, root } of linked) {
    const problem = linkedRootProblem(root, directRoots, [...deny, ...policyDeny, ...hidden]);
    if (problem !== null) throw rootInvalid(`Cannot use root "${asked}": it leads through a symlink to "${root.path}", ${problem}`, { path: asked });
  }
  return [...byPath.values()].sort((a, b) => pathDepth(a.path) - pathDepth(b.path) || a.path.localeCompare(b.path));
}

/**
 * Why a root reached through a symlink below the source boundary may not be
 * used there, or null. Its rule was written for the path it was asked by, and
 * anyone who can write the directory holding the link (a member, in another
 * tab) chooses where it points: into a path the policy denies, below a
 * read-only one, or onto a host secret. So it must grant nothing beyond the
 * rule in force where it lands: that of the deepest root reached directly, or
 * of a cover (deny path, host secret) deeper still, which grants nothing.
 * A source tab's spec always has its source root as such a root.
 */
function linkedRootProblem(root: Required<ConfineRoot>, direct: Required<ConfineRoot>[], covers: readonly string[]): string | null {
  const cover = covers.filter((c) => isWithin(root.path, c)).sort((a, b) => b.length - a.length)[0];
  const inForce = direct.filter((r) => isWithin(root.path, r.path)).sort((a, b) => b.path.length - a.path.length)[0];
  // At one path a cover wins, as a deny does in the policy.
  if (cover !== undefined && (inForce === undefined || cover.length >= inForce.path.length)) return "which lies inside a denied path";
  // No rule asked for directly around it (a spec naming only this root): its own rule is the only one there.
  if (inForce === undefined) return null;
  if (root.write && !inForce.write) return "where writing is not allowed";
  if (root.exec && !inForce.exec) return "where running programs is not allowed";
  return null;
}

/** An absolute path without `.`, `..`, repeated or trailing slashes. */
function trimmed(path: string): string {
  const clean = normalize(path);
  return clean.length > 1 && clean.endsWith("/") ? clean.slice(0, -1) : clean;
}

function resolveScratch(path: string): string {
  if (!isAbsolute(path)) throw rootInvalid(`Cannot use scratch dir "${path}": expected an absolute path`, { field: "scratch" });
  const resolved = real(path, "scratch dir");
  const st = lstatSync(resolved);
  if (!st.isDirectory() || (st.mode & SCRATCH_FOREIGN_BITS) !== 0) {
    throw rootInvalid(`Cannot use scratch dir "${path}": expected a directory with mode 0700`, { field: "scratch" });
  }
  if (isSystemPath(resolved)) {
    throw rootInvalid(`Cannot use scratch dir "${path}": it is a system directory`, { field: "scratch" });
  }
  return resolved;
}

/** How many names deep an absolute path is ("/" is 0): roots are mounted shallowest first. */
export const pathDepth = (path: string) => (path === "/" ? 0 : path.split("/").length - 1);

function real(path: string, what: string): string {
  try {
    return realpathSync(path);
  } catch {
    throw rootInvalid(`Cannot use ${what} "${path}": it does not exist`, { path });
  }
}

/** A deny path that does not exist yet still blocks its place. */
function realOrNormal(path: string): string {
  if (!isAbsolute(path)) throw rootInvalid(`Cannot deny "${path}": expected an absolute path`, { path });
  try {
    return realpathSync(path);
  } catch {
    const clean = normalize(path);
    return clean.length > 1 && clean.endsWith("/") ? clean.slice(0, -1) : clean;
  }
}
