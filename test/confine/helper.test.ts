/**
 * The Landlock helper's command line and its fail-closed exits, run as the
 * real separate process.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { argsFromEnv, argsToEnv, defaultLandlockHelper, formatHelperArgs, type HelperArgs, parseHelperArgs } from "../../src/confine/index.ts";

const sample: HelperArgs = {
  list: ["/dev"],
  ro: ["/"],
  rw: ["/srv/app", "/srv/scratch"],
  roNoExec: ["/srv/app/docs"],
  rwNoExec: ["/srv/app/uploads"],
  dev: ["/dev/null"],
  deny: ["/srv/data"],
  env: ["PATH=/usr/bin", "EMPTY=", "EQ=a=b"],
  cwd: "/srv/app",
  abiMin: 4,
  newSession: true,
  argv: ["/bin/bash", "-c", "echo -- --ro /"],
};

async function runHelper(args: string[], env: Record<string, string> = {}) {
  const { bun, script } = defaultLandlockHelper();
  const proc = Bun.spawn([bun, "--config=/dev/null", "--no-env-file", script, ...args], { env, cwd: "/", stdio: ["ignore", "pipe", "pipe"] });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, error: stderr ? JSON.parse(stderr.trim()).error : null };
}

describe("helper arguments", () => {
  test("format and parse agree, including '--' and '=' inside values", () => {
    expect(parseHelperArgs(formatHelperArgs(sample))).toEqual(sample);
  });

  test("bad arguments are named", () => {
    expect(() => parseHelperArgs(["--ro", "relative", "--", "/bin/true"])).toThrow('Cannot use --ro "relative": expected an absolute path');
    expect(() => parseHelperArgs(["--ro", "/"])).toThrow('Missing "-- PROGRAM [ARG...]"');
    expect(() => parseHelperArgs(["--", "true"])).toThrow('Cannot run "true": expected an absolute program path');
    expect(() => parseHelperArgs(["--env", "NOVALUE", "--", "/bin/true"])).toThrow('Cannot use --env "NOVALUE": expected NAME=VALUE');
    expect(() => parseHelperArgs(["--bogus", "--", "/bin/true"])).toThrow('Unknown argument "--bogus"');
  });
});

describe("helper arguments in the environment (off the world-readable command line)", () => {
  test("they round-trip, and the helper runs the program from them", async () => {
    const args = formatHelperArgs({ ...sample, env: ["GREETING=from-env"], argv: ["/bin/sh", "-c", "echo $GREETING"] });
    expect(argsFromEnv(argsToEnv(args))).toEqual(args);
    expect(argsFromEnv({ PATH: "/bin" })).toBeNull();
    const result = await runHelper([], argsToEnv(formatHelperArgs({ ...sample, list: [], rw: [], dev: [], deny: [], cwd: "/", env: ["GREETING=from-env"], argv: ["/bin/sh", "-c", "echo $GREETING"] })));
    expect(result).toMatchObject({ code: 0, stdout: "from-env\n" });
  });

  test("a broken set is a usage error: 126 with a JSON error, nothing run", async () => {
    const result = await runHelper([], { HATCH_HELPER_ARGC: "3", HATCH_HELPER_ARG_0: "--" });
    expect(result.code).toBe(126);
    expect(result.error).toMatchObject({ code: "helper_usage", message: "Missing HATCH_HELPER_ARG_1" });
  });
});

describe("the helper process fails closed", () => {
  test("a usage error exits 126 with a JSON error and runs nothing", async () => {
    const dir = mkdtempSync(join(tmpdir(), "hatch-helper-"));
    try {
      const marker = join(dir, "ran");
      expect(await runHelper(["--ro", "nope", "--", "/usr/bin/touch", marker])).toMatchObject({ code: 126, stdout: "", error: { code: "helper_usage" } });
      expect(existsSync(marker)).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("an ABI minimum above the kernel's exits 126 with confinement_unavailable", async () => {
    const r = await runHelper(["--abi-min", "99", "--ro", "/", "--", "/bin/echo", "ran"]);
    expect(r).toMatchObject({ code: 126, stdout: "", error: { code: "confinement_unavailable", detail: { abiMin: 99 } } });
  });

  test("a missing program exits 127 with exec_failed, after confinement was applied", async () => {
    expect(await runHelper(["--ro", "/", "--", "/nonexistent/program"])).toMatchObject({ code: 127, error: { code: "exec_failed" } });
  });

  test("a grant whose path now runs through a symlink (a parent swapped since planning) refuses the spawn: 126, root_invalid", async () => {
    const dir = mkdtempSync(join(tmpdir(), "hatch-helper-"));
    try {
      mkdirSync(join(dir, "elsewhere", "app"), { recursive: true });
      symlinkSync(join(dir, "elsewhere"), join(dir, "team"));
      const marker = join(dir, "elsewhere", "app", "written");
      // The last component is a real directory; the one above it is the link, which O_NOFOLLOW alone does not see.
      const r = await runHelper(["--ro", "/", "--rw", join(dir, "team", "app"), "--", "/usr/bin/touch", marker]);
      expect(r).toMatchObject({ code: 126, stdout: "", error: { code: "root_invalid" } });
      expect(r.error.message).toContain(`"${join(dir, "team", "app")}" now leads to "${join(dir, "elsewhere", "app")}"`);
      expect(existsSync(marker)).toBe(false);
      // The same directory named by its own path is granted.
      expect(await runHelper(["--ro", "/", "--rw", join(dir, "elsewhere", "app"), "--", "/usr/bin/touch", marker])).toMatchObject({ code: 0 });
      expect(existsSync(marker)).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("with no grants at all confinement applies and even the program cannot be executed: 126, exec_failed with EACCES", async () => {
    // An option comes first: Bun itself swallows a "--" right after the script path.
    const r = await runHelper(["--abi-min", "1", "--", "/bin/cat", "/etc/hostname"]);
    // /bin/cat itself cannot be executed without an execute right: execve fails with EACCES (13), after restrict_self.
    expect(r).toEqual({ code: 126, stdout: "", error: { code: "exec_failed", message: 'Cannot run "/bin/cat": errno 13' } });
  });
});
