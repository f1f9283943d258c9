import { expect } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Project } from "../../src/platform/index.ts";
import type { Run, Trigger, Workflow } from "../../src/workflows/index.ts";
import type { HttpClient, JsonResponse } from "./http-client.ts";
import { waitFor } from "./wait-for.ts";
import type { Person, World } from "./world.ts";

/** The path of a workflow's fire endpoint. */
export const firePath = (workflowId: string) => `/api/webhooks/workflow/${workflowId}/fire`;

/** A workflow as the routes answer it: with its triggers. */
export type WorkflowView = Workflow & { triggers: Trigger[] };

/** Create a workflow over HTTP (201 expected). */
export async function createWorkflow(client: HttpClient, body: Record<string, unknown>): Promise<WorkflowView> {
  const response = await client.post("/api/workflows", body);
  if (response.status !== 201) throw new Error(`create workflow: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body;
}

/** A command workflow created by `person`. */
export function commandWorkflow(person: Person, command: string, extra: Record<string, unknown> = {}): Promise<WorkflowView> {
  return createWorkflow(person.client, { name: "Echo", instruction: "Answer the message.", runner: { kind: "command", command }, ...extra });
}

/** Create a webhook trigger and return its fire token (shown once). */
export async function issueToken(client: HttpClient, workflowId: string): Promise<{ token: string; triggerId: string }> {
  const response = await client.post(`/api/workflows/${workflowId}/triggers`, { kind: "webhook" });
  expect(response.status).toBe(201);
  return { token: response.body.token, triggerId: response.body.trigger.id };
}

/** POST the fire endpoint with a bearer token and a JSON (or raw string) body. */
export function fire(world: World, workflowId: string, token: string, body: unknown = {}, headers: Record<string, string> = {}): Promise<JsonResponse> {
  return world.anonymous().post(firePath(workflowId), body, { authorization: `Bearer ${token}`, ...headers });
}

/** Wait until a run has finished (or matches `done`), reading it over HTTP. */
export async function waitForRun(client: HttpClient, workflowId: string, runId: string, done: (run: Run) => boolean = isFinished): Promise<Run> {
  return waitFor(async () => {
    const response = await client.get(`/api/workflows/${workflowId}/runs/${runId}`);
    return response.status === 200 && done(response.body) ? (response.body as Run) : null;
  }, `run ${runId}`);
}

/** Whether a run reached a final status. */
export function isFinished(run: Run): boolean {
  return run.status === "succeeded" || run.status === "failed" || run.status === "cancelled";
}

/** The texts of a run's answers, in order. */
export function answers(run: Run): string[] {
  return run.events.filter((e) => e.type === "answer").map((e) => e.text);
}

/** Rows of a table, straight from SQLite (to prove nothing was recorded). */
export function countRows(world: World, table: string, where = "1 = 1", ...params: string[]): number {
  return (world.hatch.sqlite.query(`SELECT count(*) AS n FROM ${table} WHERE ${where}`).get(...params) as { n: number }).n;
}

/**
 * A member whose workflow runs spawn bare (the role holds exec.unconfined), so a
 * test can watch a run's side effects in a trace dir outside the run's scratch.
 * Runs are otherwise confined; test/workflows/confined-runs.test.ts covers that.
 */
export async function memberWithBareRuns(world: World, project: Project): Promise<Person> {
  world.platform.roles.grant(project.id, "member", "exec.unconfined");
  return world.signedIn(project, "member");
}

/** A temp dir removed with the world: where test commands leave their traces. */
export function traceDir(world: World): string {
  const dir = mkdtempSync(join(tmpdir(), "hatch-trace-"));
  world.onDispose(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * Whether any process of a process group is still alive: a chain that forks
 * and exits at once keeps its group id while any of it lives, whatever its
 * pids, and the kernel answers for the whole group at once (a scan of /proc
 * would miss a chain that moves on meanwhile). Zombies count as alive, and
 * this machine's init reaps orphans about a second late: wait with a margin.
 */
export function groupAlive(group: number): boolean {
  try {
    process.kill(-group, 0);
    return true;
  } catch {
    return false;
  }
}

/** Whether a process is still alive (a zombie waiting to be reaped counts as dead). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}
