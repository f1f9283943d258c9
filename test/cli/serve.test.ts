import { describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { adminCommands } from "../../src/cli/admin-commands.ts";
import { runCli } from "../../src/cli/run-cli.ts";
import { loadConfig } from "../../src/config.ts";
import { startHatch } from "../../src/main.ts";
import { RUN_SCRATCH_FOLDER } from "../../src/workflows/index.ts";
import { hatchCliProcess } from "../helpers/cli.ts";
import { waitFor } from "../helpers/wait-for.ts";
import { commandWorkflow, fire, isAlive, issueToken, memberWithBareRuns, traceDir } from "../helpers/workflows.ts";
import { startWorld } from "../helpers/world.ts";

/** The files this process holds open below `dir`. */
function openFilesUnder(dir: string): string[] {
  const paths = readdirSync("/proc/self/fd").map((fd) => {
    try {
      return readlinkSync(join("/proc/self/fd", fd));
    } catch {
      return ""; // closed while listed (the listing's own fd)
    }
  });
  return paths.filter((path) => path.startsWith(`${dir}/`));
}

/** A data dir removed after the test. */
function tempDataDir() {
  const path = mkdtempSync(join(tmpdir(), "hatch-serve-"));
  return { path, [Symbol.dispose]: () => rmSync(path, { recursive: true, force: true }) };
}

describe("starting the service", () => {
  test("a bad setting stops `serve` with exit 1 and one line naming it, no stack trace", async () => {
    using dir = tempDataDir();
    const started = await hatchCliProcess(dir.path, ["serve"], { HATCH_PORT: "notaport" });
    expect(started).toEqual({ code: 1, out: "", err: 'hatch: cannot start: Cannot use HATCH_PORT="notaport": expected a port number from 0 to 65535\n' });
  });

  test("a port another hatch holds stops `serve` with exit 1 instead of sharing the port", async () => {
    await using world = await startWorld();
    using dir = tempDataDir();
    const port = new URL(world.hatch.url).port;
    const started = await hatchCliProcess(dir.path, ["serve"], { HATCH_PORT: port, HATCH_COMPANION_PORT: "0" });
    expect(started.code).toBe(1);
    expect(started.err).toMatch(new RegExp(`^hatch: cannot start: Cannot listen for the web host on 127\\.0\\.0\\.1:${port} \\(HATCH_HOST, HATCH_PORT\\): .*${port}.* in use\\?\\n$`));
    expect((await world.anonymous().get("/api/auth/me")).status).toBe(401);
    // The companion port is named as such, and the web host that did start is stopped again.
    const companion = await hatchCliProcess(dir.path, ["serve"], { HATCH_PORT: "0", HATCH_COMPANION_PORT: port });
    expect(companion.code).toBe(1);
    expect(companion.err).toStartWith(`hatch: cannot start: Cannot listen for the companion server on 127.0.0.1:${port} (HATCH_HOST, HATCH_COMPANION_PORT): `);
  });

  test("a second `serve` on a running server's data dir refuses to start, and the running server's work goes on", async () => {
    await using world = await startWorld();
    const member = await memberWithBareRuns(world, await world.project());
    const dir = traceDir(world);
    const workflow = await commandWorkflow(member, `echo $$ > ${dir}/started; sleep 300`);
    const { token } = await issueToken(member.client, workflow.id);
    const runId = (await fire(world, workflow.id, token)).body.runId;
    await waitFor(() => existsSync(join(dir, "started")), "the run's command to start");
    // On the running server's port, so that it stops either way; the data dir is what it is refused for, before it does anything there.
    const started = await hatchCliProcess(world.config.dataDir, ["serve"], { HATCH_PORT: new URL(world.hatch.url).port, HATCH_COMPANION_PORT: "0" });
    expect(started).toEqual({ code: 1, out: "", err: `hatch: cannot start: Cannot use the data dir ${world.config.dataDir}: another hatch server is running on it\n` });
    // Nothing of the running server was taken for a crashed server's leftovers.
    expect(isAlive(Number(readFileSync(join(dir, "started"), "utf8")))).toBe(true);
    expect((await member.client.get(`/api/workflows/${workflow.id}/runs/${runId}`)).body.status).toBe("running");
  });

  test("a server that stopped, or failed to start, leaves its data dir free for the next", async () => {
    using dir = tempDataDir();
    const config = loadConfig({ HATCH_PORT: "0", HATCH_COMPANION_PORT: "0", HATCH_DATA_DIR: dir.path });
    const first = await startHatch(config);
    await expect(startHatch(config)).rejects.toThrow("another hatch server is running on it");
    await first.stop();
    await using holder = await startWorld();
    await expect(startHatch({ ...config, port: Number(new URL(holder.hatch.url).port) })).rejects.toThrow("in use");
    await using second = await startHatch(config);
    expect((await fetch(`${second.url}/api/auth/me`)).status).toBe(401);
  });

  test("no file an operator deletes from a running server's data dir (one that reads like a stale lock among them) frees it for a second server", async () => {
    using dir = tempDataDir();
    const config = loadConfig({ HATCH_PORT: "0", HATCH_COMPANION_PORT: "0", HATCH_DATA_DIR: dir.path });
    await using first = await startHatch(config);
    const files = readdirSync(dir.path).filter((name) => statSync(join(dir.path, name)).isFile());
    expect(files).toContain("hatch.db");
    for (const name of files) rmSync(join(dir.path, name));
    await expect(startHatch(config)).rejects.toThrow("another hatch server is running on it");
    expect((await fetch(`${first.url}/api/auth/me`)).status).toBe(401);
  });

  test("a database file that is not one (a wrong or damaged restore) stops `serve` with a line naming the data dir, and leaves the file closed", async () => {
    using dir = tempDataDir();
    writeFileSync(join(dir.path, "hatch.db"), "this is a backup archive, not an SQLite file ".repeat(20));
    const started = await hatchCliProcess(dir.path, ["serve"], { HATCH_PORT: "0", HATCH_COMPANION_PORT: "0" });
    expect(started).toEqual({ code: 1, out: "", err: `hatch: cannot start: Cannot open the data dir ${dir.path}: file is not a database\n` });
    const config = loadConfig({ HATCH_PORT: "0", HATCH_COMPANION_PORT: "0", HATCH_DATA_DIR: dir.path });
    await expect(startHatch(config)).rejects.toThrow("file is not a database");
    expect(openFilesUnder(dir.path)).toEqual([]);
  });

  test("a start that fails part way, after the database opened, leaves no file of its data dir open", async () => {
    using dir = tempDataDir();
    const config = loadConfig({ HATCH_PORT: "0", HATCH_COMPANION_PORT: "0", HATCH_DATA_DIR: dir.path });
    // The workflow runs' scratch folder cannot be made: the start fails after the database, platform and terminal opened.
    writeFileSync(join(dir.path, RUN_SCRATCH_FOLDER), "in the way");
    await expect(startHatch(config)).rejects.toThrow(RUN_SCRATCH_FOLDER);
    // bun:sqlite closes with sqlite3_close_v2: the file goes once the statements it cached are collected, which
    // one collection may not reach when earlier tests left a big heap; anything still holding them keeps it open for good.
    await waitFor(() => {
      Bun.gc(true);
      return openFilesUnder(dir.path).length === 0;
    }, "the data dir's files to be closed");
    expect(openFilesUnder(dir.path)).toEqual([]);
  });

  test("`serve` with an argument or flag stops with usage and exit 2 instead of starting on other settings; `serve --help` prints its usage", async () => {
    const run = async (argv: string[]) => {
      let started = false;
      let out = "";
      let err = "";
      const code = await runCli(argv, adminCommands, { serve: async () => void (started = true), io: { out: (t) => (out += t), err: (t) => (err += t) } });
      return { code, started, out, err };
    };
    const flagged = await run(["serve", "--port", "8080"]);
    expect(flagged).toMatchObject({ code: 2, started: false, out: "" });
    expect(flagged.err).toStartWith('hatch: serve takes no arguments, its settings are HATCH_* variables: unexpected "--port"\n\nusage: hatch serve\n');
    expect(await run(["serve", "now"])).toMatchObject({ code: 2, started: false });
    const help = await run(["serve", "--help"]);
    expect(help).toMatchObject({ code: 0, started: false, err: "" });
    expect(help.out).toStartWith("usage: hatch serve\nRun the service");
    expect(await run(["serve"])).toMatchObject({ code: 0, started: true });
  });

  test("other commands answer a bad setting with exit 1 and one line too", async () => {
    using dir = tempDataDir();
    let err = "";
    const code = await runCli(["admin", "user", "add", "--email", "a@example.com", "--password", "a password 1"], adminCommands, {
      env: { HATCH_DATA_DIR: dir.path, HATCH_SECRET_KEY: "short" },
      io: { out: () => {}, err: (t) => (err += t) },
    });
    expect({ code, err }).toEqual({ code: 1, err: "hatch: Cannot use HATCH_SECRET_KEY: it must be at least 32 characters" });
  });
});
