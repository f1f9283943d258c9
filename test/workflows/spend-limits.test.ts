import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "../../src/db/index.ts";
import { SpendLimits } from "../../src/workflows/index.ts";

const HOUR = 3600_000;
/** 10:20 UTC on a day: twenty minutes into its hour. */
const FIRED_AT = Date.UTC(2026, 10, 23, 10, 20);

/** A migrated database in a temp dir and spend limits reading a clock the test moves. */
function limitsAt(start: number) {
  const dir = mkdtempSync(join(tmpdir(), "hatch-spend-"));
  const database = openDatabase(join(dir, "hatch.db"));
  const clock = { now: start };
  const { sqlite } = database;
  return {
    database,
    clock,
    limits: () => new SpendLimits(database.db, () => clock.now),
    /** Project `p` with workflows of these ids (written straight to the tables, as an earlier process left them). */
    workflows(...ids: string[]) {
      sqlite.exec(`INSERT INTO projects (id, slug, name, created_at) VALUES ('p', 'p', 'P', 0)`);
      const add = sqlite.prepare(
        `INSERT INTO workflows (id, project_id, name, instruction, runner, runner_config, mode, status, schedule, created_by, created_at, updated_at) VALUES (?, 'p', ?, '', 'command', '{}', 'fresh', 'active', 'manual', 'u', 0, 0)`,
      );
      for (const id of ids) add.run(id, id);
    },
    /** A finished run of `workflowId` that spent `tokens`, fired at `queuedAt` (and started then, unless `startedAt` says otherwise). */
    run(id: string, workflowId: string, number: number, tokens: number, queuedAt: number, startedAt = queuedAt) {
      sqlite
        .prepare(
          `INSERT INTO workflow_runs (id, workflow_id, project_id, number, trigger_kind, mode, status, source, tokens_used, queued_at, started_at) VALUES (?, ?, 'p', ?, 'manual', 'fresh', 'succeeded', '{}', ?, ?, ?)`,
        )
        .run(id, workflowId, number, tokens, queuedAt, startedAt);
    },
    [Symbol.dispose]() {
      database.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

describe("spend limits over a day counted in whole hours", () => {
  test("a run fired at 10:20 counts until 11:00 the next day, between 24 and 25 hours after its fire", () => {
    using setup = limitsAt(FIRED_AT);
    const limits = setup.limits();
    limits.recordRuns("p", FIRED_AT, 1);
    limits.recordTokens("p", 70);
    const usageAt = (at: number) => {
      setup.clock.now = at;
      return limits.usage("p");
    };
    expect(usageAt(FIRED_AT + 24 * HOUR - 1)).toEqual({ runs: 1, tokens: 70 });
    // 10:59 the next day still counts yesterday's 10:00 hour; 11:00 (24 h 40 min after the fire) no longer does.
    expect(usageAt(Date.UTC(2026, 10, 24, 10, 59))).toEqual({ runs: 1, tokens: 70 });
    expect(usageAt(Date.UTC(2026, 10, 24, 11, 0))).toEqual({ runs: 0, tokens: 0 });
  });

  test("a new process loads the window's usage from the run rows, and the limit refuses the run past it", () => {
    using setup = limitsAt(FIRED_AT);
    setup.workflows("w");
    // Two runs in the window (one at its oldest hour), one just before it.
    setup.run("run-1", "w", 1, 5, Date.UTC(2026, 10, 22, 10, 0));
    setup.run("run-2", "w", 2, 7, FIRED_AT - HOUR);
    setup.run("run-0", "w", 3, 100, Date.UTC(2026, 10, 22, 9, 59));
    const limits = setup.limits();
    expect(limits.usage("p")).toEqual({ runs: 2, tokens: 12 });
    limits.set("p", { runsPerDay: 3, tokensPerDay: 1000 });
    expect(() => limits.check("p", false)).not.toThrow();
    limits.recordRuns("p", FIRED_AT, 1);
    expect(() => limits.check("p", false)).toThrow("The project's spend limit of 3 runs per day is reached");
  });

  test("tokens count in the hour they were spent, not the hour of the fire: a run fired 30 hours ago that ran an hour ago counts its tokens, not itself", () => {
    using setup = limitsAt(FIRED_AT);
    const { sqlite } = setup.database;
    setup.workflows("w", "gone");
    setup.run("late", "w", 1, 40, FIRED_AT - 30 * HOUR, FIRED_AT - HOUR);
    setup.run("late-gone", "gone", 1, 2, FIRED_AT - 30 * HOUR, FIRED_AT - HOUR);
    const limits = setup.limits();
    // As it happens: the fire long ago, the tokens now.
    limits.recordRuns("p", FIRED_AT - 30 * HOUR, 1);
    limits.recordTokens("p", 5);
    expect(limits.usage("p")).toEqual({ runs: 0, tokens: 42 + 5 });
    // After a restart, from the rows, and from what a deleted workflow's runs spent.
    limits.deleteKeepingUsage("gone", () => sqlite.exec(`DELETE FROM workflows WHERE id = 'gone'`));
    expect(setup.limits().usage("p")).toEqual({ runs: 0, tokens: 42 });
  });

  test("what a deleted workflow's runs spent is kept per hour, counted by the next process, and pruned once out of the window", () => {
    using setup = limitsAt(FIRED_AT);
    const { sqlite } = setup.database;
    setup.workflows("gone", "also-gone");
    setup.run("run-1", "gone", 1, 5, FIRED_AT - HOUR);
    setup.run("run-2", "gone", 2, 7, FIRED_AT - HOUR);
    setup.run("run-3", "gone", 3, 100, FIRED_AT - 30 * HOUR);
    setup.run("run-4", "also-gone", 1, 11, FIRED_AT - HOUR);
    const limits = setup.limits();
    for (const id of ["gone", "also-gone"]) limits.deleteKeepingUsage(id, () => sqlite.exec(`DELETE FROM workflows WHERE id = '${id}'`));
    expect(sqlite.query("SELECT count(*) AS n FROM workflow_runs").get()).toEqual({ n: 0 });
    // Both workflows' runs of the same hour add up in one row; the run before the window was not kept.
    expect(sqlite.query("SELECT hour, runs, tokens FROM workflow_spend_carried").all()).toEqual([{ hour: Math.floor((FIRED_AT - HOUR) / HOUR), runs: 3, tokens: 23 }]);
    expect(setup.limits().usage("p")).toEqual({ runs: 3, tokens: 23 });
    setup.clock.now = FIRED_AT + 25 * HOUR;
    expect(setup.limits().usage("p")).toEqual({ runs: 0, tokens: 0 });
    expect(sqlite.query("SELECT count(*) AS n FROM workflow_spend_carried").get()).toEqual({ n: 0 });
  });

  test("a workflow delete that fails keeps nothing on record: the next process counts its runs once", () => {
    using setup = limitsAt(FIRED_AT);
    const { sqlite } = setup.database;
    setup.workflows("w");
    setup.run("run-1", "w", 1, 5, FIRED_AT - HOUR);
    // The delete itself is refused (a disk error, a constraint): what was kept for it must go with it.
    sqlite.exec(`CREATE TEMP TRIGGER refuse_delete BEFORE DELETE ON workflows BEGIN SELECT RAISE(ABORT, 'refused'); END`);
    expect(() => setup.limits().deleteKeepingUsage("w", () => sqlite.exec(`DELETE FROM workflows WHERE id = 'w'`))).toThrow("refused");
    expect(sqlite.query("SELECT count(*) AS n FROM workflow_spend_carried").get()).toEqual({ n: 0 });
    expect(setup.limits().usage("p")).toEqual({ runs: 1, tokens: 5 });
  });
});
