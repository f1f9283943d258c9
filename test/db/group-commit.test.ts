import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GroupCommit, openDatabase, type OpenDatabase } from "../../src/db/index.ts";

/** A migrated database in a temp dir with a scratch table, and a second connection to read it as another process would. */
function scratchDatabase(): OpenDatabase & { path: string; reader: Database; insert: (value: string) => void; [Symbol.dispose](): void } {
  const dir = mkdtempSync(join(tmpdir(), "hatch-group-commit-"));
  const path = join(dir, "hatch.db");
  const database = openDatabase(path);
  database.sqlite.exec("CREATE TABLE notes (value TEXT NOT NULL CHECK (value != 'poison'))");
  // A note "breaks the commit" through a deferred foreign key: its INSERT succeeds, the COMMIT fails.
  database.sqlite.exec("CREATE TABLE guard_parents (id TEXT PRIMARY KEY)");
  database.sqlite.exec("CREATE TABLE commit_guard (parent TEXT REFERENCES guard_parents(id) DEFERRABLE INITIALLY DEFERRED)");
  database.sqlite.exec("CREATE TRIGGER break_commit AFTER INSERT ON notes WHEN NEW.value = 'breaks the commit' BEGIN INSERT INTO commit_guard VALUES ('nothing'); END");
  const insert = database.sqlite.prepare("INSERT INTO notes (value) VALUES (?)");
  const reader = new Database(path, { readonly: true });
  return {
    ...database,
    path,
    reader,
    insert: (value) => void insert.run(value),
    [Symbol.dispose]() {
      reader.close();
      database.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const committedValues = (reader: Database) => (reader.query("SELECT value FROM notes ORDER BY rowid").all() as { value: string }[]).map((r) => r.value);

/** A group commit over `database` that records each failure it reports and each write it undoes; `write` inserts a note. */
function recordingCommits(database: ReturnType<typeof scratchDatabase>) {
  const failures: [string, number][] = [];
  const undone: string[] = [];
  const commits = new GroupCommit(database.db, { onFailure: (error, writes) => failures.push([(error as Error).message, writes]) });
  const write = (value: string) => commits.write(() => database.insert(value), () => undone.push(value));
  return { commits, write, failures, undone };
}

describe("group commit", () => {
  test("writes queued in one turn commit in one transaction, and each resolves only once all of them are visible to another connection", async () => {
    using database = scratchDatabase();
    const commits = new GroupCommit(database.db);
    const seenAtResolve: string[][] = [];
    const writes = ["a", "b", "c", "d"].map((value) => commits.write(() => database.insert(value)).then(() => seenAtResolve.push(committedValues(database.reader))));
    expect(committedValues(database.reader)).toEqual([]);
    await Promise.all(writes);
    expect(seenAtResolve).toEqual(Array.from({ length: 4 }, () => ["a", "b", "c", "d"]));
    expect(commits.stats()).toEqual({ commits: 1, rollbacks: 0, writes: 4, failed: 0 });
  });

  test("a write that throws is rejected alone, after its undo ran; the rest of its transaction commits", async () => {
    using database = scratchDatabase();
    const { commits, write, failures, undone } = recordingCommits(database);

    const settled = await Promise.allSettled(["x", "poison", "y"].map(write));

    expect(settled.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(undone).toEqual(["poison"]);
    expect(failures).toEqual([["CHECK constraint failed: value != 'poison'", 1]]);
    expect(committedValues(database.reader)).toEqual(["x", "y"]);
    expect(commits.stats()).toEqual({ commits: 1, rollbacks: 0, writes: 2, failed: 1 });
  });

  test("a failed commit rejects exactly the writes of its transaction, after their undo ran; the transactions before and after it commit", async () => {
    using database = scratchDatabase();
    const { commits, write, failures, undone } = recordingCommits(database);

    await write("before");
    const failing = await Promise.allSettled(["x", "breaks the commit", "y"].map(write));
    await write("after");

    const reasons = failing.map((r) => (r.status === "rejected" ? (r.reason as Error) : null));
    expect(reasons.map((reason) => reason?.message)).toEqual(Array.from({ length: 3 }, () => "FOREIGN KEY constraint failed"));
    expect(reasons.every((reason) => reason === reasons[0])).toBe(true);
    expect(undone).toEqual(["x", "breaks the commit", "y"]);
    expect(failures).toEqual([["FOREIGN KEY constraint failed", 3]]);
    expect(committedValues(database.reader)).toEqual(["before", "after"]);
    expect(commits.stats()).toEqual({ commits: 2, rollbacks: 1, writes: 2, failed: 3 });
  });

  test("a batch that reaches the write bound commits at once; flush commits what is queued without waiting for the turn to end", async () => {
    using database = scratchDatabase();
    const commits = new GroupCommit(database.db, { maxWrites: 3 });
    const settled: string[] = [];
    const writes = ["a", "b", "c", "d"].map((value) => commits.write(() => database.insert(value)).then(() => settled.push(value)));
    // The third write filled the batch and committed it synchronously; "d" waits for the turn to end.
    expect(committedValues(database.reader)).toEqual(["a", "b", "c"]);
    commits.flush();
    expect(committedValues(database.reader)).toEqual(["a", "b", "c", "d"]);
    await Promise.all(writes);
    expect(settled).toEqual(["a", "b", "c", "d"]);
    expect(commits.stats()).toEqual({ commits: 2, rollbacks: 0, writes: 4, failed: 0 });
    expect(() => new GroupCommit(database.db, { maxWrites: 0 })).toThrow(RangeError);
  });

  test("a write that reads before it writes (a run's number) waits for another process's write, the CLI's say, instead of failing", async () => {
    using database = scratchDatabase();
    const script = `const { Database } = require("bun:sqlite");
      const other = new Database(${JSON.stringify(database.path)});
      other.exec("PRAGMA busy_timeout = 5000; BEGIN IMMEDIATE; INSERT INTO notes (value) VALUES ('from the other process')");
      console.log("holding");
      await Bun.sleep(300);
      other.exec("COMMIT");`;
    const other = Bun.spawn([process.execPath, "-e", script], { stdout: "pipe", stderr: "inherit" });
    const lines = other.stdout.pipeThrough(new TextDecoderStream()).getReader();
    expect((await lines.read()).value).toBe("holding\n");
    const commits = new GroupCommit(database.db);
    const count = database.sqlite.prepare("SELECT count(*) AS n FROM notes");
    await commits.write(() => database.insert(`note ${(count.get() as { n: number }).n + 1}`));
    expect(await other.exited).toBe(0);
    expect(committedValues(database.reader)).toEqual(["from the other process", "note 2"]);
  });
});
