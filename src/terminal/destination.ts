import type { ProjectCaller } from "../platform/index.ts";
import type { ConfineRequest } from "../pty/index.ts";

/** Where a new session runs, as the server derived it. */
export interface Destination {
  sourceSlug: string;
  /** Working directory, derived from the source root on the server. */
  cwd: string;
  /** True when nothing under the source is writable for the caller. */
  readOnly: boolean;
  /** Null for an unsandboxed spawn (Container Root, exec.unconfined). */
  confine: ConfineRequest | null;
  /** A fingerprint of the authority the session was created under; reattach compares it. */
  authority: string;
}

/** Resolves a source slug to a destination for a caller, re-checking everything. */
export interface DestinationResolver {
  /**
   * The destination for a new session, or a HatchError: 403 when exec is denied
   * or a plane feature is missing, 404 when the caller cannot see the source.
   */
  resolve(caller: ProjectCaller, sourceSlug: string, requestedCwd: string | undefined): Promise<Destination>;
  /** Whether a session created under `authority` may still be opened by this caller (reattach). */
  stillAllowed(caller: ProjectCaller, sourceSlug: string, authority: string): Promise<boolean>;
}

/** The synthetic slug of the Container Root tab. */
export const CONTAINER_ROOT = "container-root";

/** `os://`, `data://`, `brain://` and any other `scheme://` is a URI, not an OS path. */
export function isUriShaped(cwd: string): boolean {
  return /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(cwd);
}
