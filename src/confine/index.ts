/**
 * The confinement launcher: plans a command that runs confined by Landlock
 * (always) and bubblewrap (where it works), failing closed with a structured
 * HatchError (`confinement_unsupported`, `confinement_unavailable`,
 * `root_invalid`) instead of ever yielding an unconfined command.
 *
 * @example
 * const probe = cachedProbe();
 * const cmd = planConfinedCommand(spec, await probe(), { helper: defaultLandlockHelper() });
 * Bun.spawn(cmd.argv, { env: cmd.env, cwd: cmd.cwd, terminal: { cols: 80, rows: 24, data } });
 */
export { type BwrapLayout, bwrapArgs, DEV_SHM_BYTES, type HiddenPath } from "./bwrap-args.ts";
export { confinementUnavailable, confinementUnsupported, rootInvalid } from "./confine-errors.ts";
export { type ConfineRoot, type ConfineSpec, isSystemPath, type ResolvedSpec, resolveConfineSpec } from "./confine-spec.ts";
export {
  type ConfinedCommand,
  type ConfinementMode,
  defaultLandlockHelper,
  type HelperCommand,
  hiddenFromSandbox,
  type PlanOptions,
  planConfinedCommand,
} from "./confined-command.ts";
export { argsFromEnv, argsToEnv, formatHelperArgs, type HelperArgs, parseHelperArgs } from "./helper-args.ts";
export { dotenvFiles, HOST_SECRET_PATHS } from "./host-secrets.ts";
export { SYSTEM_CODE_PATHS, systemCodePaths } from "./system-code.ts";
export { DEFAULT_MIN_ABI, DEVICE_RIGHTS, FS, LIST_RIGHTS, READ_RIGHTS, WRITE_RIGHTS } from "./landlock-abi.ts";
export { compileRules, type PathGrant, type TreeReader } from "./landlock-rules.ts";
export { realPathOrSelf } from "./real-path.ts";
export { SECCOMP_ARCHES, seccompFilter } from "./seccomp-filter.ts";
export { cachedProbe, type ConfinementProbe, probeConfinement, type ProbeOptions } from "./probe.ts";
export { resolveWithinBoundary } from "./source-boundary.ts";
