import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { SCRATCH_ENV_NAMES } from "./environment.ts";

/** Passes over /proc before giving up on a process tree that keeps forking. */
const MAX_PASSES = 20;
/** Time between the two quiet passes that end a request; a pass that only confirms quiet waits for it. */
const QUIET_PASS_GAP_MS = 10;

/** One caller's request: its marks, what it has stopped so far, and how it is answered. */
interface Sweep {
  marks: ReadonlySet<string>;
  stopped: Set<number>;
  passes: number;
  quiet: number;
  /** When its last counted quiet pass ended (performance.now()). */
  quietAt: number;
  resolve(pids: number[]): void;
  reject(error: unknown): void;
}

/**
 * Requests being served. Concurrent requests share their passes over /proc
 * (a shutdown ends every session at once, and one scan per session made that
 * quadratic in the number of sessions); it holds nothing once they are answered.
 */
const sweeps = new Set<Sweep>();
let scanning = false;

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
 * from its children's environment (`env -i`), or a chain that forks and exits
 * faster than a pass reads it, is not found: the session's or run's cgroup
 * (`process-cgroups.ts`) ends those where the host gives hatch cgroups.
 */
export function killMarkedProcesses(marks: ReadonlySet<string>): Promise<number[]> {
  if (marks.size === 0) return Promise.resolve([]);
  return new Promise((resolve, reject) => {
    sweeps.add({ marks, stopped: new Set(), passes: 0, quiet: 0, quietAt: 0, resolve, reject });
    if (!scanning) void scan();
  });
}

/** Pass over /proc for every request in turn until each is answered; a request made meanwhile joins the next pass. */
async function scan(): Promise<void> {
  scanning = true;
  try {
    while (sweeps.size > 0) {
      const serving = [...sweeps];
      const found = await markedPids(serving);
      for (const sweep of serving) settle(sweep, found.get(sweep) ?? []);
      // A pass that only confirms quiet waits a moment first: a process caught mid-exec needs CPU time
      // to get its environment back, and two passes back to back on a busy host can both miss it.
      if (sweeps.size > 0 && [...sweeps].every((sweep) => sweep.quiet > 0)) await delay(QUIET_PASS_GAP_MS);
    }
  } catch (error) {
    for (const sweep of sweeps) sweep.reject(error);
    sweeps.clear();
  } finally {
    scanning = false;
  }
}

/** Stop what this pass found for a request; after two quiet passes in a row, kill what it stopped and answer it. */
function settle(sweep: Sweep, found: number[]): void {
  const fresh = found.filter((pid) => !sweep.stopped.has(pid));
  // Two quiet passes in a row, apart in time: a process caught mid-exec can have an unreadable environment for
  // one of them. A pass too soon after the last quiet one (others' passes run back to back) does not count.
  const now = performance.now();
  if (fresh.length > 0) sweep.quiet = 0;
  else if (sweep.quiet === 0 || now - sweep.quietAt >= QUIET_PASS_GAP_MS) {
    sweep.quiet++;
    sweep.quietAt = now;
  }
  sweep.passes++;
  for (const pid of fresh) if (signal(pid, "SIGSTOP")) sweep.stopped.add(pid);
  if (sweep.quiet < 2 && sweep.passes < MAX_PASSES) return;
  for (const pid of sweep.stopped) signal(pid, "SIGKILL");
  sweeps.delete(sweep);
  sweep.resolve([...sweep.stopped]);
}

/** The marks of everything started with `scratch` as its temp dir (a session's or a run's scratch). */
export function scratchMarks(scratch: string): Set<string> {
  return new Set(SCRATCH_ENV_NAMES.map((name) => `${name}=${scratch}`));
}

/** Per request, the pids whose environment holds one of its marks; read concurrently so a busy host is not scanned one file at a time. */
async function markedPids(serving: Sweep[]): Promise<Map<Sweep, number[]>> {
  const byMark = new Map<string, Sweep[]>();
  for (const sweep of serving) {
    for (const mark of sweep.marks) {
      if (!byMark.has(mark)) byMark.set(mark, []);
      byMark.get(mark)!.push(sweep);
    }
  }
  const found = new Map<Sweep, number[]>();
  const pids = (await readdir("/proc")).filter((name) => /^\d+$/.test(name)).map(Number).filter((pid) => pid !== process.pid);
  await Promise.all(
    pids.map((pid) =>
      readFile(join("/proc", String(pid), "environ"), "latin1").then(
        (environ) => {
          const owners = new Set(environ.split("\0").flatMap((entry) => byMark.get(entry) ?? []));
          for (const sweep of owners) {
            if (!found.has(sweep)) found.set(sweep, []);
            found.get(sweep)!.push(pid);
          }
        },
        () => {}, // gone meanwhile, or another user's
      ),
    ),
  );
  return found;
}

function signal(pid: number, name: NodeJS.Signals): boolean {
  try {
    process.kill(pid, name);
    return true;
  } catch {
    return false; // exited meanwhile
  }
}
