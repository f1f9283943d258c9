import { expect } from "bun:test";
import { join } from "node:path";
import { DATABASE_FILE } from "../../src/db/index.ts";

/**
 * Another process beside this one writing to a data dir's database in short
 * IMMEDIATE transactions (each holds the write lock about 2 ms, then leaves
 * it free about as long) until it is stopped: what a running server (group
 * commits, run events) or a `hatch` command does beside the other. Resolves
 * once it has started writing; dispose it to stop it.
 */
export async function otherWriter(dataDir: string): Promise<AsyncDisposable> {
  const script = `
    const { Database } = require("bun:sqlite");
    const db = new Database(${JSON.stringify(join(dataDir, DATABASE_FILE))});
    db.exec("PRAGMA busy_timeout = 5000");
    db.exec("CREATE TABLE IF NOT EXISTS other_writer (x)");
    const insert = db.prepare("INSERT INTO other_writer VALUES (?)");
    let n = 0;
    console.log("writing");
    while (true) {
      // A transaction of a couple of milliseconds, then as long with the lock free.
      db.exec("BEGIN IMMEDIATE");
      insert.run(n++);
      Bun.sleepSync(2);
      db.exec("COMMIT");
      await Bun.sleep(2);
    }
  `;
  const child = Bun.spawn([process.execPath, "-e", script], { stdout: "pipe", stderr: "inherit" });
  const { value } = await child.stdout.getReader().read();
  expect(new TextDecoder().decode(value)).toContain("writing");
  return {
    [Symbol.asyncDispose]: async () => {
      child.kill();
      await child.exited;
    },
  };
}
