import { describe, expect, test } from "bun:test";
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DATABASE_FILE, openDataDir } from "../../src/db/index.ts";

const modeOf = (path: string) => statSync(path).mode & 0o777;

/** A parent dir open to everyone (as /srv or a home dir often is), removed after the test. */
function openParent() {
  const path = mkdtempSync(join(tmpdir(), "hatch-datadir-"));
  chmodSync(path, 0o755);
  return { path, [Symbol.dispose]: () => rmSync(path, { recursive: true, force: true }) };
}

describe("the data dir", () => {
  test("a new data dir and its database, with the WAL files SQLite adds, are its owner's alone", () => {
    using parent = openParent();
    const dataDir = join(parent.path, "data");
    const database = openDataDir(dataDir);
    database.sqlite.exec("CREATE TABLE probe (x); INSERT INTO probe VALUES (1)");
    try {
      expect(database.narrowed).toEqual([]);
      expect(modeOf(dataDir)).toBe(0o700);
      const db = join(dataDir, DATABASE_FILE);
      expect([db, `${db}-wal`, `${db}-shm`].map(modeOf)).toEqual([0o600, 0o600, 0o600]);
    } finally {
      database.close();
    }
  });

  test("an existing data dir and database open to other users are narrowed to their owner, never widened", () => {
    using parent = openParent();
    const dataDir = join(parent.path, "data");
    mkdirSync(dataDir, { mode: 0o755 });
    chmodSync(dataDir, 0o750);
    const db = join(dataDir, DATABASE_FILE);
    writeFileSync(db, "");
    chmodSync(db, 0o644);
    const first = openDataDir(dataDir);
    first.close();
    expect(first.narrowed).toEqual([dataDir, db]);
    expect([modeOf(dataDir), modeOf(db)]).toEqual([0o700, 0o600]);
    // An owner who took their own write bit away keeps it that way: only others' bits are removed.
    chmodSync(dataDir, 0o500);
    try {
      const second = openDataDir(dataDir);
      second.close();
      expect(second.narrowed).toEqual([]);
      expect(modeOf(dataDir)).toBe(0o500);
    } finally {
      chmodSync(dataDir, 0o700);
    }
  });

  test("a shared directory given as the data dir (sticky as /tmp is, or writable by every user) is refused, and left as it was for its other users", () => {
    // HATCH_DATA_DIR=/tmp for a quick try, run as root (the Docker image's user, or sudo): /tmp is root's, so it passes as "owned".
    using parent = openParent();
    for (const [name, mode, why] of [["tmp", 0o1777, "a sticky directory (as /tmp is)"], ["open", 0o777, "writable by every user"]] as const) {
      const shared = join(parent.path, name);
      mkdirSync(shared);
      chmodSync(shared, mode);
      writeFileSync(join(shared, "someone-elses-file"), "");
      expect(() => openDataDir(shared)).toThrow(`Cannot open the data dir ${shared}: ${shared} is ${why}: other users share it`);
      expect({ mode: (statSync(shared).mode & 0o7777).toString(8), entries: readdirSync(shared) }).toEqual({ mode: mode.toString(8), entries: ["someone-elses-file"] });
    }
  });

  test("processes opening a new data dir at once (the server and CLI commands) all open it, and each migration is applied once", async () => {
    const migrations = readdirSync(join(import.meta.dir, "../../drizzle")).filter((name) => name.endsWith(".sql")).length;
    const script = (dataDir: string) =>
      `const { openDataDir } = await import(${JSON.stringify(join(import.meta.dir, "../../src/db/index.ts"))}); try { openDataDir(${JSON.stringify(dataDir)}).close(); console.log("opened"); } catch (error) { console.log(error.message.split("\\n")[0]); }`;
    // A race: several rounds of several processes, so that one that was lost to it shows.
    for (let round = 0; round < 4; round++) {
      using parent = openParent();
      const dataDir = join(parent.path, "data");
      const children = Array.from({ length: 5 }, () => Bun.spawn([process.execPath, "-e", script(dataDir)], { stdout: "pipe", stderr: "inherit" }));
      const outcomes = await Promise.all(children.map((child) => new Response(child.stdout).text()));
      expect(outcomes.map((out) => out.trim())).toEqual(children.map(() => "opened"));
      const database = openDataDir(dataDir);
      try {
        expect(database.sqlite.query("SELECT count(*) AS n FROM __drizzle_migrations").get()).toEqual({ n: migrations });
      } finally {
        database.close();
      }
    }
  });

  test("a data dir shared through its group and owned by someone else (a volume's fsGroup) is left as it is, and the server still opens it", async () => {
    using parent = openParent();
    const dataDir = join(parent.path, "data");
    mkdirSync(dataDir);
    // Owned by root, shared with the service's group (nogroup here) and setgid, as an orchestrator prepares a volume.
    chownSync(dataDir, 0, 65534);
    chmodSync(dataDir, 0o2770);
    const script = `const { openDataDir } = await import(${JSON.stringify(join(import.meta.dir, "../../src/db/index.ts"))}); const d = openDataDir(${JSON.stringify(dataDir)}); d.close(); console.log(JSON.stringify(d.narrowed));`;
    // The service runs as another user (nobody) in that group.
    const child = Bun.spawn(["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", process.execPath, "-e", script], { stdout: "pipe", stderr: "pipe" });
    const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
    expect({ code, out: out.trim() }).toEqual({ code: 0, out: JSON.stringify([]) });
    expect(err).toContain("is open to other users and owned by uid 0, not this process: left as it is");
    expect(modeOf(dataDir)).toBe(0o770);
    expect(statSync(dataDir).mode & 0o7000).toBe(0o2000);
    // Its own database file it does keep to itself.
    expect(modeOf(join(dataDir, DATABASE_FILE))).toBe(0o600);
  });
});
