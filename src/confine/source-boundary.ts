/**
 * Resolve a root path one component at a time and refuse it when any symlink
 * on the way leads outside the source boundary, even if a later link would
 * lead back in: what a link points at can change between the check and the
 * spawn, so a path is only trusted when every hop stays inside.
 */
import { lstatSync, readlinkSync, realpathSync } from "node:fs";
import { dirname, isAbsolute, normalize, relative } from "node:path";
import { rootInvalid } from "./confine-errors.ts";
import { isWithin } from "./landlock-rules.ts";

/** The kernel's own limit (MAXSYMLINKS): more hops than this is a loop. */
const MAX_SYMLINK_HOPS = 40;

const join = (dir: string, name: string) => (dir === "/" ? `/${name}` : `${dir}/${name}`);
const parts = (path: string) => path.split("/").filter((p) => p !== "" && p !== ".");

/**
 * The real path of `path`, which must lie inside `boundary` after every hop;
 * throws `root_invalid` otherwise (also when it does not exist, or when the
 * boundary itself is no longer its own real path).
 *
 * `path` may be written under the boundary as given or under its real path.
 *
 * @example
 * resolveWithinBoundary("/srv/src", "/srv/src/app") // "/srv/src/app"
 * resolveWithinBoundary("/srv/src", "/srv/src/link-to-etc") // throws root_invalid
 */
export function resolveWithinBoundary(boundary: string, path: string): string {
  const base = realOrRefuse(boundary, "source boundary");
  // The boundary is a source's root, checked to be its own real path when the session was asked for; a symlink in
  // its place now was put there since, by someone who can write its parent, to aim the sandbox elsewhere.
  if (base !== normalize(boundary).replace(/(.)\/$/, "$1")) {
    throw rootInvalid(`Cannot use the source "${boundary}": it is reached through a symlink now`, { path: boundary });
  }
  const given = isWithin(path, boundary) ? relative(boundary, path) : isWithin(path, base) ? relative(base, path) : null;
  if (!isAbsolute(path) || given === null) throw outside(path, boundary);

  const pending = parts(given);
  let current = base;
  let hops = 0;
  while (pending.length > 0) {
    const name = pending.shift()!;
    if (name === "..") {
      current = dirname(current);
      if (!isWithin(current, base)) throw outside(path, boundary);
      continue;
    }
    const next = join(current, name);
    let isLink: boolean;
    try {
      isLink = lstatSync(next).isSymbolicLink();
    } catch {
      throw rootInvalid(`Cannot use root "${path}": it does not exist`, { path });
    }
    if (!isLink) {
      current = next;
      continue;
    }
    if (++hops > MAX_SYMLINK_HOPS) throw rootInvalid(`Cannot use root "${path}": too many symlinks`, { path });
    const target = readlinkSync(next);
    const lexical = isAbsolute(target) ? target : join(current, target);
    // Lexical check first (the link itself), then restart below the boundary with what is left.
    const rest = relative(base, lexical);
    if (rest.startsWith("..") || isAbsolute(rest)) throw outside(path, boundary, next);
    pending.unshift(...parts(rest));
    current = base;
  }
  const real = realOrRefuse(current, "root");
  if (!isWithin(real, base)) throw outside(path, boundary);
  return real;
}

function realOrRefuse(path: string, what: string): string {
  try {
    return realpathSync(path);
  } catch {
    throw rootInvalid(`Cannot use ${what} "${path}": it does not exist`, { path });
  }
}

function outside(path: string, boundary: string, link?: string) {
  const via = link ? ` through the symlink "${link}"` : "";
  return rootInvalid(`Cannot use root "${path}": it leads outside the source "${boundary}"${via}`, { path, boundary });
}
