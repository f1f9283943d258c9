import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { killMarkedProcesses, removeTree } from "../pty/index.ts";
import { RUN_SCRATCH_PREFIX } from "./command-runner.ts";
import { runMark } from "./runner-environment.ts";

/**
 * Kill the processes that runs of a previous server left running, and return
 * their pids. A runner command gets its own process group, killed when its run
 * ends; a server that crashed never ends it, and a bare or Landlock-only
 * command does not die with its parent (bwrap's do). Every runner command and
 * whatever it starts inherit `HATCH_RUN_ID=<run>` (see runnerEnvironment).
 */
export function killRunProcesses(runIds: readonly string[]): Promise<number[]> {
  return killMarkedProcesses(new Set(runIds.map(runMark)));
}

/**
 * Remove the scratch dirs runs of a previous server left in `scratchRoot`
 * (each run's is removed when it ends; a crash skips that). Only for a start,
 * before any run: every run scratch dir then belongs to a stopped run. A dir
 * with something still mounted in it stays, logged, so the mounted data is
 * never deleted through it.
 */
export async function removeRunScratch(scratchRoot: string): Promise<string[]> {
  const removed: string[] = [];
  let names: string[];
  try {
    names = await readdir(scratchRoot);
  } catch {
    return removed;
  }
  for (const name of names.filter((n) => n.startsWith(RUN_SCRATCH_PREFIX))) {
    try {
      await removeTree(join(scratchRoot, name));
      removed.push(name);
    } catch (error) {
      console.error(`hatch: could not remove a stopped run's scratch dir ${name}:`, (error as Error).message);
    }
  }
  return removed;
}
