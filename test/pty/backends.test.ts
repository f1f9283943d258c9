import { dlopen, FFIType } from "bun:ffi";
import { describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bunPtyBackend, bunTerminalBackend, type PtyBackend } from "../../src/pty/index.ts";
import { waitFor } from "../helpers/wait-for.ts";

/** libc's own environment calls: what a native library (bun-pty) inherits from. */
const libc = dlopen("libc.so.6", {
  setenv: { args: [FFIType.cstring, FFIType.cstring, FFIType.i32], returns: FFIType.i32 },
  unsetenv: { args: [FFIType.cstring], returns: FFIType.i32 },
});
const cString = (text: string) => Buffer.from(`${text}\0`);

/** Both PTY backends behind the one interface: spawn, echo, resize, exit code. */
for (const [name, backend] of [
  ["built-in terminal", bunTerminalBackend],
  ["bun-pty", bunPtyBackend],
] as [string, PtyBackend][]) {
  describe(`the ${name} backend`, () => {
    test("spawns a shell on a PTY that echoes, resizes and reports its exit code", async () => {
      const home = mkdtempSync(join(tmpdir(), "hatch-pty-home-"));
      let output = "";
      const pty = backend({
        argv: ["/bin/bash", "--norc", "--noprofile", "-i"],
        cwd: "/",
        env: { PATH: "/usr/bin:/bin", HOME: home, TERM: "xterm-256color", PS1: "$ " },
        cols: 90,
        rows: 30,
        onData: (chunk) => (output += new TextDecoder().decode(chunk)),
      });
      try {
        pty.write("stty size; echo pid-$$\r");
        await waitFor(() => output.includes(`pid-${pty.pid}`), "the shell to answer");
        expect(output).toContain("30 90");
        pty.resize(100, 40);
        pty.write("stty size\r");
        await waitFor(() => output.includes("40 100"), "the new size");
        pty.write("exit 7\r");
        expect(await pty.exited).toBe(7);
      } finally {
        pty.kill("SIGKILL");
        rmSync(home, { recursive: true, force: true });
      }
    });
  });
}

describe("environment", () => {
  test("bun-pty's child sees exactly the environment it was given, not the server's", async () => {
    // A variable of the server's environment, absent from the given env. bun-pty's native side merges the C
    // environment (which a process.env assignment does not reach), so the sentinel goes into both.
    const name = "HATCH_TEST_SERVER_ONLY";
    const sentinel = `server-only-${crypto.randomUUID()}`;
    process.env[name] = sentinel;
    libc.symbols.setenv(cString(name), cString(sentinel), 1);
    let output = "";
    const pty = bunPtyBackend({
      argv: ["/bin/sh", "-c", "env; echo env-done"],
      cwd: "/",
      env: { PATH: "/usr/bin:/bin", GIVEN: "yes" },
      cols: 80,
      rows: 24,
      onData: (chunk) => (output += new TextDecoder().decode(chunk)),
    });
    try {
      await waitFor(() => output.includes("env-done"), "the env listing");
      expect(output).toContain("GIVEN=yes");
      expect(output).not.toContain(sentinel);
      expect(output).not.toMatch(new RegExp(`^${name}=`, "m"));
    } finally {
      pty.kill("SIGKILL");
      delete process.env[name];
      libc.symbols.unsetenv(cString(name));
    }
  });
  test("bun-pty puts no value of the environment on a command line, which any host user and other sandboxes can read", async () => {
    // Each spawn's pid runs a trampoline first, then the program; its command line is read from the spawn until the
    // program shows there (a confined session's helper arguments, the program's environment among them, travel here).
    const value = `ghp_${crypto.randomUUID().replaceAll("-", "")}`;
    const seen: string[] = [];
    for (let i = 0; i < 20; i++) {
      let output = "";
      const pty = bunPtyBackend({
        argv: ["/bin/sh", "-c", 'echo "given=$GH_PAT"; sleep 5'],
        cwd: "/",
        env: { PATH: "/usr/bin:/bin", GH_PAT: value, SPACED: "a b 'c' \"d\" $e #f \\g" },
        cols: 80,
        rows: 24,
        onData: (chunk) => (output += new TextDecoder().decode(chunk)),
      });
      try {
        let line = "";
        while (!line.includes("sleep")) {
          try {
            line = readFileSync(`/proc/${pty.pid}/cmdline`, "latin1");
          } catch {
            break; // gone: nothing more to read
          }
          if (line.includes(value)) seen.push(line.replaceAll("\0", " "));
        }
        await waitFor(() => output.includes(`given=${value}`), "the program to see its environment");
      } finally {
        pty.kill("SIGKILL");
      }
    }
    expect(seen).toEqual([]);
  });

  test("through bun-pty a value with spaces, quotes, $ and # reaches the program exactly, and the server's own variable of the same name does not win", async () => {
    const name = "HATCH_TEST_BOTH";
    process.env[name] = "server-value";
    libc.symbols.setenv(cString(name), cString("server-value"), 1);
    const given = "a b 'c' \"d\" $e #f \\g";
    let output = "";
    const pty = bunPtyBackend({
      argv: ["/bin/sh", "-c", `printf '[%s]\\n' "$${name}"; echo env-done`],
      cwd: "/",
      env: { PATH: "/usr/bin:/bin", [name]: given },
      cols: 200,
      rows: 24,
      onData: (chunk) => (output += new TextDecoder().decode(chunk)),
    });
    try {
      await waitFor(() => output.includes("env-done"), "the program's answer");
      expect(output.replaceAll("\r", "")).toContain(`[${given}]\n`);
    } finally {
      pty.kill("SIGKILL");
      delete process.env[name];
      libc.symbols.unsetenv(cString(name));
    }
  });
});

describe("pausing", () => {
  test("the built-in backend pauses a flood with tty flow control and resumes it", async () => {
    let bytes = 0;
    const pty = bunTerminalBackend({ argv: ["/usr/bin/yes"], cwd: "/", env: { PATH: "/usr/bin:/bin" }, cols: 80, rows: 24, onData: (c) => (bytes += c.length) });
    try {
      await waitFor(() => bytes > 100_000, "the flood");
      expect(pty.pause()).toBe(true);
      // Whatever was in flight drains, then nothing more arrives.
      let settled = bytes;
      await waitFor(async () => {
        await new Promise((r) => setTimeout(r, 100));
        const still = bytes === settled;
        settled = bytes;
        return still;
      }, "the output to stop");
      const paused = bytes;
      await new Promise((r) => setTimeout(r, 200));
      expect(bytes).toBe(paused);
      pty.resume();
      await waitFor(() => bytes > paused + 100_000, "the flood to resume");
    } finally {
      pty.kill("SIGKILL");
    }
  });

  test("bun-pty cannot pause, and says so, so views fall back to snapshots", () => {
    const pty = bunPtyBackend({ argv: ["/bin/true"], cwd: "/", env: { PATH: "/usr/bin:/bin" }, cols: 80, rows: 24, onData: () => {} });
    expect(pty.pause()).toBe(false);
    pty.kill("SIGKILL");
  });
});
