/**
 * Variable names never passed to a runner command: hatch's own settings (the
 * secret key above all) and anything that looks like a credential. src/pty will
 * export the terminal's equivalent; when it does, both should share one list.
 */
const SENSITIVE_NAME = /^(HATCH_|AWS_|GOOGLE_|AZURE_|GH_|GITHUB_|OPENAI_|ANTHROPIC_)|SECRET|TOKEN|PASSW|API_?KEY|PRIVATE|CREDENTIAL|COOKIE|SESSION/i;

/** Whether a variable name must not reach a runner command. */
export function isSensitiveName(name: string): boolean {
  return SENSITIVE_NAME.test(name);
}

/**
 * The environment of a runner command: the server's, minus sensitive names,
 * with its scratch dir as TMPDIR and the run's ids (not its input: that is on stdin).
 *
 * @example
 * runnerEnvironment(process.env, { scratch: "/tmp/run-1", runId: "run-1", workflowId: "wf-1" })
 */
export function runnerEnvironment(
  base: Record<string, string | undefined>,
  run: { scratch: string; runId: string; workflowId: string },
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(base)) {
    if (value !== undefined && !isSensitiveName(name)) env[name] = value;
  }
  env.TMPDIR = run.scratch;
  env.HATCH_RUN_ID = run.runId;
  env.HATCH_WORKFLOW_ID = run.workflowId;
  return env;
}
