/**
 * Turns "grant these rights beneath these paths, but never these deny paths"
 * into the flat list of PATH_BENEATH rules Landlock understands.
 *
 * Landlock rules only add: a right granted on a directory holds for everything
 * beneath it. So a grant that has a deny path (or a more restrictive grant)
 * somewhere below it is "carved": instead of one rule on the grant's path, the
 * directories on the way down get READ_DIR only (so `ls /` still works) and
 * every other entry along the way gets the full grant. What stays unreachable
 * is exactly the carved-out path. Two costs, both fail closed: entries created
 * later in a carved directory are not readable, and nothing can be created or
 * removed directly in a carved directory. Where everything carved out is a
 * narrower grant on a directory, the carved directories keep the rights those
 * grants share (`inheritable`), which softens both.
 */
import { FILE_RIGHTS, FS } from "./landlock-abi.ts";

/** Rights granted beneath one path. */
export interface PathGrant {
  path: string;
  access: number;
}

/** What the compiler needs to know about the filesystem (injected for tests). */
export interface TreeReader {
  /** Names in a directory; [] when it cannot be read. */
  list(dir: string): string[];
  /** The entry's own type, without following a final symlink. */
  kind(path: string): "dir" | "file" | "symlink" | "missing";
}

/** True when `path` is `ancestor` or lies beneath it (both absolute and normalized). */
export function isWithin(path: string, ancestor: string): boolean {
  if (ancestor === "/") return path.startsWith("/");
  return path === ancestor || path.startsWith(`${ancestor}/`);
}

/** True when `path` lies strictly beneath `ancestor`. */
export function isStrictlyWithin(path: string, ancestor: string): boolean {
  return path !== ancestor && isWithin(path, ancestor);
}

const join = (dir: string, name: string) => (dir === "/" ? `/${name}` : `${dir}/${name}`);

/**
 * Compile grants and deny paths into concrete rules.
 *
 * The most specific grant wins for a path. A grant equal to a deny path is
 * dropped; a grant beneath a deny path is kept as a rule of its own (the
 * session's scratch dir may live inside the service's data dir on purpose, and
 * a caller's policy may allow a path again below one it denies). Nothing is
 * granted on the deny path itself or its other entries, and Landlock does not
 * check the directories a lookup passes through, so the grant is reached there.
 *
 * @example
 * compileRules([{ path: "/", access: READ_RIGHTS }], ["/srv/hatch/data"], reader)
 * // → READ_DIR on "/", "/srv", "/srv/hatch"; READ_RIGHTS on every sibling entry
 */
export function compileRules(grants: PathGrant[], deny: string[], tree: TreeReader): PathGrant[] {
  const merged = new Map<string, number>();
  for (const g of grants) merged.set(g.path, (merged.get(g.path) ?? 0) | g.access);
  const denied = new Set(deny);
  const rules: PathGrant[] = [];

  for (const [path, access] of merged) {
    if (denied.has(path)) continue;
    const restrictors = [
      ...deny.filter((d) => isStrictlyWithin(d, path)),
      ...[...merged].filter(([p, a]) => isStrictlyWithin(p, path) && restricts(access, a, tree.kind(p))).map(([p]) => p),
    ];
    if (restrictors.length === 0) rules.push({ path, access });
    else carve(path, access, restrictors, { merged, denied, tree, rules });
  }
  return rules;
}

/** A nested grant narrows its parent when it lacks a right that could apply to it (files never take dir rights). */
function restricts(parent: number, nested: number, kind: ReturnType<TreeReader["kind"]>): boolean {
  const missing = parent & ~nested;
  return (kind === "dir" ? missing : missing & FILE_RIGHTS) !== 0;
}

interface CarveContext {
  merged: Map<string, number>;
  denied: Set<string>;
  tree: TreeReader;
  rules: PathGrant[];
}

/**
 * Rights a carved directory may hold itself, so they reach everything below
 * it: those every restrictor beneath it holds too, when every restrictor is a
 * narrower grant on a directory. A writable root with a no-exec `uploads/`
 * keeps creating and removing at its top level (minus execute), and a
 * read-only sub-dir leaves the level above it readable. A deny path or a
 * narrowed file keeps the directory list-only: create and remove rights there
 * would let the file be deleted, or replaced by one carrying the directory's rights.
 */
function inheritable(access: number, restrictors: string[], ctx: CarveContext): number {
  let rights = access;
  for (const path of restrictors) {
    const nested = ctx.merged.get(path);
    if (nested === undefined || ctx.denied.has(path) || ctx.tree.kind(path) !== "dir") return 0;
    rights &= nested;
  }
  return rights;
}

function carve(dir: string, access: number, restrictors: string[], ctx: CarveContext): void {
  const onDir = (access & FS.READ_DIR) | inheritable(access, restrictors, ctx);
  if (onDir !== 0) ctx.rules.push({ path: dir, access: onDir });
  for (const name of ctx.tree.list(dir)) {
    const child = join(dir, name);
    // Deny paths stay bare; a path with its own grant emits its own rules.
    if (ctx.denied.has(child) || ctx.merged.has(child)) continue;
    const kind = ctx.tree.kind(child);
    // A symlink is reached through its target's rules; granting through it could open a deny path.
    if (kind === "symlink" || kind === "missing") continue;
    const below = restrictors.filter((r) => isStrictlyWithin(r, child));
    if (kind === "dir" && below.length > 0) carve(child, access, below, ctx);
    else ctx.rules.push({ path: child, access });
  }
}
