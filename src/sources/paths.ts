import { relative, isAbsolute, sep } from "node:path";

/** Whether `path` is `dir` or lies below it (lexically; resolve symlinks first). */
export function isInside(path: string, dir: string): boolean {
  const rel = relative(dir, path);
  // ".." alone or as the first segment climbs out; "..cache" is a name inside.
  return rel === "" || (rel !== ".." && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}
