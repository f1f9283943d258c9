import { buildSessionEnv } from "../pty/index.ts";

/** The variable naming a run in the environment of everything it starts. */
const RUN_ID_NAME = "HATCH_RUN_ID";

/**
 * The environment of a runner command: the server's, minus the sensitive names
 * the terminal strips too (one list, `src/pty/environment.ts`), with the run's
 * scratch dir as TMPDIR and the run's ids (not its input: that is on stdin).
 *
 * @example
 * runnerEnvironment(process.env, { scratch: "/data/run-scratch/run-1", runId: "run-1", workflowId: "wf-1" })
 */
export function runnerEnvironment(
  base: Record<string, string | undefined>,
  run: { scratch: string; runId: string; workflowId: string },
): Record<string, string> {
  const { env } = buildSessionEnv({ base, scratch: run.scratch });
  return { ...env, [RUN_ID_NAME]: run.runId, HATCH_WORKFLOW_ID: run.workflowId };
}

/** The environment entry every process of a run carries, whatever process group it ends up in. */
export function runMark(runId: string): string {
  return `${RUN_ID_NAME}=${runId}`;
}
