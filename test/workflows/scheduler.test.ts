import { describe, expect, spyOn, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../src/config.ts";
import { startHatch } from "../../src/main.ts";
import { WorkflowScheduler } from "../../src/workflows/index.ts";
import { waitFor } from "../helpers/wait-for.ts";
import { logIn, startWorld, TEST_PASSWORD } from "../helpers/world.ts";
import { answers, commandWorkflow, countRows } from "../helpers/workflows.ts";

/** Every second (croner's 6-field form): the shortest schedule, so the test waits about a second. */
const EVERY_SECOND = "* * * * * *";

describe("the scheduler", () => {
  test("a cron schedule fires the workflow in-process; pausing or going manual stops it; deleting forgets it", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    const workflow = await commandWorkflow(member, "echo tick", { schedule: EVERY_SECOND, mode: "fresh" });
    const { scheduler } = world.hatch.workflows;
    expect(scheduler.scheduledIds()).toEqual([workflow.id]);
    const run = await waitFor(async () => (await member.client.get(`/api/workflows/${workflow.id}/runs?status=succeeded`)).body.runs[0], "a scheduled run");
    expect(run).toMatchObject({ trigger: { id: null, kind: "schedule" }, input: { text: null, source: { kind: "schedule", schedule: EVERY_SECOND } } });
    expect(answers(run)).toEqual(["tick"]);

    await member.client.request("PATCH", `/api/workflows/${workflow.id}`, { status: "paused" });
    expect(scheduler.scheduledIds()).toEqual([]);
    await member.client.request("PATCH", `/api/workflows/${workflow.id}`, { status: "active", schedule: "manual" });
    expect(scheduler.scheduledIds()).toEqual([]);
    await member.client.request("PATCH", `/api/workflows/${workflow.id}`, { schedule: "0 9 * * *" });
    expect(scheduler.scheduledIds()).toEqual([workflow.id]);
    await member.client.delete(`/api/workflows/${workflow.id}`);
    expect(scheduler.scheduledIds()).toEqual([]);
  });

  test("a scheduled fire past the spend limit records no run and is audited", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    await owner.client.put("/api/workflows/spend-limit", { runsPerDay: 0, tokensPerDay: 0 });
    const workflow = await commandWorkflow(owner, "echo tick", { schedule: EVERY_SECOND });
    const refusal = await waitFor(() => world.platform.audit.query({ projectId: project.id, action: "workflow.fire.refused" })[0], "a refused scheduled fire");
    expect(refusal).toMatchObject({ target: workflow.id, detail: { code: "spend_limit_reached", limit: "runs", trigger: "schedule" } });
    expect(countRows(world, "workflow_runs")).toBe(0);
  });

  test("a schedule refused tick after tick is audited once, and again after one of its fires was accepted", async () => {
    await using world = await startWorld();
    const project = await world.project("spent");
    const owner = await world.signedIn(project, "owner");
    // Another project's workflow on the same schedule, with budget left, is the clock that shows the ticks came.
    const clockOwner = await world.signedIn(await world.project("clock"), "owner");
    const clock = await commandWorkflow(clockOwner, "echo tick", { schedule: EVERY_SECOND, mode: "fresh" });
    const ticks = async () => (await clockOwner.client.get(`/api/workflows/${clock.id}/runs?status=succeeded`)).body.runs.length as number;
    await owner.client.put("/api/workflows/spend-limit", { runsPerDay: 0, tokensPerDay: 0 });
    const workflow = await commandWorkflow(owner, "echo tick", { schedule: EVERY_SECOND, mode: "fresh" });
    const refusals = () => world.platform.audit.query({ projectId: project.id, action: "workflow.fire.refused" });
    await waitFor(() => refusals().length === 1, "the first refusal");
    const seen = await ticks();
    await waitFor(async () => (await ticks()) >= seen + 3, "three more ticks");
    expect(refusals()).toHaveLength(1);

    await owner.client.put("/api/workflows/spend-limit", { runsPerDay: 1000, tokensPerDay: 0 });
    await waitFor(async () => (await owner.client.get(`/api/workflows/${workflow.id}/runs?status=succeeded`)).body.runs.length > 0, "an accepted fire");
    await owner.client.put("/api/workflows/spend-limit", { runsPerDay: 0, tokensPerDay: 0 });
    await waitFor(() => refusals().length === 2, "the refusal after the accepted fire");
    expect(refusals().map((e) => e.detail)).toEqual([
      { code: "spend_limit_reached", limit: "runs", trigger: "schedule" },
      { code: "spend_limit_reached", limit: "runs", trigger: "schedule" },
    ]);
  });

  test("a schedule faster than its runs has one run at a time, even in fresh mode: the ticks meanwhile are skipped, and it fires again once the run finished", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    // Another workflow on the same schedule is the clock that shows the ticks came.
    const clock = await commandWorkflow(member, "echo tick", { schedule: EVERY_SECOND, mode: "fresh" });
    const ticks = async () => (await member.client.get(`/api/workflows/${clock.id}/runs?status=succeeded`)).body.runs.length as number;
    const warned = spyOn(console, "warn").mockImplementation(() => {});
    try {
      // Fresh runs do not wait for each other: without the skip each tick would take another worker slot.
      const slow = await commandWorkflow(member, "sleep 300", { schedule: EVERY_SECOND, mode: "fresh" });
      const runs = async () => (await member.client.get(`/api/workflows/${slow.id}/runs`)).body.runs as { id: string; number: number; status: string }[];
      await waitFor(async () => (await runs()).some((r) => r.status === "running"), "the first scheduled run to start");
      const seen = await ticks();
      await waitFor(async () => (await ticks()) >= seen + 3, "three more ticks");
      const held = await runs();
      expect(held.map((r) => r.status)).toEqual(["running"]);
      const skips = warned.mock.calls.map(([line]) => String(line)).filter((line) => line.includes(slow.id));
      expect(skips).toHaveLength(1);
      expect(skips[0]).toContain("skipping the scheduled fires");

      // The run ends; the next tick fires again.
      expect((await member.client.post(`/api/workflows/${slow.id}/runs/${held[0]!.id}/cancel`, {})).status).toBe(200);
      await waitFor(async () => (await runs()).length === 2, "a second scheduled run");
    } finally {
      warned.mockRestore();
    }
  });

  test("editing the schedule, or pausing and resuming, while a scheduled run works does not start a second scheduled run beside it", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    // Another workflow on the same schedule is the clock that shows the ticks came.
    const clock = await commandWorkflow(member, "echo tick", { schedule: EVERY_SECOND, mode: "fresh" });
    const ticks = async () => (await member.client.get(`/api/workflows/${clock.id}/runs?status=succeeded`)).body.runs.length as number;
    const threeMoreTicks = async () => {
      const seen = await ticks();
      await waitFor(async () => (await ticks()) >= seen + 3, "three more ticks");
    };
    const warned = spyOn(console, "warn").mockImplementation(() => {});
    try {
      const slow = await commandWorkflow(member, "sleep 300", { schedule: EVERY_SECOND, mode: "fresh" });
      const unfinished = async () =>
        ((await member.client.get(`/api/workflows/${slow.id}/runs`)).body.runs as { status: string }[]).filter((r) => ["queued", "waiting-retry", "running"].includes(r.status)).length;
      await waitFor(async () => (await unfinished()) === 1, "the first scheduled run to start");
      expect((await member.client.patch(`/api/workflows/${slow.id}`, { schedule: "*/2 * * * * *" })).status).toBe(200);
      await threeMoreTicks();
      const afterEdit = await unfinished();
      await member.client.patch(`/api/workflows/${slow.id}`, { status: "paused" });
      await member.client.patch(`/api/workflows/${slow.id}`, { status: "active" });
      await threeMoreTicks();
      expect({ afterEdit, afterResume: await unfinished() }).toEqual({ afterEdit: 1, afterResume: 1 });
    } finally {
      warned.mockRestore();
    }
  });

  test("a stored schedule croner refuses (a row from before a stricter check) is reported and skipped; the other schedules start", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    const good = await commandWorkflow(member, "echo tick", { schedule: "0 9 * * *" });
    const stale = await commandWorkflow(member, "echo tick", { schedule: "0 10 * * *" });
    world.hatch.sqlite.query("UPDATE workflows SET schedule = '61 * * * *' WHERE id = ?").run(stale.id);
    const errors: string[] = [];
    await using scheduler = new WorkflowScheduler({
      workflows: world.hatch.workflows.workflows,
      fire: async () => ({ id: "never" }),
      unfinished: () => false,
      onError: (error) => errors.push((error as Error).message),
    });
    scheduler.start();
    expect(scheduler.scheduledIds()).toEqual([good.id]);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toStartWith(`The schedule "61 * * * *" of workflow ${stale.id} cannot be run, so it will not fire: `);
  });

  test("a scheduled run still queued when the server stopped is the schedule's one run after the restart: the new server's ticks wait for it", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "hatch-sched-restart-"));
    const dir = mkdtempSync(join(tmpdir(), "hatch-trace-"));
    const warned = spyOn(console, "warn").mockImplementation(() => {});
    try {
      const config = loadConfig({ HATCH_PORT: "0", HATCH_COMPANION_PORT: "0", HATCH_DATA_DIR: dataDir });
      // One worker, held by a manual run, so the schedule's first run stays queued when the server stops.
      const first = await startHatch(config, { workflows: { poolSize: 1 } });
      const user = await first.platform.users.create("maker@example.com", TEST_PASSWORD);
      first.platform.projects.create("sched", "Sched", user.id);
      const client = await logIn(first.url, user.email);
      const blocker = (await client.post("/api/workflows", { name: "blocker", mode: "fresh", runner: { kind: "command", command: `touch ${dir}/blocker; sleep 300` } })).body;
      await client.post(`/api/workflows/${blocker.id}/runs`, {});
      await waitFor(() => existsSync(join(dir, "blocker")), "the blocker to hold the only worker");
      // Each scheduled run works for a long time: the schedule must never have two beside each other.
      const slow = (await client.post("/api/workflows", { name: "slow", mode: "fresh", schedule: "* * * * * *", runner: { kind: "command", command: "sleep 300" } })).body;
      const runs = async (c: typeof client) => (await c.get(`/api/workflows/${slow.id}/runs`)).body.runs as { status: string }[];
      await waitFor(async () => (await runs(client)).length === 1, "the first scheduled run (queued)");
      await Bun.sleep(2500);
      expect((await runs(client)).map((r) => r.status)).toEqual(["queued"]);
      await first.stop();

      await using second = await startHatch(config, { workflows: { poolSize: 4 } });
      const again = await logIn(second.url, user.email, "sched");
      // The queued run is recovered and works; the ticks of the next seconds must be skipped for it.
      await waitFor(async () => (await runs(again)).some((r) => r.status === "running"), "the recovered scheduled run to start");
      await Bun.sleep(3500);
      const unfinished = (await runs(again)).filter((r) => ["queued", "waiting-retry", "running"].includes(r.status));
      expect(unfinished.map((r) => `#${(r as { number?: number }).number} ${r.status}`)).toEqual(["#1 running"]);
    } finally {
      warned.mockRestore();
      rmSync(dataDir, { recursive: true, force: true });
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("a schedule whose creator's role lost the agent package does not spend the project's runs per day: the owner's own workflows still fire", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    const member = await world.signedIn(project, "member");
    await owner.client.put("/api/workflows/spend-limit", { runsPerDay: 3, tokensPerDay: 0 });
    const scheduled = await commandWorkflow(member, "echo tick", { schedule: EVERY_SECOND, mode: "fresh", status: "paused" });
    // The owner switches the agent package off for members: the member's runs can only end package-off from now on.
    expect((await owner.client.put("/api/packages/agent/access", { feature: "agent.access" })).status).toBe(200);
    // The owner (who manages every workflow) makes it active: its schedule ticks every second.
    expect((await owner.client.patch(`/api/workflows/${scheduled.id}`, { status: "active" })).status).toBe(200);
    await Bun.sleep(4500);
    const runsOfSchedule = countRows(world, "workflow_runs", "workflow_id = ?", scheduled.id);
    const own = await commandWorkflow(owner, "echo mine");
    const manual = await owner.client.post(`/api/workflows/${own.id}/runs`, {});
    expect({ runsOfSchedule, manual: manual.status, code: manual.body.error?.code ?? null }).toEqual({ runsOfSchedule: 0, manual: 202, code: null });
    // Nobody is answered, so the refusal is on the record: once, not at every tick.
    const refusals = world.hatch.sqlite.query("SELECT detail FROM audit_log WHERE action = 'workflow.fire.refused' AND target = ?").all(scheduled.id) as { detail: string }[];
    expect(refusals.map((row) => JSON.parse(row.detail))).toEqual([
      { code: "creator_not_permitted", reason: `the agent package is switched off for its creator's role "member"`, trigger: "schedule" },
    ]);
  });
});

describe("the audit of a schedule's refusals", () => {
  test("a schedule refused for a new reason is audited again, even when the code stays creator_not_permitted: the record must not keep saying what the owner already fixed", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    const member = await world.signedIn(project, "member");
    const scheduled = await commandWorkflow(member, "echo tick", { schedule: EVERY_SECOND, mode: "fresh", status: "paused" });
    // Two things wrong at once: the member's role lost core.execute, and the agent package is off for it.
    expect((await owner.client.delete("/api/roles/member/features/core.execute")).status).toBe(200);
    expect((await owner.client.put("/api/packages/agent/access", { feature: "agent.access" })).status).toBe(200);
    expect((await owner.client.patch(`/api/workflows/${scheduled.id}`, { status: "active" })).status).toBe(200);
    const refusals = () =>
      (world.hatch.sqlite.query("SELECT detail FROM audit_log WHERE action = 'workflow.fire.refused' AND target = ? ORDER BY rowid").all(scheduled.id) as { detail: string }[]).map(
        (row) => JSON.parse(row.detail).reason as string,
      );
    await waitFor(() => refusals().length === 1, "the first refusal");
    // The owner fixes the first (the one the record names); the schedule is now refused for the other one.
    expect((await owner.client.put("/api/roles/member/features/core.execute", {})).status).toBe(200);
    await Bun.sleep(3000);
    expect(countRows(world, "workflow_runs", "workflow_id = ?", scheduled.id)).toBe(0);
    expect(refusals()).toEqual([`its creator's role "member" lacks the feature "core.execute" its runs need`, `the agent package is switched off for its creator's role "member"`]);
  });

  test("a schedule whose refusal changes and changes back is audited at each change: the record always says what refuses it now", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    const member = await world.signedIn(project, "member");
    await owner.client.put("/api/workflows/spend-limit", { runsPerDay: 0, tokensPerDay: 0 });
    const scheduled = await commandWorkflow(member, "echo tick", { schedule: EVERY_SECOND, mode: "fresh" });
    const refusals = () =>
      (world.hatch.sqlite.query("SELECT detail FROM audit_log WHERE action = 'workflow.fire.refused' AND target = ? ORDER BY rowid").all(scheduled.id) as { detail: string }[]).map(
        (row) => JSON.parse(row.detail).code as string,
      );
    await waitFor(() => refusals().length === 1, "the budget's refusal");
    expect((await owner.client.delete("/api/roles/member/features/core.execute")).status).toBe(200);
    await waitFor(() => refusals().length === 2, "the creator's refusal");
    expect((await owner.client.put("/api/roles/member/features/core.execute", {})).status).toBe(200);
    await waitFor(() => refusals().length === 3, "the budget's refusal again");
    expect(refusals()).toEqual(["spend_limit_reached", "creator_not_permitted", "spend_limit_reached"]);
    expect(countRows(world, "workflow_runs", "workflow_id = ?", scheduled.id)).toBe(0);
  });

  test("a schedule's refusal whose audit entry could not be written is written at a later tick", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    await owner.client.put("/api/workflows/spend-limit", { runsPerDay: 0, tokensPerDay: 0 });
    const sqlite = world.hatch.sqlite;
    sqlite.exec("CREATE TRIGGER refusal_entry_fails BEFORE INSERT ON audit_log WHEN NEW.action = 'workflow.fire.refused' BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END");
    const failedWrites = spyOn(console, "error").mockImplementation(() => {});
    try {
      const scheduled = await commandWorkflow(owner, "echo tick", { schedule: EVERY_SECOND, mode: "fresh" });
      const refusals = () => world.platform.audit.query({ projectId: project.id, action: "workflow.fire.refused" });
      await waitFor(() => failedWrites.mock.calls.length > 0, "a tick whose refusal could not be recorded");
      sqlite.exec("DROP TRIGGER refusal_entry_fails");
      await waitFor(() => refusals().length === 1, "the refusal recorded at a later tick");
      expect(refusals()[0]).toMatchObject({ target: scheduled.id, detail: { code: "spend_limit_reached", limit: "runs", trigger: "schedule" } });
    } finally {
      failedWrites.mockRestore();
    }
  });
});
