import { Database } from "bun:sqlite";
import { describe, expect, spyOn, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../src/config.ts";
import { DATABASE_FILE } from "../../src/db/index.ts";
import { startHatch } from "../../src/main.ts";
import type { Run, RunUpdate } from "../../src/workflows/index.ts";
import { hatchCli } from "../helpers/cli.ts";
import { startFakeOpenAi } from "../helpers/fake-openai.ts";
import { waitFor } from "../helpers/wait-for.ts";
import { logIn, type Person, startWorld, TEST_PASSWORD, type World } from "../helpers/world.ts";
import { answers, commandWorkflow, countRows, createWorkflow, fire, isAlive, isFinished, issueToken, memberWithBareRuns, traceDir, waitForRun } from "../helpers/workflows.ts";

/** A command that says it started, then works until it is killed. */
const blocking = (dir: string) => `echo $$ > ${dir}/$HATCH_RUN_ID.started; sleep 300`;

/**
 * As a member with bare runs, fire a fresh workflow running `command` (given the trace dir), which touches
 * `<dir>/$HATCH_RUN_ID.exiting` as it exits and leaves a sleep holding its stdout, so the runner drains for a
 * second; cancel the run in that second. The cancel's answer and the run as it ended.
 */
async function cancelInTheDrain(world: World, command: (dir: string) => string) {
  const member = await memberWithBareRuns(world, await world.project());
  const dir = traceDir(world);
  const workflow = await commandWorkflow(member, command(dir), { mode: "fresh" });
  const { token } = await issueToken(member.client, workflow.id);
  const runId = (await fire(world, workflow.id, token)).body.runId;
  await waitFor(() => existsSync(join(dir, `${runId}.exiting`)), "the command to exit");
  await Bun.sleep(200);
  const cancel = await member.client.post(`/api/workflows/${workflow.id}/runs/${runId}/cancel`);
  return { cancel, run: await waitForRun(member.client, workflow.id, runId) };
}

describe("the life of a run", () => {
  test("cancel while working stops the command: cancelled / while-working, silent (no answer)", async () => {
    await using world = await startWorld();
    const member = await memberWithBareRuns(world, await world.project());
    const dir = traceDir(world);
    const workflow = await commandWorkflow(member, blocking(dir));
    const { token } = await issueToken(member.client, workflow.id);
    const runId = (await fire(world, workflow.id, token)).body.runId;
    await waitFor(() => existsSync(join(dir, `${runId}.started`)), "the command to start");
    const cancelled = await member.client.post(`/api/workflows/${workflow.id}/runs/${runId}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({ status: "cancelled", cancelled: "while-working", error: null });
    expect(answers(cancelled.body)).toEqual([]);
    await waitFor(() => !isAlive(Number(readFileSync(join(dir, `${runId}.started`), "utf8"))), "the command to die");
    const again = await member.client.post(`/api/workflows/${workflow.id}/runs/${runId}/cancel`);
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe("run_finished");
  });

  test("a cancel is audited as it is asked (workflow.run.cancel, with the run's status then); one whose entry cannot be written stops nothing (500)", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const member = await memberWithBareRuns(world, project);
    const dir = traceDir(world);
    const workflow = await commandWorkflow(member, blocking(dir));
    const { token } = await issueToken(member.client, workflow.id);
    const runId = (await fire(world, workflow.id, token)).body.runId;
    await waitFor(() => existsSync(join(dir, `${runId}.started`)), "the command to start");
    world.hatch.sqlite.exec("CREATE TRIGGER cancel_entry_fails BEFORE INSERT ON audit_log WHEN NEW.action = 'workflow.run.cancel' BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END");
    const logged = spyOn(console, "error").mockImplementation(() => {});
    try {
      expect((await member.client.post(`/api/workflows/${workflow.id}/runs/${runId}/cancel`)).status).toBe(500);
    } finally {
      logged.mockRestore();
    }
    expect((await member.client.get(`/api/workflows/${workflow.id}/runs/${runId}`)).body.status).toBe("running");
    expect(isAlive(Number(readFileSync(join(dir, `${runId}.started`), "utf8")))).toBe(true);
    world.hatch.sqlite.exec("DROP TRIGGER cancel_entry_fails");
    expect((await member.client.post(`/api/workflows/${workflow.id}/runs/${runId}/cancel`)).body).toMatchObject({ status: "cancelled", cancelled: "while-working" });
    // A run already finished is refused, and nothing more is recorded.
    expect((await member.client.post(`/api/workflows/${workflow.id}/runs/${runId}/cancel`)).status).toBe(409);
    expect(world.platform.audit.query({ projectId: project.id, action: "workflow.run.cancel" }).map((e) => ({ userId: e.userId, target: e.target, detail: e.detail }))).toEqual([
      { userId: member.user.id, target: runId, detail: { workflowId: workflow.id, status: "running" } },
    ]);
  });

  test("a cancel that lands after the command answered and exited (its scratch still being removed) is 409: the run succeeded", async () => {
    await using world = await startWorld();
    const member = await memberWithBareRuns(world, await world.project());
    // Many files in its scratch dir (its cwd), so removing it after the answer takes a while.
    const workflow = await commandWorkflow(member, "mkdir d && cd d && seq 1 40000 | xargs touch && echo done", { mode: "fresh" });
    const { token } = await issueToken(member.client, workflow.id);
    const runId = (await fire(world, workflow.id, token)).body.runId;
    await new Promise<void>((resolve) =>
      world.hatch.workflows.bus.subscribe({ runId }, (update: RunUpdate) => update.type === "event" && update.event.type === "answer" && resolve()),
    );
    // The answer is on the row and was published (a chat got it): the run's work is over.
    const cancel = await member.client.post(`/api/workflows/${workflow.id}/runs/${runId}/cancel`);
    const run = await waitForRun(member.client, workflow.id, runId);
    expect({ cancel: cancel.status, code: cancel.body.error?.code, status: run.status, cancelled: run.cancelled, answers: answers(run) }).toEqual({
      cancel: 409,
      code: "run_finished",
      status: "succeeded",
      cancelled: null,
      answers: ["done"],
    });
  });

  test("a cancel that lands after the command exited, while a background child it left still holds its stdout, is 409: the turn ended at the exit, and its answer is kept", async () => {
    await using world = await startWorld();
    // The command answers and exits at once.
    const { cancel, run } = await cancelInTheDrain(world, (dir) => `echo done; sleep 30 & touch ${dir}/$HATCH_RUN_ID.exiting`);
    expect({ cancel: cancel.status, status: run.status, cancelled: run.cancelled, answers: answers(run) }).toEqual({
      cancel: 409,
      status: "succeeded",
      cancelled: null,
      answers: ["done"],
    });
  });

  test("a cancel that lands after the command exited non-zero, while a background child still holds its stdout, is 409 too: the run stays failed with its exit, and audited", async () => {
    await using world = await startWorld();
    // The command fails and exits at once.
    const { cancel, run } = await cancelInTheDrain(world, (dir) => `echo broken >&2; sleep 30 & touch ${dir}/$HATCH_RUN_ID.exiting; exit 3`);
    const audited = countRows(world, "audit_log", "action = 'workflow.run.failed' AND target = ?", run.id);
    expect({ cancel: cancel.status, status: run.status, cancelled: run.cancelled, error: run.error, audited }).toEqual({
      cancel: 409,
      status: "failed",
      cancelled: null,
      error: "The command exited with code 3: broken",
      audited: 1,
    });
  });

  test("a cancel that lands in the drain after a timeout killed the command is 409: the run stays failed as timed out", async () => {
    await using world = await startWorld();
    const member = await memberWithBareRuns(world, await world.project());
    const dir = traceDir(world);
    // A child outside the process group holds stdout, so after the timeout's kill the runner drains for a second.
    const workflow = await createWorkflow(member.client, {
      name: "Slow",
      mode: "fresh",
      runner: { kind: "command", command: `setsid sleep 30 & touch ${dir}/$HATCH_RUN_ID.started; sleep 60`, timeoutSeconds: 1 },
    });
    const { token } = await issueToken(member.client, workflow.id);
    const runId = (await fire(world, workflow.id, token)).body.runId;
    await waitFor(() => existsSync(join(dir, `${runId}.started`)), "the command to start");
    await Bun.sleep(1300);
    const cancel = await member.client.post(`/api/workflows/${workflow.id}/runs/${runId}/cancel`);
    const run = await waitForRun(member.client, workflow.id, runId);
    expect({ cancel: cancel.status, status: run.status, error: run.error }).toEqual({ cancel: 409, status: "failed", error: "The command timed out after 1 s" });
  });

  test("cancel before start: a queued run ends cancelled / before-start and never runs", async () => {
    await using world = await startWorld({}, { workflows: { poolSize: 1 } });
    const member = await memberWithBareRuns(world, await world.project());
    const dir = traceDir(world);
    const workflow = await commandWorkflow(member, blocking(dir), { mode: "fresh" });
    const { token } = await issueToken(member.client, workflow.id);
    const first = (await fire(world, workflow.id, token)).body.runId;
    await waitFor(() => existsSync(join(dir, `${first}.started`)), "the first run to start");
    const second = (await fire(world, workflow.id, token)).body.runId;
    expect(world.hatch.workflows.pool.stats()).toMatchObject({ running: 1, queued: 1 });
    const outcomes: RunUpdate[] = [];
    world.hatch.workflows.bus.subscribe({ runId: second }, (u) => outcomes.push(u));
    const cancelled = await member.client.post(`/api/workflows/${workflow.id}/runs/${second}/cancel`);
    expect(cancelled.body).toMatchObject({ status: "cancelled", cancelled: "before-start", startedAt: null, attempts: 0 });
    expect(outcomes.map((u) => (u.type === "finished" ? u.outcome : u.type))).toEqual([{ kind: "cancelled-before-start", wasWaitingRetry: false }]);
    await member.client.post(`/api/workflows/${workflow.id}/runs/${first}/cancel`);
    // The slot is free now: had the cancelled run stayed queued, the pool would start it next.
    // Wait until the pool is idle (or the second run gave itself away) before looking for its trace.
    const started = join(dir, `${second}.started`);
    await waitFor(() => {
      const { running, queued, delayed } = world.hatch.workflows.pool.stats();
      return (running === 0 && queued === 0 && delayed === 0) || existsSync(started);
    }, "the pool to go idle");
    expect(existsSync(started)).toBe(false);
    expect((await waitForRun(member.client, workflow.id, second)).attempts).toBe(0);
  });

  test("a run whose workflow was paused while it queued ends cancelled / workflow-not-active without running", async () => {
    await using world = await startWorld({}, { workflows: { poolSize: 1 } });
    const member = await memberWithBareRuns(world, await world.project());
    const dir = traceDir(world);
    const workflow = await commandWorkflow(member, blocking(dir), { mode: "fresh" });
    const { token } = await issueToken(member.client, workflow.id);
    const first = (await fire(world, workflow.id, token)).body.runId;
    await waitFor(() => existsSync(join(dir, `${first}.started`)), "the first run to start");
    const second = (await fire(world, workflow.id, token)).body.runId;
    await member.client.request("PATCH", `/api/workflows/${workflow.id}`, { status: "paused" });
    await member.client.post(`/api/workflows/${workflow.id}/runs/${first}/cancel`);
    const run = await waitForRun(member.client, workflow.id, second);
    expect(run).toMatchObject({ status: "cancelled", cancelled: "workflow-not-active", error: "The workflow was paused when this run's turn came", startedAt: null });
  });

  test("a fire that arrives while a delete stops the workflow's runs never runs after the workflow is gone, nor can an edit reopen it meanwhile", async () => {
    await using world = await startWorld();
    const member = await memberWithBareRuns(world, await world.project());
    const dir = traceDir(world);
    // The first run is slow to stop (a process outside its group holds its output), so the delete waits on it a while.
    const command = `if grep -q slow; then touch ${dir}/slow-started; setsid sleep 3 & sleep 300; else sleep 1; touch ${dir}/late-ran; fi`;
    const workflow = await commandWorkflow(member, command, { mode: "fresh" });
    const { token } = await issueToken(member.client, workflow.id);
    expect((await fire(world, workflow.id, token, { text: "slow" })).status).toBe(202);
    await waitFor(() => existsSync(join(dir, "slow-started")), "the slow run to start");
    const deleting = member.client.delete(`/api/workflows/${workflow.id}`);
    // The delete archives the workflow first, then waits for the slow run to stop (over a second): fire in between.
    await waitFor(async () => (await member.client.get(`/api/workflows/${workflow.id}`)).body.status === "archived", "the delete to archive the workflow");
    // Someone (another tab, another admin) makes it active again meanwhile: refused, or its fires would be taken.
    const reactivated = await member.client.patch(`/api/workflows/${workflow.id}`, { status: "active" });
    expect({ status: reactivated.status, code: reactivated.body.error?.code }).toEqual({ status: 409, code: "workflow_deleting" });
    expect((await member.client.delete(`/api/workflows/${workflow.id}`)).body.error?.code).toBe("workflow_deleting");
    const late = await fire(world, workflow.id, token, { text: "late" });
    expect((await deleting).status).toBe(200);
    // Refused as not active once the delete began; had it come first, the delete would have cancelled it.
    expect({ status: late.status, code: late.body.error?.code }).toEqual({ status: 409, code: "workflow_not_active" });
    await Bun.sleep(2000);
    expect(existsSync(join(dir, "late-ran"))).toBe(false);
  });

  test("a run executes as its creator with the creator's permissions at run time: one queued before they lost them fails at its start, and fires meanwhile are refused, recording and spending nothing", async () => {
    await using world = await startWorld({}, { workflows: { poolSize: 1 } });
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    const member = await memberWithBareRuns(world, project);
    const dir = traceDir(world);
    const workflow = await commandWorkflow(member, `touch ${dir}/$HATCH_RUN_ID.ran; echo ran`, { mode: "fresh" });
    const { token } = await issueToken(member.client, workflow.id);
    expect((await waitForRun(member.client, workflow.id, (await fire(world, workflow.id, token)).body.runId)).status).toBe("succeeded");

    // The owner's run holds the one worker, so the member's next run waits in the queue.
    const holder = await commandWorkflow(owner, blocking(dir));
    const holding = (await fire(world, holder.id, (await issueToken(owner.client, holder.id)).token)).body.runId;
    await waitFor(() => existsSync(join(dir, `${holding}.started`)), "the owner's run to start");
    const queued = (await fire(world, workflow.id, token)).body.runId;
    await owner.client.delete("/api/roles/member/features/core.execute");

    const rowsBefore = countRows(world, "workflow_runs");
    const spentBefore = (await owner.client.get("/api/workflows/spend-limit")).body.used.runs;
    const refused = await fire(world, workflow.id, token);
    expect({ status: refused.status, error: refused.body.error }).toEqual({
      status: 409,
      error: { code: "creator_not_permitted", message: `Workflow "${workflow.name}" does not fire: its creator's role "member" lacks the feature "core.execute" its runs need` },
    });
    expect(countRows(world, "workflow_runs")).toBe(rowsBefore);
    expect((await owner.client.get("/api/workflows/spend-limit")).body.used.runs).toBe(spentBefore);

    await owner.client.post(`/api/workflows/${holder.id}/runs/${holding}/cancel`);
    const denied = await waitForRun(owner.client, workflow.id, queued);
    expect(denied).toMatchObject({ status: "failed", startedAt: null, error: `The workflow's creator "${member.user.email}" (role "member") lacks the feature "core.execute" the command runner needs` });
    expect(existsSync(join(dir, `${denied.id}.ran`))).toBe(false);
    expect(world.platform.audit.query({ projectId: project.id, action: "workflow.run.failed" }).map((e) => e.target)).toEqual([denied.id]);

    // Given back, it fires again.
    await owner.client.put("/api/roles/member/features/core.execute");
    expect((await waitForRun(member.client, workflow.id, (await fire(world, workflow.id, token)).body.runId)).status).toBe("succeeded");
    // A creator who left the project is a later test's.
  });

  test("a role losing core.execute stops its members' working runs, and only theirs", async () => {
    await using world = await startWorld({}, { workflows: { accessCheckMs: 100 } });
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    const member = await memberWithBareRuns(world, project);
    const dir = traceDir(world);
    const started = async (person: typeof owner) => {
      const workflow = await commandWorkflow(person, blocking(dir));
      const { token } = await issueToken(person.client, workflow.id);
      const runId = (await fire(world, workflow.id, token)).body.runId;
      await waitFor(() => existsSync(join(dir, `${runId}.started`)), "the run to start");
      return { workflow, runId, pid: Number(readFileSync(join(dir, `${runId}.started`), "utf8")) };
    };
    const members = await started(member);
    const owners = await started(owner);

    await owner.client.delete("/api/roles/member/features/core.execute");
    const stopped = await waitForRun(owner.client, members.workflow.id, members.runId);
    const reason = `The workflow's creator "${member.user.email}" (role "member") lacks the feature "core.execute" the command runner needs`;
    expect(stopped).toMatchObject({ status: "failed", error: `${reason}: the run was stopped while it worked` });
    expect(isAlive(members.pid)).toBe(false);
    // The sweep that stopped the member's run passed over the owner's, which still works.
    expect((await owner.client.get(`/api/workflows/${owners.workflow.id}/runs/${owners.runId}`)).body.status).toBe("running");
    expect(isAlive(owners.pid)).toBe(true);
    expect((await owner.client.post(`/api/workflows/${owners.workflow.id}/runs/${owners.runId}/cancel`)).body).toMatchObject({ status: "cancelled", cancelled: "while-working" });
  });

  test("the agent package switched off for the creator's role stops their working run, which ends cancelled package-off as a run starting now would", async () => {
    await using world = await startWorld({}, { workflows: { accessCheckMs: 100 } });
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    const member = await memberWithBareRuns(world, project);
    const dir = traceDir(world);
    const workflow = await commandWorkflow(member, blocking(dir));
    const { token } = await issueToken(member.client, workflow.id);
    const runId = (await fire(world, workflow.id, token)).body.runId;
    await waitFor(() => existsSync(join(dir, `${runId}.started`)), "the run to start");

    expect((await owner.client.put("/api/packages/agent/access", { feature: "agent.use" })).status).toBe(200);
    const stopped = await waitForRun(owner.client, workflow.id, runId);
    expect(stopped).toMatchObject({ status: "cancelled", cancelled: "package-off" });
    expect(isAlive(Number(readFileSync(join(dir, `${runId}.started`), "utf8")))).toBe(false);
  });

  test("once hatch admin member remove took its creator out of the project, the working run is stopped, a run queued before fails without running, and fires and schedules are refused, recording nothing", async () => {
    await using world = await startWorld({}, { workflows: { poolSize: 1, accessCheckMs: 100 } });
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    const member = await memberWithBareRuns(world, project);
    const dir = traceDir(world);
    const workflow = await commandWorkflow(member, `if grep -q block; then ${blocking(dir)}; else touch ${dir}/$HATCH_RUN_ID.ran; echo ran; fi`, { mode: "fresh" });
    const { token } = await issueToken(member.client, workflow.id);
    const working = (await fire(world, workflow.id, token, { text: "block" })).body.runId;
    await waitFor(() => existsSync(join(dir, `${working}.started`)), "the first run to start");
    const queued = (await fire(world, workflow.id, token, { text: "queued" })).body.runId;
    expect(world.hatch.workflows.pool.stats()).toMatchObject({ running: 1, queued: 1 });

    // The operator's CLI is another process: the server learns of the removal only from the database.
    const removed = await hatchCli(world.config.dataDir, ["admin", "member", "remove", "--project", project.slug, "--email", member.user.email]);
    expect(removed.code).toBe(0);
    // The run already working executes as its creator too: it is stopped (its command killed), which frees the pool for the queued one.
    const reason = `The workflow's creator "${member.user.email}" is no longer a member of the project`;
    const stopped = await waitForRun(owner.client, workflow.id, working);
    expect(stopped).toMatchObject({ status: "failed", cancelled: null, error: `${reason}: the run was stopped while it worked` });
    expect(isAlive(Number(readFileSync(join(dir, `${working}.started`), "utf8")))).toBe(false);
    const afterQueue = await waitForRun(owner.client, workflow.id, queued);
    expect(afterQueue).toMatchObject({ status: "failed", error: reason, startedAt: null, events: [] });
    expect(existsSync(join(dir, `${queued}.ran`))).toBe(false);
    const failures = world.platform.audit.query({ projectId: project.id, action: "workflow.run.failed" });
    // Newest first: the queued run failed once the stopped one had freed the pool.
    expect(failures.map((e) => ({ target: e.target, userId: e.userId, error: e.detail!.error }))).toEqual([
      { target: queued, userId: member.user.id, error: reason },
      { target: working, userId: member.user.id, error: `${reason}: the run was stopped while it worked` },
    ]);

    // A new fire is refused like a paused workflow's: nothing recorded, nothing spent.
    const rowsBefore = countRows(world, "workflow_runs");
    const spentBefore = (await owner.client.get("/api/workflows/spend-limit")).body.used;
    const fired = await fire(world, workflow.id, token, { text: "after" });
    expect({ status: fired.status, error: fired.body.error }).toEqual({ status: 409, error: { code: "creator_not_member", message: `Workflow "${workflow.name}" does not fire: its creator is no longer a member of the project` } });
    // So is a schedule's: an owner's workflow on the same per-second schedule is the clock that shows its ticks came and went.
    const clock = await commandWorkflow(owner, "echo tick", { mode: "fresh" });
    for (const id of [workflow.id, clock.id]) await owner.client.request("PATCH", `/api/workflows/${id}`, { schedule: "* * * * * *" });
    await waitFor(async () => (await owner.client.get(`/api/workflows/${clock.id}/runs`)).body.runs.filter((r: Run) => r.trigger.kind === "schedule" && isFinished(r)).length >= 2, "two ticks of the clock");
    for (const id of [workflow.id, clock.id]) await owner.client.request("PATCH", `/api/workflows/${id}`, { status: "paused" });
    expect(countRows(world, "workflow_runs", "workflow_id = ?", workflow.id)).toBe(rowsBefore);
    expect((await owner.client.get("/api/workflows/spend-limit")).body.used.runs).toBe(spentBefore.runs + countRows(world, "workflow_runs", "workflow_id = ?", clock.id));
  });

  test("a burst of 200 fires queues and completes with the pool's bound respected", async () => {
    await using world = await startWorld({}, { fireRatePerMinute: 0 });
    const member = await memberWithBareRuns(world, await world.project());
    const dir = traceDir(world);
    const workflow = await commandWorkflow(member, `echo + >> ${dir}/log; sleep 0.01; echo - >> ${dir}/log; echo done`, { mode: "fresh" });
    const { token } = await issueToken(member.client, workflow.id);
    const fired = await Promise.all(Array.from({ length: 200 }, (_, i) => fire(world, workflow.id, token, { text: `fire ${i}` })));
    expect(fired.every((f) => f.status === 202)).toBe(true);
    expect(world.hatch.workflows.pool.stats().queued).toBeGreaterThan(0);
    await waitFor(() => countRows(world, "workflow_runs", "status = 'succeeded'") === 200, "200 runs to succeed", 60_000);

    let running = 0;
    let peak = 0;
    for (const mark of readFileSync(join(dir, "log"), "utf8").trim().split("\n")) {
      running += mark === "+" ? 1 : -1;
      peak = Math.max(peak, running);
    }
    expect(peak).toBeLessThanOrEqual(4);
    expect(world.hatch.workflows.pool.stats()).toEqual({ size: 4, running: 0, queued: 0, delayed: 0, peakRunning: 4 });
  });

  test("a restart fails what was running and runs what was still queued", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "hatch-restart-"));
    const dir = mkdtempSync(join(tmpdir(), "hatch-trace-"));
    try {
      const config = loadConfig({ HATCH_PORT: "0", HATCH_COMPANION_PORT: "0", HATCH_DATA_DIR: dataDir });
      const first = await startHatch(config, { workflows: { poolSize: 1 } });
      const user = await first.platform.users.create("maker@example.com", TEST_PASSWORD);
      const project = first.platform.projects.create("restart", "Restart", user.id);
      const client = await logIn(first.url, user.email);
      const command = `if [ -e ${dir}/block ]; then echo $$ > ${dir}/started; sleep 300; fi; echo after restart`;
      const workflow = (await client.post("/api/workflows", { name: "R", mode: "fresh", runner: { kind: "command", command } })).body;
      writeFileSync(join(dir, "block"), "");
      const running = (await client.post(`/api/workflows/${workflow.id}/runs`, {})).body.id;
      await waitFor(() => existsSync(join(dir, "started")), "the first run to start");
      rmSync(join(dir, "block"));
      const queued = (await client.post(`/api/workflows/${workflow.id}/runs`, {})).body.id;
      await first.stop();

      await using second = await startHatch(config);
      const again = await logIn(second.url, user.email, project.slug);
      expect((await again.get(`/api/workflows/${workflow.id}/runs/${running}`)).body).toMatchObject({ status: "failed", error: "The server stopped while this run was working" });
      expect(answers(await waitForRun(again, workflow.id, queued))).toEqual(["after restart"]);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("a run waiting to retry keeps its wait across a restart, then retries", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "hatch-retry-"));
    await using openai = startFakeOpenAi({ apiKey: "sk-retry" });
    try {
      const config = loadConfig({ HATCH_PORT: "0", HATCH_COMPANION_PORT: "0", HATCH_DATA_DIR: dataDir });
      const first = await startHatch(config, { workflows: { retryDelaysMs: [4_000] } });
      const user = await first.platform.users.create("maker@example.com", TEST_PASSWORD);
      first.platform.projects.create("retry", "Retry", user.id);
      const client = await logIn(first.url, user.email);
      await client.put("/api/secrets/project/openai-key", { value: "sk-retry" });
      const runner = { kind: "openai", baseUrl: openai.baseUrl, model: "m", apiKeySecret: "openai-key" };
      const workflow = (await client.post("/api/workflows", { name: "B", runner })).body;
      openai.reply({ status: 503 });
      const runId = (await client.post(`/api/workflows/${workflow.id}/runs`, { text: "hi" })).body.id;
      await waitFor(async () => (await client.get(`/api/workflows/${workflow.id}/runs/${runId}`)).body.status === "waiting-retry", "waiting-retry");
      await first.stop();

      await using second = await startHatch(config, { workflows: { retryDelaysMs: [4_000] } });
      const row = () => second.sqlite.query("SELECT status, retry_at AS retryAt FROM workflow_runs WHERE id = ?").get(runId) as { status: string; retryAt: number };
      // Not retried at once: the endpoint saw one request, and the run still waits.
      await Bun.sleep(200);
      expect({ requests: openai.requests.length, status: row().status }).toEqual({ requests: 1, status: "waiting-retry" });
      await waitFor(() => row().status === "succeeded", "the retry at its time");
      expect(openai.requests.length).toBe(2);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

/** Until `accept()`, the database refuses to record a run's end with these statuses (a lock held past the busy timeout, a full disk). */
function refuseRunEnds(world: World, statuses = "'succeeded', 'failed', 'cancelled'") {
  world.hatch.sqlite.exec(`CREATE TRIGGER refused BEFORE UPDATE OF status ON workflow_runs WHEN NEW.status IN (${statuses}) BEGIN SELECT RAISE(ABORT, 'database is locked'); END`);
  return { accept: () => world.hatch.sqlite.exec("DROP TRIGGER refused") };
}

/** What the server logs as errors meanwhile (each refusal is logged), kept off the test's output; restored at disposal. */
function loggedErrors() {
  const lines: string[] = [];
  const spy = spyOn(console, "error").mockImplementation((...args: unknown[]) => void lines.push(args.map(String).join(" ")));
  return Object.assign(lines, { [Symbol.dispose]: () => spy.mockRestore() });
}

/** Wait until the server logged that it will try run `runId`'s outcome (any run's, for null) again in `seconds`. */
function refusedUntil(logged: string[], runId: string | null, seconds: number, error = "database is locked") {
  const said = (line: string) => line.includes(`ended (${error}); trying again in ${seconds} s`) && (runId === null || line.includes(`cannot record how run ${runId} ended`));
  return waitFor(() => logged.some(said), `a refusal of the outcome, tried again in ${seconds} s`);
}

/**
 * Fire a run of `echo tick` and wait until its outcome (succeeded) was refused
 * twice: the run still shows running, and the next try is 5 s away.
 */
async function answeredButRefusedTwice(world: World, member: Person, logged: string[]) {
  const refusal = refuseRunEnds(world);
  const workflow = await commandWorkflow(member, "echo tick", { mode: "fresh" });
  const { token } = await issueToken(member.client, workflow.id);
  const { runId } = (await fire(world, workflow.id, token)).body as { runId: string };
  await refusedUntil(logged, runId, 5);
  return { workflowId: workflow.id, runId, refusal };
}

describe("an outcome the database refuses", () => {
  test("is recorded, as it was, once the database takes writes again: the run does not stay running, and its schedule fires again", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    const refusal = refuseRunEnds(world);
    using logged = loggedErrors();
    const workflow = await commandWorkflow(member, "echo tick", { schedule: "* * * * * *", mode: "fresh" });
    await refusedUntil(logged, null, 1);
    const runs = async () => (await member.client.get(`/api/workflows/${workflow.id}/runs`)).body.runs as Run[];
    // While it is refused, the run stays running and the schedule waits for it.
    expect((await runs()).map((run) => run.status)).toEqual(["running"]);
    refusal.accept();
    const first = await waitFor(async () => (await runs()).find((run) => run.number === 1 && isFinished(run)), "the first run's outcome to be recorded");
    expect({ status: first.status, error: first.error }).toEqual({ status: "succeeded", error: null });
    expect(answers(await (await member.client.get(`/api/workflows/${workflow.id}/runs/${first.id}`)).body)).toEqual(["tick"]);
    await waitFor(async () => (await runs()).some((run) => run.number > 1 && run.status === "succeeded"), "the schedule to fire again");
  });

  test("gets a last try when the server stops, so a stop does not turn a finished run into a stopped one", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    {
      using logged = loggedErrors();
      // The database takes writes again and the server stops while the next try is still 5 s away.
      const { refusal } = await answeredButRefusedTwice(world, member, logged);
      refusal.accept();
      await world.hatch.stop();
    }
    using reader = new Database(join(world.config.dataDir, DATABASE_FILE), { readonly: true });
    expect(reader.query("SELECT status, error FROM workflow_runs").all()).toEqual([{ status: "succeeded", error: null }]);
  });

  test("is tried again by a cancel, which does not rewrite a finished run as cancelled before it started", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    using logged = loggedErrors();
    const { workflowId, runId, refusal } = await answeredButRefusedTwice(world, member, logged);
    // The database takes writes again (the lock is released); the run still shows running, and someone cancels it.
    refusal.accept();
    const cancelled = await member.client.post(`/api/workflows/${workflowId}/runs/${runId}/cancel`);
    const run = await waitForRun(member.client, workflowId, runId);
    // The cancel stopped nothing: the run had finished its turn, as a cancel landing after the answer is answered.
    expect({ cancel: cancelled.status, status: run.status, cancelled: run.cancelled ?? null, answers: answers(run) }).toEqual({ cancel: 409, status: "succeeded", cancelled: null, answers: ["tick"] });
  });

  test("of a cancel of a queued run answers 503, and is recorded once the database takes it: the run never starts", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    // One-thread runs of a workflow run one at a time: the second waits in the pool's queue behind the first.
    const workflow = await commandWorkflow(member, "sleep 1; echo tick", { mode: "one-thread" });
    const { token } = await issueToken(member.client, workflow.id);
    const first = (await fire(world, workflow.id, token)).body.runId as string;
    const second = (await fire(world, workflow.id, token)).body.runId as string;
    await waitForRun(member.client, workflow.id, first, (run) => run.status === "running");
    // The database refuses writes for a moment just as the queued run is cancelled.
    let cancel: number;
    {
      const refusal = refuseRunEnds(world, "'cancelled'");
      using _logged = loggedErrors();
      cancel = (await member.client.post(`/api/workflows/${workflow.id}/runs/${second}/cancel`)).status;
      refusal.accept();
    }
    await waitForRun(member.client, workflow.id, first);
    // The database takes writes again: the cancel is recorded at its next try, as a run's outcome is.
    const ended = await waitFor(async () => {
      const run = (await member.client.get(`/api/workflows/${workflow.id}/runs/${second}`)).body as Run;
      return isFinished(run) ? run : null;
    }, "the cancelled run to end", 8000);
    expect({ cancel, status: ended.status, cancelled: ended.cancelled, answers: answers(ended) }).toEqual({ cancel: 503, status: "cancelled", cancelled: "before-start", answers: [] });
  });

  test("and a failure's audit entry are one write: an entry refused once is written when the outcome is tried again", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    // The row's update fits in place; the audit entry needs a new page and the disk is full (or the lock came back between the two writes).
    world.hatch.sqlite.exec("CREATE TRIGGER refused BEFORE INSERT ON audit_log WHEN NEW.action = 'workflow.run.failed' BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END");
    using logged = loggedErrors();
    const workflow = await commandWorkflow(member, "echo broken >&2; exit 3", { mode: "fresh" });
    const { token } = await issueToken(member.client, workflow.id);
    const { runId } = (await fire(world, workflow.id, token)).body;
    await refusedUntil(logged, runId, 1, "database or disk is full");
    world.hatch.sqlite.exec("DROP TRIGGER refused");
    // Refused, neither the row's end nor the entry was kept, and the retry a second later writes both.
    const audited = () => countRows(world, "audit_log", "action = 'workflow.run.failed' AND target = ?", runId);
    await waitFor(() => audited() > 0, "the failure's audit entry");
    const run = await waitForRun(member.client, workflow.id, runId);
    expect({ status: run.status, audited: audited() }).toEqual({ status: "failed", audited: 1 });
  });
});
