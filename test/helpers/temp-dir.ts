import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A temp dir of a test's own: its `path`, removed at the end of its `using` scope. */
export interface TempDir extends Disposable {
  readonly path: string;
}

/**
 * A fresh dir under the system temp dir, removed at the end of its `using`
 * scope: for a dir a test needs before its world starts (an OS mount, a data
 * dir), so nothing is left in /tmp even when an assertion fails.
 */
export function tempDir(name = "tmp"): TempDir {
  const path = mkdtempSync(join(tmpdir(), `hatch-${name}-`));
  return { path, [Symbol.dispose]: () => rmSync(path, { recursive: true, force: true }) };
}
