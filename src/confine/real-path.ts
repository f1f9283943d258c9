import { realpathSync } from "node:fs";

/**
 * The real path, or the path as given when it cannot be resolved (it does not
 * exist yet): a deny path that does not exist still blocks its place.
 */
export function realPathOrSelf(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}
