/**
 * The confinement launcher's structured failures. Codes are stable: clients,
 * logs and tests match on them. None of them ever comes with an unconfined
 * command to run instead.
 */
import { HatchError } from "../platform/index.ts";

/**
 * Confined spawns exist on Linux only; on any other platform the spawn fails
 * closed with this error.
 *
 * @example
 * throw confinementUnsupported("darwin")
 */
export function confinementUnsupported(platform: string): HatchError {
  return new HatchError(
    "confinement_unsupported",
    500,
    `Cannot start a confined command on "${platform}": kernel-level confinement exists on Linux only`,
    { detail: { platform } },
  );
}

/**
 * Linux, but the mechanism is missing or too old (Landlock absent, disabled or
 * below the required ABI), or the helper could not apply it.
 *
 * @example
 * throw confinementUnavailable("Cannot confine: Landlock ABI 2 is below the required 3", { abi: 2 })
 */
export function confinementUnavailable(message: string, detail?: Record<string, unknown>): HatchError {
  return new HatchError("confinement_unavailable", 500, message, { detail });
}

/**
 * A root, scratch dir or working directory that cannot be confined safely:
 * missing, outside its source boundary, through a symlink leading out, inside a
 * deny path, or a system tree that must never be writable.
 *
 * @example
 * throw rootInvalid('Cannot use root "/srv/a/link": it leads outside the source', { path: "/srv/a/link" })
 */
export function rootInvalid(message: string, detail?: Record<string, unknown>): HatchError {
  return new HatchError("root_invalid", 400, message, { detail });
}
