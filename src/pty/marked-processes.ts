import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { SCRATCH_ENV_NAMES } from "./environment.ts";

/**
 * SIGKILL every process whose environment holds one of `marks` (whole
 * `NAME=value` entries), and return their pids. A process group is not a
 * boundary a program must stay in (`setsid`, `nohup … &` with job control,
 * daemons), but the environment it started with goes wherever it goes: a
 * session's `TMPDIR=<its scratch dir>`, a workflow run's `HATCH_RUN_ID=<run>`.
 * Unique per session or run, so a reused pid is never hit. A program that
 * rewrites its own environment can still escape; a cgroup per session would
 * close that, and is not available everywhere hatch runs.
 */
export function killMarkedProcesses(marks: ReadonlySet<string>, procRoot = "/proc"): number[] {
  if (marks.size === 0) return [];
  const killed: number[] = [];
  for (const name of readdirSync(procRoot)) {
    const pid = Number(name);
    if (!/^\d+$/.test(name) || pid === process.pid) continue;
    let environ: string;
    try {
      environ = readFileSync(join(procRoot, name, "environ"), "latin1");
    } catch {
      continue; // gone meanwhile, or another user's
    }
    if (!environ.split("\0").some((entry) => marks.has(entry))) continue;
    try {
      process.kill(pid, "SIGKILL");
      killed.push(pid);
    } catch {
      // Exited meanwhile.
    }
  }
  return killed;
}

/** The marks of everything started with `scratch` as its temp dir (a session's or a run's scratch). */
export function scratchMarks(scratch: string): Set<string> {
  return new Set(SCRATCH_ENV_NAMES.map((name) => `${name}=${scratch}`));
}
