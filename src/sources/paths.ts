import { relative, isAbsolute } from "node:path";

/** Whether `path` is `dir` or lies below it (lexically; resolve symlinks first). */
export function isInside(path: string, dir: string): boolean {
  const rel = relative(dir, path);
  return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
}
