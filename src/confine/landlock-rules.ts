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
 * removed directly in a carved directory.
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
 * dropped; a grant beneath a deny path is kept (the session's scratch dir may
 * live inside the service's data dir on purpose).
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

function carve(dir: string, access: number, restrictors: string[], ctx: CarveContext): void {
  if (access & FS.READ_DIR) ctx.rules.push({ path: dir, access: FS.READ_DIR });
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
