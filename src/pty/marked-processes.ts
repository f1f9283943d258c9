import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { SCRATCH_ENV_NAMES } from "./environment.ts";

/** Passes over /proc before giving up on a process tree that keeps forking. */
const MAX_PASSES = 20;

/**
 * End every process whose environment holds one of `marks` (whole
 * `NAME=value` entries), and return their pids. A process group is not a
 * boundary a program must stay in (`setsid`, `nohup … &` with job control,
 * daemons), but the environment it started with goes wherever it goes: a
 * session's `TMPDIR=<its scratch dir>`, a workflow run's `HATCH_RUN_ID=<run>`.
 * Unique per session or run, so a reused pid is never hit.
 *
 * Marked processes are stopped pass after pass until two passes find none
 * it had not stopped (a stopped process cannot fork, so a fork loop cannot
 * outrun the scan), and then killed. A program that clears those variables
 * from its children's environment (`env -i`) is not found: a cgroup per
 * session would close that, and is not available everywhere hatch runs.
 */
export async function killMarkedProcesses(marks: ReadonlySet<string>, procRoot = "/proc"): Promise<number[]> {
  if (marks.size === 0) return [];
  const stopped = new Set<number>();
  // Two quiet passes in a row: a process caught mid-exec can have an unreadable environment for one of them.
  for (let pass = 0, quiet = 0; pass < MAX_PASSES && quiet < 2; pass++) {
    const found = (await markedPids(marks, procRoot)).filter((pid) => !stopped.has(pid));
    quiet = found.length === 0 ? quiet + 1 : 0;
    for (const pid of found) if (signal(pid, "SIGSTOP")) stopped.add(pid);
  }
  for (const pid of stopped) signal(pid, "SIGKILL");
  return [...stopped];
}

/** The marks of everything started with `scratch` as its temp dir (a session's or a run's scratch). */
export function scratchMarks(scratch: string): Set<string> {
  return new Set(SCRATCH_ENV_NAMES.map((name) => `${name}=${scratch}`));
}

/** Pids whose environment holds a mark, read concurrently so a busy host is not scanned one file at a time. */
async function markedPids(marks: ReadonlySet<string>, procRoot: string): Promise<number[]> {
  const pids = (await readdir(procRoot)).filter((name) => /^\d+$/.test(name)).map(Number).filter((pid) => pid !== process.pid);
  const marked = await Promise.all(
    pids.map((pid) =>
      readFile(join(procRoot, String(pid), "environ"), "latin1").then(
        (environ) => environ.split("\0").some((entry) => marks.has(entry)),
        () => false, // gone meanwhile, or another user's
      ),
    ),
  );
  return pids.filter((_, i) => marked[i]);
}

function signal(pid: number, name: NodeJS.Signals): boolean {
  try {
    process.kill(pid, name);
    return true;
  } catch {
    return false; // exited meanwhile
  }
}
