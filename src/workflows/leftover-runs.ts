import { readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { RUN_SCRATCH_PREFIX } from "./command-runner.ts";

/**
 * Kill the processes that runs of a previous server left running, and return
 * their pids. A runner command gets its own process group, killed when its run
 * ends; a server that crashed never ends it, and a bare or Landlock-only
 * command does not die with its parent (bwrap's do). Every runner command and
 * whatever it starts inherit `HATCH_RUN_ID=<run>` (see runnerEnvironment), a
 * mark that outlives `setsid` and cannot match a reused pid, so only those
 * runs' processes are hit.
 */
export function killRunProcesses(runIds: readonly string[], procRoot = "/proc"): number[] {
  if (runIds.length === 0) return [];
  const marks = new Set(runIds.map((id) => `HATCH_RUN_ID=${id}`));
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

/**
 * Remove the scratch dirs runs of a previous server left in `scratchRoot`
 * (each run's is removed when it ends; a crash skips that). Only for a start,
 * before any run: every run scratch dir then belongs to a stopped run.
 */
export function removeRunScratch(scratchRoot: string): string[] {
  const removed: string[] = [];
  let names: string[];
  try {
    names = readdirSync(scratchRoot);
  } catch {
    return removed;
  }
  for (const name of names.filter((n) => n.startsWith(RUN_SCRATCH_PREFIX))) {
    try {
      rmSync(join(scratchRoot, name), { recursive: true, force: true });
      removed.push(name);
    } catch (error) {
      console.error(`hatch: could not remove a stopped run's scratch dir ${name}`, error);
    }
  }
  return removed;
}
