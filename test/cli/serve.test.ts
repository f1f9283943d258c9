import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { adminCommands } from "../../src/cli/admin-commands.ts";
import { runCli } from "../../src/cli/run-cli.ts";
import { hatchCliProcess } from "../helpers/cli.ts";
import { startWorld } from "../helpers/world.ts";

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
    expect(started.err).toMatch(new RegExp(`^hatch: cannot start: .*${port}.* in use\\?\\n$`));
    expect((await world.anonymous().get("/api/auth/me")).status).toBe(401);
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
