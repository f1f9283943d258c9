import { describe, expect, test } from "bun:test";
import { asc } from "drizzle-orm";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isUnfinishedRun, openDatabase, workflowRuns } from "../../src/db/index.ts";

describe("the runs still under way", () => {
  test("are read through their partial index, not by scanning every run ever kept", () => {
    const dir = mkdtempSync(join(tmpdir(), "hatch-schema-"));
    const { db, sqlite, close } = openDatabase(join(dir, "hatch.db"));
    try {
      // The query Runs.unfinished() makes: the access sweep runs it every 15 s, so a scan would grow with history.
      const query = db.select().from(workflowRuns).where(isUnfinishedRun).orderBy(asc(workflowRuns.queuedAt), asc(workflowRuns.number)).toSQL();
      const plan = sqlite
        .query<{ detail: string }, never[]>(`EXPLAIN QUERY PLAN ${query.sql}`)
        .all(...(query.params as never[]))
        .map((step) => step.detail);
      expect(plan).toEqual(["SCAN workflow_runs USING INDEX workflow_runs_unfinished"]);
    } finally {
      close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
