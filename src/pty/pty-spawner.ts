import { HatchError } from "../platform/index.ts";
import { enteringCgroup, type LaunchSpec, type PtySpawner, type SpawnedPty } from "./launch-spec.ts";
import type { PtyBackend } from "./pty-process.ts";

/** Turns a launch that asks for confinement into the argv/env/cwd of the confined wrapper. */
export type ConfinePlanner = (launch: LaunchSpec) => { argv: string[]; env: Record<string, string>; cwd: string; mode: string };

/**
 * The PTY spawner sessions use: a bare spawn for launches without confinement
 * (Container Root, exec.unconfined) and the confinement planner's wrapper for
 * the rest. Without a planner a confined launch fails closed: it never falls
 * back to an unsandboxed shell.
 */
export function createPtySpawner(backend: PtyBackend, planner: ConfinePlanner | null): PtySpawner {
  return (launch, size, onData): SpawnedPty => {
    if (!launch.confine) {
      return { process: backend({ argv: enteringCgroup(launch, launch.argv), cwd: launch.cwd, env: launch.env, ...size, onData }), confinement: "none" };
    }
    if (!planner) throw new HatchError("confinement_unavailable", 500, "Cannot open a confined session: no confinement launcher is configured");
    const plan = planner(launch);
    return { process: backend({ argv: enteringCgroup(launch, plan.argv), cwd: plan.cwd, env: plan.env, ...size, onData }), confinement: plan.mode };
  };
}
