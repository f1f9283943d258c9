import { HatchError } from "../platform/index.ts";
import { shellCommand, spawnDetached, type CgroupLeaf, type CommandProcess, type ConfinePlanner } from "../pty/index.ts";

/** What the command runner asks to run: a command line, where, with what, and the prompt on stdin. */
export interface RunnerCommandSpec {
  command: string;
  /** The run's private scratch directory (mode 0700): its working directory and only writable place. */
  cwd: string;
  /** Already stripped of sensitive variables (see `runnerEnvironment`). */
  env: Record<string, string>;
  /** Written to the child's stdin, then closed. */
  stdin: string;
  /** Whose run this is: a creator holding exec.unconfined gets the bare spawn. */
  projectId: string;
  createdBy: string;
  /** The run's cgroup: the command enters it before it runs. */
  cgroup: CgroupLeaf;
}

/** A running runner command: its output, its exit, and a kill for its whole process group. */
export type RunnerProcess = CommandProcess;

/** Spawns a runner command. */
export type RunnerCommandSpawner = (spec: RunnerCommandSpec) => RunnerProcess;

/** Collaborators of the runner spawner. */
export interface RunnerSpawnerOptions {
  /** The agent runner's shell, chosen at each spawn (`selectShell("runner")`: bash preferred, $SHELL last), so a HATCH_SHELL removed since start is passed over as a terminal's is. */
  shell: () => string;
  /** Plans the confined wrapper; null where confinement is unavailable, and then runs fail closed. */
  planner: ConfinePlanner | null;
  /** Never readable from a run (the data dir: database and key). */
  protectedPaths: string[];
  /** Whether the creator holds exec.unconfined right now. */
  unconfined(projectId: string, userId: string): boolean;
}

/**
 * The command runner's spawn: confined like a source tab with nothing writable
 * but the run's scratch dir (Landlock, plus bubblewrap where it works), or bare
 * for a creator holding exec.unconfined — the same rule as the terminal. Where
 * confinement is unavailable a run fails closed; it never runs unsandboxed.
 */
export function createRunnerSpawner(options: RunnerSpawnerOptions): RunnerCommandSpawner {
  return (spec) => {
    const command = shellCommand(options.shell(), spec.command);
    const argv = command.argv;
    const env = { ...spec.env, ...command.env };
    if (options.unconfined(spec.projectId, spec.createdBy)) return spawnDetached({ argv: spec.cgroup.enter(argv), cwd: spec.cwd, env, stdin: spec.stdin });
    if (!options.planner) throw new HatchError("confinement_unavailable", 500, "Cannot run the command: confinement is unavailable on this server");
    const plan = options.planner({
      sourceSlug: "workflow-run",
      cwd: spec.cwd,
      argv,
      env,
      scratch: spec.cwd,
      confine: { roots: [], deny: options.protectedPaths, boundary: spec.cwd },
    });
    return spawnDetached({ argv: spec.cgroup.enter(plan.argv), cwd: plan.cwd, env: plan.env, stdin: spec.stdin });
  };
}
