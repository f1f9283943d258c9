import { Database } from "bun:sqlite";
import { describe, expect, spyOn, test } from "bun:test";
import { join } from "node:path";
import { DATABASE_FILE } from "../../src/db/index.ts";
import { HatchError } from "../../src/platform/index.ts";
import type { FireRequest, Run } from "../../src/workflows/index.ts";
import { waitFor } from "../helpers/wait-for.ts";
import { startWorld, type Person, type World } from "../helpers/world.ts";
import { commandWorkflow, countRows, fire, issueToken } from "../helpers/workflows.ts";

/** A second connection to the world's database, as another process (or the server after a crash) would read it. */
function secondConnection(world: World): Database {
  const reader = new Database(join(world.config.dataDir, DATABASE_FILE), { readonly: true });
  world.onDispose(() => reader.close());
  return reader;
}

/** A manual fire of `workflowId` by `person` with `text`. */
function manualFire(person: Person, workflowId: string, text: string): FireRequest {
  return { workflowId, trigger: { id: null, kind: "manual" }, text, source: { kind: "manual", userId: person.user.id, email: person.user.email } };
}

/** Make the INSERT of a run whose text is "poison" fail inside SQLite: only that write fails. */
function failRunInsert(world: World): () => void {
  world.hatch.sqlite.exec("CREATE TRIGGER poison BEFORE INSERT ON workflow_runs WHEN NEW.input_text = 'poison' BEGIN SELECT RAISE(ABORT, 'the disk is on fire'); END");
  return () => world.hatch.sqlite.exec("DROP TRIGGER poison");
}

/**
 * Make the COMMIT of a transaction holding a run whose text is "poison" fail:
 * its INSERT succeeds but leaves a deferred foreign-key violation behind, which
 * SQLite only checks at COMMIT, so the whole transaction rolls back.
 */
function failRunCommit(world: World): () => void {
  world.hatch.sqlite.exec("CREATE TABLE commit_guard (workflow_id TEXT REFERENCES workflows(id) DEFERRABLE INITIALLY DEFERRED)");
  world.hatch.sqlite.exec("CREATE TRIGGER poison AFTER INSERT ON workflow_runs WHEN NEW.input_text = 'poison' BEGIN INSERT INTO commit_guard VALUES ('wf-gone'); END");
  return () => world.hatch.sqlite.exec("DROP TRIGGER poison; DROP TABLE commit_guard");
}

/** What each settled fire came to: its run number, or the code and status it was refused with. */
function outcomes(settled: PromiseSettledResult<Run>[]) {
  return settled.map((r) => (r.status === "fulfilled" ? r.value.number : r.reason instanceof HatchError ? { code: r.reason.code, status: r.reason.status } : String(r.reason)));
}

describe("recording runs in group commits", () => {
  test("fires of one turn are written in one transaction, numbered in order, and each resolves only once its row is readable by another connection", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    const workflow = await commandWorkflow(member, "echo ok", { mode: "fresh" });
    const { engine, runs } = world.hatch.workflows;
    const reader = secondConnection(world);
    const before = runs.commitStats();

    const storedWhenResolved: unknown[] = [];
    const fires = [1, 2, 3, 4, 5].map((i) =>
      engine.fire(manualFire(member, workflow.id, `fire ${i}`)).then((run) => {
        storedWhenResolved.push(reader.query("SELECT number, status FROM workflow_runs WHERE id = ?").get(run.id));
        return run;
      }),
    );
    expect(countRows(world, "workflow_runs")).toBe(0);
    const fired = await Promise.all(fires);

    expect(fired.map((run) => ({ number: run.number, text: run.input.text }))).toEqual([1, 2, 3, 4, 5].map((i) => ({ number: i, text: `fire ${i}` })));
    expect(storedWhenResolved).toEqual([1, 2, 3, 4, 5].map((number) => ({ number, status: "queued" })));
    expect(runs.commitStats()).toEqual({ ...before, commits: before.commits + 1, writes: before.writes + 5 });
  });

  test("a failed commit rejects every fire of its transaction with 500 run_not_recorded: no row, nothing queued or counted, and the next fire is numbered 1", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const member = await world.signedIn(project, "member");
    const workflow = await commandWorkflow(member, "echo ok", { mode: "fresh" });
    const { token } = await issueToken(member.client, workflow.id);
    const { engine, pool, limits } = world.hatch.workflows;
    const cure = failRunCommit(world);
    const logged = spyOn(console, "error").mockImplementation(() => {});
    try {
      const batch = await Promise.allSettled(["a", "poison", "b"].map((text) => engine.fire(manualFire(member, workflow.id, text))));
      expect(outcomes(batch)).toEqual(Array.from({ length: 3 }, () => ({ code: "run_not_recorded", status: 500 })));
      expect(logged.mock.calls.map((call) => call[0])).toEqual(["hatch: 3 run(s) could not be recorded"]);

      const overHttp = await fire(world, workflow.id, token, { text: "poison" });
      expect({ status: overHttp.status, body: overHttp.body }).toEqual({
        status: 500,
        body: { error: { code: "run_not_recorded", message: "Cannot fire: the run could not be recorded, so nothing was queued" } },
      });
    } finally {
      logged.mockRestore();
      cure();
    }
    expect(countRows(world, "workflow_runs")).toBe(0);
    expect(pool.stats()).toMatchObject({ running: 0, queued: 0, delayed: 0, peakRunning: 0 });
    expect(limits.usage(project.id).runs).toBe(0);

    const next = await engine.fire(manualFire(member, workflow.id, "after the failure"));
    expect(next.number).toBe(1);
    expect(limits.usage(project.id).runs).toBe(1);
  });

  test("a run row that fails on its own rejects only its fire; the others of its transaction are written, numbered without a gap, and run", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const member = await world.signedIn(project, "member");
    const workflow = await commandWorkflow(member, "echo ok", { mode: "fresh" });
    const { engine, limits, runs } = world.hatch.workflows;
    const before = runs.commitStats();
    const cure = failRunInsert(world);
    const logged = spyOn(console, "error").mockImplementation(() => {});
    let batch: PromiseSettledResult<Run>[];
    try {
      batch = await Promise.allSettled(["a", "poison", "b"].map((text) => engine.fire(manualFire(member, workflow.id, text))));
      expect(logged.mock.calls.map((call) => call[0])).toEqual(["hatch: 1 run(s) could not be recorded"]);
    } finally {
      logged.mockRestore();
      cure();
    }
    expect(outcomes(batch)).toEqual([1, { code: "run_not_recorded", status: 500 }, 2]);
    expect(runs.commitStats()).toEqual({ ...before, commits: before.commits + 1, writes: before.writes + 2, failed: before.failed + 1 });
    expect(limits.usage(project.id).runs).toBe(2);
    await waitFor(() => countRows(world, "workflow_runs", "status = 'succeeded'") === 2, "both written runs to run");
    expect((await engine.fire(manualFire(member, workflow.id, "next"))).number).toBe(3);
  });

  test("a burst past the spend limit: fires up to the limit are accepted, the rest are refused with 429 and audited, in one turn and over HTTP", async () => {
    await using world = await startWorld({}, { fireRatePerMinute: 0 });
    const project = await world.project();
    const member = await world.signedIn(project, "member");
    const workflow = await commandWorkflow(member, "echo ok", { mode: "fresh" });
    const { token } = await issueToken(member.client, workflow.id);
    const { engine, limits } = world.hatch.workflows;

    limits.set(project.id, { runsPerDay: 3, tokensPerDay: 100 });
    const oneTurn = await Promise.allSettled([1, 2, 3, 4, 5].map((i) => engine.fire(manualFire(member, workflow.id, `turn ${i}`))));
    expect(oneTurn.map((r) => (r.status === "fulfilled" ? r.value.number : (r.reason as HatchError).code))).toEqual([1, 2, 3, "spend_limit_reached", "spend_limit_reached"]);

    limits.set(project.id, { runsPerDay: 6, tokensPerDay: 100 });
    const overHttp = await Promise.all([1, 2, 3, 4, 5].map((i) => fire(world, workflow.id, token, { text: `http ${i}` })));
    expect(overHttp.map((r) => r.status).sort()).toEqual([202, 202, 202, 429, 429]);

    expect(countRows(world, "workflow_runs")).toBe(6);
    expect(limits.usage(project.id).runs).toBe(6);
    expect(world.platform.audit.query({ projectId: project.id, action: "workflow.fire.refused" }).map((e) => e.detail)).toEqual([
      ...Array.from({ length: 2 }, () => ({ code: "spend_limit_reached", limit: "runs", trigger: "webhook" })),
      ...Array.from({ length: 2 }, () => ({ code: "spend_limit_reached", limit: "runs", trigger: "manual" })),
    ]);
  });
});
