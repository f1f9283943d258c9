import { describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../src/config.ts";
import { startHatch } from "../../src/main.ts";
import { hatchCli } from "../helpers/cli.ts";
import { TerminalClient } from "../helpers/terminal-client.ts";
import { createSession, runAndSee } from "../helpers/terminal.ts";
import { waitFor } from "../helpers/wait-for.ts";
import { isAlive } from "../helpers/workflows.ts";
import { logIn, TEST_PASSWORD } from "../helpers/world.ts";

/**
 * Start `argv` (hatch serve, one way or another) in a process group of its own on a fresh data dir, with an owner
 * whose Container Root session runs a shell that ignores SIGHUP (so its end waits out the kill grace) and a
 * background job carrying the session's TMPDIR mark: what a stop must end before the service exits.
 */
async function serveWithBusySession(argv: string[], env: Record<string, string> = {}) {
  const dir = mkdtempSync(join(tmpdir(), "hatch-signals-"));
  const dataDir = join(dir, "data");
  mkdirSync(join(dir, "home"));
  expect((await hatchCli(dataDir, ["admin", "user", "add", "--email", "owner@example.com", "--password", TEST_PASSWORD])).code).toBe(0);
  expect((await hatchCli(dataDir, ["admin", "project", "add", "--slug", "demo", "--name", "Demo", "--owner", "owner@example.com"])).code).toBe(0);
  const child = Bun.spawn(argv, {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: join(dir, "home"), HATCH_DATA_DIR: dataDir, HATCH_PORT: "0", HATCH_COMPANION_PORT: "0", ...env },
    stdout: "pipe",
    stderr: "pipe",
    detached: true,
  });
  const reader = child.stdout.getReader();
  let out = "";
  while (!/companion \(terminal WebSocket\) on (\S+),/.test(out)) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`serve ended: ${out}`);
    out += new TextDecoder().decode(value);
  }
  const url = /web host on (\S+),/.exec(out)![1]!;
  const owner = await logIn(url, "owner@example.com", "demo");
  expect((await createSession(owner, { sourceSlug: "container-root", id: "s" })).status).toBe(201);
  const view = await TerminalClient.open(/companion \(terminal WebSocket\) on (\S+),/.exec(out)![1]!, owner, "s");
  await view.control("snapshot");
  const pidFile = join(dir, "pid");
  await runAndSee(view, `trap '' HUP; sleep 300 & echo $! > ${pidFile}; echo ready-$((6*7))`, "ready-42");
  const leftover = Number(readFileSync(pidFile, "utf8"));
  expect(isAlive(leftover)).toBe(true);
  return {
    child,
    url,
    leftover,
    dataDir,
    scratch: () => readdirSync(join(dataDir, "scratch")),
    [Symbol.dispose]: () => {
      if (isAlive(leftover)) process.kill(leftover, "SIGKILL");
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {}
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

describe("`hatch serve` and signals", () => {
  test("a SIGTERM that arrives while a SIGINT's shutdown is under way does not exit before the shutdown has ended the sessions", async () => {
    using served = await serveWithBusySession([process.execPath, "src/cli.ts", "serve"]);
    // Ctrl+C in the operator's terminal, then the supervisor's SIGTERM (docker stop, systemctl stop) while hatch is stopping.
    served.child.kill("SIGINT");
    await Bun.sleep(300);
    served.child.kill("SIGTERM");
    const code = await served.child.exited;
    // README: "When the service stops (SIGTERM, Ctrl+C), every session is ended ... none of their programs outlives it."
    expect({ code, leftoverAlive: isAlive(served.leftover), scratchLeft: served.scratch() }).toEqual({ code, leftoverAlive: false, scratchLeft: [] });
  });

  test("Ctrl+C on `npm start` where npm's script shell is bash (Fedora, Arch, macOS: sh is bash) ends the sessions before hatch exits", async () => {
    // bash runs a one-command script by exec: hatch is npm's own child, and npm forwards the SIGINT the terminal already sent it.
    using served = await serveWithBusySession(["npm", "start"], { npm_config_script_shell: "/bin/bash" });
    // Ctrl+C: the terminal signals its whole foreground process group.
    process.kill(-served.child.pid, "SIGINT");
    await served.child.exited;
    await Bun.sleep(3000);
    expect({ leftoverAlive: isAlive(served.leftover), scratchLeft: served.scratch() }).toEqual({ leftoverAlive: false, scratchLeft: [] });
  });

  test("the SIGTERM that `docker stop` (or a supervisor) sends to `npm start`, the image's CMD and the quick start, reaches hatch and stops it", async () => {
    using served = await serveWithBusySession(["npm", "start"]);
    // `docker stop` signals the container's PID 1 only: the process the CMD started.
    served.child.kill("SIGTERM");
    const npmCode = await served.child.exited;
    const answering = async () => fetch(`${served.url}/api/auth/me`).then(() => true, () => false);
    await waitFor(async () => !(await answering()), "hatch to stop after npm exited", 5000).catch(() => {});
    expect({ npmCode, hatchStillServing: await answering(), leftoverAlive: isAlive(served.leftover) }).toEqual({ npmCode, hatchStillServing: false, leftoverAlive: false });
  });

  test("a SIGHUP (the terminal or ssh session running `hatch serve` closes) stops hatch as SIGTERM does: no session's program outlives it", async () => {
    using served = await serveWithBusySession([process.execPath, "src/cli.ts", "serve"]);
    // Closing the terminal that runs hatch in the foreground (an ssh drop, a closed tmux pane) sends SIGHUP.
    served.child.kill("SIGHUP");
    const code = await served.child.exited;
    await Bun.sleep(1500);
    const after = { code, leftoverAlive: isAlive(served.leftover), scratchLeft: served.scratch() };
    // What a hatch that died on the spot left (the session's cgroup among it) goes at the next start: start and stop one.
    await (await startHatch(loadConfig({ HATCH_PORT: "0", HATCH_COMPANION_PORT: "0", HATCH_DATA_DIR: served.dataDir }))).stop();
    expect(after).toEqual({ code: 0, leftoverAlive: false, scratchLeft: [] });
  });

  test("a server killed outright (SIGKILL, the OOM killer) while a session's program lives leaves its data dir free: the next start takes it and ends that program", async () => {
    using served = await serveWithBusySession([process.execPath, "src/cli.ts", "serve"]);
    served.child.kill("SIGKILL");
    await served.child.exited;
    // The program outlived its server; it must not hold the server's claim on the data dir.
    expect(isAlive(served.leftover)).toBe(true);
    await (await startHatch(loadConfig({ HATCH_PORT: "0", HATCH_COMPANION_PORT: "0", HATCH_DATA_DIR: served.dataDir }))).stop();
    expect(isAlive(served.leftover)).toBe(false);
  });
});
