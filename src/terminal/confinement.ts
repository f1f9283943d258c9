import { DEFAULT_MIN_ABI, defaultLandlockHelper, planConfinedCommand, type ConfinementProbe } from "../confine/index.ts";
import type { ConfinePlanner, LaunchSpec } from "../pty/index.ts";

/** The confinement source tabs, exec and the command runner get on this host. */
export interface Confinement {
  /** `landlock` or `landlock+bwrap`, or null with the reason nothing works here. */
  status(): { mode: string | null; reason?: string };
  /** Plans the confined wrapper for an interactive PTY (job control kept). */
  pty: ConfinePlanner;
  /** Plans the confined wrapper for a non-interactive command (own session, no tty to steal). */
  command: ConfinePlanner;
}

/** Options of `createConfinement`. */
export interface ConfinementOptions {
  probe: ConfinementProbe;
  /** Layer bubblewrap when it works (HATCH_CONFINEMENT=landlock turns it off). */
  preferBwrap: boolean;
  /** Paths no confined program may write: the service's own install. */
  neverWritable: readonly string[];
}

/**
 * Bind the launcher to this host's probe. Every plan re-validates its roots
 * (realpath, existence, boundary) and throws a HatchError rather than ever
 * returning an unconfined command.
 */
export function createConfinement(options: ConfinementOptions): Confinement {
  const { probe, preferBwrap, neverWritable } = options;
  const plan = (newSession: boolean): ConfinePlanner => (launch: LaunchSpec) =>
    planConfinedCommand(
      {
        roots: launch.confine!.roots,
        deny: launch.confine!.deny,
        policyDeny: launch.confine!.policyDeny,
        sourceBoundary: launch.confine!.boundary,
        scratch: launch.scratch,
        cwd: launch.cwd,
        argv: launch.argv,
        env: launch.env,
      },
      probe,
      { helper: defaultLandlockHelper(), preferBwrap, newSession, neverWritable },
    );
  return {
    status: () => {
      if (probe.platform !== "linux") return { mode: null, reason: `confined terminals exist on Linux only, not on ${probe.platform}` };
      if (probe.landlockAbi === null) return { mode: null, reason: "Landlock is not available in this kernel" };
      if (probe.landlockAbi < DEFAULT_MIN_ABI) return { mode: null, reason: `Landlock ABI ${probe.landlockAbi} is older than ${DEFAULT_MIN_ABI}` };
      return { mode: preferBwrap && probe.bwrapPath ? "landlock+bwrap" : "landlock" };
    },
    pty: plan(false),
    command: plan(true),
  };
}
