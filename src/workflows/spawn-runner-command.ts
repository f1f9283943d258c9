/** What the command runner asks to run: a command line, where, with what, and the prompt on stdin. */
export interface RunnerCommandSpec {
  command: string;
  /** The run's private scratch directory. */
  cwd: string;
  /** Already stripped of sensitive variables (see `runnerEnvironment`). */
  env: Record<string, string>;
  /** Written to the child's stdin, then closed. */
  stdin: string;
}

/** A running runner command: its output, its exit, and a kill for its whole process group. */
export interface RunnerProcess {
  readonly pid: number;
  readonly stdout: ReadableStream<Uint8Array>;
  readonly stderr: ReadableStream<Uint8Array>;
  readonly exited: Promise<number>;
  /** Signal the child's whole process group, so nothing it started outlives it. */
  kill(signal: NodeJS.Signals): void;
}

/** Spawns a runner command. The one seam the confinement issue replaces with a confined spawn. */
export type RunnerCommandSpawner = (spec: RunnerCommandSpec) => RunnerProcess;

/**
 * The agent runner's shell. The specification's shell-selection rule for the
 * "agent runner" will come from `selectShell("runner", deps)` in src/pty once
 * that part exports it; until then, bash (every supported image has it).
 */
export const RUNNER_SHELL = ["/bin/bash", "-c"] as const;

/**
 * The unconfined spawn of a runner command, behind the one function the
 * confinement issue will replace. `detached` gives the child its own process
 * group, so a timeout or a cancel kills everything it started.
 *
 * @example
 * const child = spawnRunnerCommand({ command: "cat", cwd: scratch, env: {}, stdin: "hello" });
 */
export const spawnRunnerCommand: RunnerCommandSpawner = (spec) => {
  const child = Bun.spawn([...RUNNER_SHELL, spec.command], {
    cwd: spec.cwd,
    env: spec.env,
    stdin: new TextEncoder().encode(spec.stdin),
    stdout: "pipe",
    stderr: "pipe",
    detached: true,
  });
  return {
    pid: child.pid,
    stdout: child.stdout,
    stderr: child.stderr,
    exited: child.exited,
    kill: (signal) => {
      try {
        process.kill(-child.pid, signal);
      } catch {
        // The group is gone already; make sure the leader is too.
        child.kill(signal);
      }
    },
  };
};
