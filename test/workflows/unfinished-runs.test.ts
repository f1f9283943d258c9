import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "../../src/db/index.ts";
import { createWorkflowStores } from "../../src/workflows/index.ts";

/** The steps of SQLite's plan for a drizzle query. */
function planOf(sqlite: ReturnType<typeof openDatabase>["sqlite"], query: { toSQL(): { sql: string; params: unknown[] } }): string[] {
  const { sql, params } = query.toSQL();
  return sqlite.query<{ detail: string }, never[]>(`EXPLAIN QUERY PLAN ${sql}`).all(...(params as never[])).map((step) => step.detail);
}

describe("reading the runs under way", () => {
  test("the sweeps read one workflow's runs through its index, or the pool's running runs by id: never every run ever kept", () => {
    const dir = mkdtempSync(join(tmpdir(), "hatch-unfinished-"));
    const database = openDatabase(join(dir, "hatch.db"));
    try {
      const { runs } = createWorkflowStores(database.db);
      // The delete's cancel reads one workflow's; the 15 s access sweep reads the few the pool runs.
      expect(planOf(database.sqlite, runs.unfinishedQuery({ workflowId: "wf-1" })).join("; ")).toContain("USING INDEX workflow_runs_number");
      expect(planOf(database.sqlite, runs.unfinishedQuery({ ids: ["run-1", "run-2"] })).join("; ")).toContain("USING INDEX sqlite_autoindex_workflow_runs_1");
      // Only the start reads them all (what a restarted server picks up).
      expect(planOf(database.sqlite, runs.unfinishedQuery())).toContain("SCAN workflow_runs");
    } finally {
      database.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
