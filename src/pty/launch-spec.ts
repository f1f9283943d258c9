import type { CgroupLeaf } from "./process-cgroups.ts";

/**
 * Where and how a session's programs run. The terminal edge derives it from the
 * source on the server; the spawner turns it into a (possibly confined) process.
 */
export interface LaunchSpec {
  /** Source slug, or `container-root`. */
  sourceSlug: string;
  /** Working directory, derived from the source root on the server. */
  cwd: string;
  /** The shell and its arguments. */
  argv: string[];
  /** Already sanitised environment (sensitive names stripped, TMPDIR etc. at scratch). */
  env: Record<string, string>;
  /** The session's private scratch dir. */
  scratch: string;
  /** Confinement roots, or null for an unsandboxed spawn (Container Root, exec.unconfined). */
  confine: ConfineRequest | null;
  /** The session's cgroup, which its program and every exec in it enter before they run; absent: none (a test's bare spawn). */
  cgroup?: CgroupLeaf;
}

/** The argv that runs `argv` inside the launch's cgroup, if it has one. */
export function enteringCgroup(launch: Pick<LaunchSpec, "cgroup">, argv: string[]): string[] {
  return launch.cgroup ? launch.cgroup.enter(argv) : argv;
}

/** What confinement must allow: read/write roots (path by path), never-readable paths. */
export interface ConfineRequest {
  /** `exec: false`: nothing below the root may be run (a `deny x` rule on a path); default true. */
  roots: { path: string; write: boolean; exec?: boolean }[];
  /** The service's own never-readable paths (data dir, .env files): no root may lie inside one. */
  deny: string[];
  /** Paths the caller's policy denies reading; a root below one (a deeper allow) is re-opened. */
  policyDeny?: string[];
  /** Every root must stay inside this directory after symlinks are resolved. */
  boundary: string;
}

/** A spawned PTY program plus the confinement actually in force. */
export interface SpawnedPty {
  process: import("./pty-process.ts").PtyProcess;
  /** `none`, `landlock` or `landlock+bwrap`. */
  confinement: string;
}

/** Spawns a session's PTY program from its launch spec. The confinement issue's launcher implements it. */
export type PtySpawner = (launch: LaunchSpec, size: { cols: number; rows: number }, onData: (chunk: Uint8Array) => void) => SpawnedPty;
