/**
 * The planner's refusals and the exact shape of what it plans. Nothing here
 * spawns a process: a refusal must come before any spawn.
 */
import { describe, expect, test } from "bun:test";
import { chmodSync, mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { HatchError } from "../../src/platform/index.ts";
import {
  argsFromEnv,
  type ConfineSpec,
  type ConfinementProbe,
  defaultLandlockHelper,
  planConfinedCommand,
  probeConfinement,
  SYSTEM_CODE_PATHS,
  systemCodePaths,
} from "../../src/confine/index.ts";
import { probeName, Sandbox } from "./sandbox-fixture.ts";

const LINUX: ConfinementProbe = { platform: "linux", landlockAbi: 7, bwrapPath: "/usr/bin/bwrap" };
const helper = { bun: "/opt/bun/bun", script: "/opt/hatch/src/confine/landlock-exec.ts" };

function refusal(fn: () => unknown): { code: string; status: number } {
  try {
    fn();
  } catch (error) {
    if (error instanceof HatchError) return { code: error.code, status: error.status };
    throw error;
  }
  throw new Error("expected a refusal, got a command");
}

async function layout() {
  // Only the paths matter here; the mode is irrelevant to the planner's checks.
  return Sandbox.create("landlock");
}

describe("platform and mechanism", () => {
  test("a non-Linux platform is refused with confinement_unsupported, never an unconfined command", async () => {
    await using sb = await layout();
    const probe = await probeConfinement({ platform: "darwin", tryBwrap: () => Promise.reject(new Error("must not run")) });
    expect(probe).toEqual({ platform: "darwin", landlockAbi: null, bwrapPath: null });
    expect(refusal(() => planConfinedCommand(sb.spec(), probe, { helper }))).toEqual({ code: "confinement_unsupported", status: 500 });
  });

  test("Linux without Landlock, or with an ABI below the minimum, is refused with confinement_unavailable", async () => {
    await using sb = await layout();
    expect(refusal(() => planConfinedCommand(sb.spec(), { ...LINUX, landlockAbi: null }, { helper }))).toEqual({ code: "confinement_unavailable", status: 500 });
    expect(refusal(() => planConfinedCommand(sb.spec(), { ...LINUX, landlockAbi: 2 }, { helper }))).toEqual({ code: "confinement_unavailable", status: 500 });
    expect(refusal(() => planConfinedCommand(sb.spec(), LINUX, { helper, minLandlockAbi: 8 }))).toEqual({ code: "confinement_unavailable", status: 500 });
  });

  test("bwrap is layered when it works and not disabled; otherwise Landlock runs alone", async () => {
    await using sb = await layout();
    expect(planConfinedCommand(sb.spec(), LINUX, { helper }).mode).toBe("landlock+bwrap");
    expect(planConfinedCommand(sb.spec(), LINUX, { helper, preferBwrap: false }).mode).toBe("landlock");
    expect(planConfinedCommand(sb.spec(), { ...LINUX, bwrapPath: null }, { helper }).mode).toBe("landlock");
  });
});

describe("the planned command", () => {
  test("bwrap mode: isolation flags, mounts in layering order, then the helper, its arguments (the program's env among them) in the environment, off bwrap's host-visible command line", async () => {
    await using sb = await layout();
    const spec: ConfineSpec = { ...sb.spec(), env: { PATH: "/usr/bin:/bin", TMPDIR: sb.scratch } };
    const cmd = planConfinedCommand(spec, LINUX, { helper, hostSecrets: [] });
    const at = (...seq: string[]) => cmd.argv.findIndex((_, i) => seq.every((s, j) => cmd.argv[i + j] === s));
    expect(Object.keys(cmd.env).every((name) => name.startsWith("HATCH_HELPER_ARG"))).toBe(true);
    expect(cmd.argv).not.toContain("--clearenv");
    expect(cmd.cwd).toBe("/");
    expect(cmd.argv.slice(0, 9)).toEqual(["/usr/bin/bwrap", "--die-with-parent", "--unshare-all", "--unshare-user", "--disable-userns", "--cap-drop", "ALL", "--ro-bind", "/"]);
    expect(cmd.argv).not.toContain("--new-session");
    expect(cmd.argv).not.toContain("--setenv");
    const tmp = at("--tmpfs", "/tmp");
    const root = at("--bind", sb.root, sb.root);
    const visible = at("--ro-bind", sb.visible, sb.visible);
    const data = at("--tmpfs", sb.data);
    const scratch = at("--bind", sb.scratch, sb.scratch);
    const chdir = at("--chdir", "/", helper.bun, "--config=/dev/null", "--no-env-file", helper.script);
    expect([tmp, root, visible, data, scratch, chdir].every((i) => i > 0)).toBe(true);
    expect(tmp < root && root < data && visible < data && data < scratch && scratch < chdir).toBe(true);
    expect(cmd.argv.slice(chdir + 2)).toEqual([helper.bun, "--config=/dev/null", "--no-env-file", helper.script]);
    expect(argsFromEnv(cmd.env)).toEqual([
      "--abi-min", "3", "--cwd", sb.root,
      "--list", "/dev",
      "--ro", "/", "--ro", sb.visible,
      "--rw", sb.root, "--rw", sb.scratch, "--rw", "/dev/shm",
      "--dev", "/dev/null", "--dev", "/dev/zero", "--dev", "/dev/full", "--dev", "/dev/random", "--dev", "/dev/urandom", "--dev", "/dev/tty", "--dev", "/dev/console", "--dev", "/dev/pts",
      "--deny", sb.data,
      "--env", "PATH=/usr/bin:/bin", "--env", `TMPDIR=${sb.scratch}`,
      "--", ...spec.argv,
    ]);
  });

  test("Landlock mode: the helper is the outer process, its arguments in its environment (off the world-readable command line), read-only roots passed so it can carve them", async () => {
    await using sb = await layout();
    const spec: ConfineSpec = { ...sb.spec(), env: { GH_TOKEN: "ghp_secret" } };
    const cmd = planConfinedCommand(spec, LINUX, { helper, preferBwrap: false, newSession: true, hostSecrets: [] });
    expect(cmd.argv).toEqual([helper.bun, "--config=/dev/null", "--no-env-file", helper.script]);
    expect(Object.keys(cmd.env).every((name) => name.startsWith("HATCH_HELPER_ARG"))).toBe(true);
    const args = argsFromEnv(cmd.env)!;
    expect(args).toContain("--new-session");
    expect(args.slice(args.indexOf("--ro"), args.indexOf("--ro") + 4)).toEqual(["--ro", "/", "--ro", sb.visible]);
    expect(args.slice(args.indexOf("--env"), args.indexOf("--env") + 2)).toEqual(["--env", "GH_TOKEN=ghp_secret"]);
    expect(args).not.toContain("/dev/pts");
    expect(cmd).toMatchObject({ cwd: "/", mode: "landlock" });
  });

  test("a root that runs no programs reaches the helper as --ro-noexec or --rw-noexec in both modes (bwrap has no noexec of its own)", async () => {
    await using sb = await layout();
    const spec: ConfineSpec = { ...sb.spec(), roots: [{ path: sb.root, write: true }, { path: sb.visible, write: false, exec: false }, { path: sb.hidden, write: true, exec: false }] };
    for (const preferBwrap of [true, false]) {
      const cmd = planConfinedCommand(spec, LINUX, { helper, preferBwrap, hostSecrets: [] });
      const args = argsFromEnv(cmd.env)!;
      expect({ preferBwrap, ro: args[args.indexOf("--ro-noexec") + 1], rw: args[args.indexOf("--rw-noexec") + 1] }).toEqual({ preferBwrap, ro: sb.visible, rw: sb.hidden });
    }
  });

  test("non-PTY runs get --new-session in bwrap too", async () => {
    await using sb = await layout();
    const cmd = planConfinedCommand(sb.spec(), LINUX, { helper, newSession: true });
    expect(cmd.argv.filter((a) => a === "--new-session")).toHaveLength(1);
    expect(argsFromEnv(cmd.env)).toContain("--new-session");
  });

  test("existing host secrets are hidden before the roots are bound, so a root below one shows through", async () => {
    await using sb = await layout();
    const secretHome = join(sb.hidden, "home");
    const project = join(secretHome, "project");
    mkdirSync(project, { recursive: true });
    const cmd = planConfinedCommand({ ...sb.spec(), roots: [{ path: project, write: true }], cwd: project }, LINUX, {
      helper,
      hostSecrets: [secretHome, join(sb.hidden, "absent")],
    });
    const conceal = cmd.argv.indexOf(secretHome);
    expect(cmd.argv[conceal - 1]).toBe("--tmpfs");
    expect(conceal).toBeLessThan(cmd.argv.indexOf(project));
    const args = argsFromEnv(cmd.env)!;
    expect(args.join(" ")).toContain(`--deny ${secretHome}`);
    expect([...cmd.argv, ...args].join(" ")).not.toContain("absent");
  });
});

describe("a root above what bwrap hides", () => {
  test("the hidden dirs and host secrets inside a root are hidden again on top of it, and what must show inside them is bound after", async () => {
    await using sb = await layout();
    const secret = join(sb.root, "keys");
    const project = join(secret, "project");
    mkdirSync(project, { recursive: true });
    const cmd = planConfinedCommand({ ...sb.spec(), roots: [{ path: sb.root, write: false }, { path: project, write: true }] }, LINUX, {
      helper: { bun: join(secret, "bun"), script: join(secret, "hatch", "landlock-exec.ts") },
      hostSecrets: [secret],
    });
    const at = (...seq: string[]) => cmd.argv.findIndex((_, i) => i > 8 && seq.every((s, j) => cmd.argv[i + j] === s));
    const root = at("--ro-bind", sb.root, sb.root);
    const hidden = at("--tmpfs", secret);
    const exposed = at("--ro-bind", join(secret, "hatch"), join(secret, "hatch"));
    const inner = at("--bind", project, project);
    expect([root, hidden, exposed, inner].every((i) => i > 0)).toBe(true);
    expect(root < hidden && hidden < exposed && hidden < inner).toBe(true);
  });

  test("the directories pinned between a writable root and a read-only sub-root stop at a host secret on the way, never binding the host's copy over it", async () => {
    await using sb = await layout();
    const keys = join(sb.root, "lib", "keys");
    const project = join(keys, "team", "project");
    mkdirSync(project, { recursive: true });
    const cmd = planConfinedCommand({ ...sb.spec(), roots: [{ path: sb.root, write: true }, { path: project, write: false }] }, LINUX, { helper, hostSecrets: [keys] });
    const binds = cmd.argv.flatMap((arg, i) => (arg === "--bind" || arg === "--ro-bind" ? [`${arg} ${cmd.argv[i + 1]}`] : []));
    expect(binds).toContain(`--bind ${join(sb.root, "lib")}`);
    expect(binds.filter((bind) => bind.includes(keys))).toEqual([`--ro-bind ${project}`]);
  });
});

describe("a root below a path the caller's own policy denies", () => {
  /** root/secret denied by the policy, root/secret/pub allowed again; the helper's script sits in root/secret/tools. */
  function reopened(sb: Sandbox) {
    const secret = join(sb.root, "secret");
    const pub = join(secret, "pub");
    mkdirSync(pub, { recursive: true });
    mkdirSync(join(secret, "tools"));
    const spec = { ...sb.spec(), roots: [{ path: sb.root, write: true }, { path: pub, write: false }], policyDeny: [secret] };
    return { secret, pub, spec, helper: { bun: helper.bun, script: join(secret, "tools", "landlock-exec.ts") } };
  }

  test("bwrap covers the denied path after its parent root and before the root below it, and exposes the helper inside it; Landlock denies it and grants the root below its own rule", async () => {
    await using sb = await layout();
    const { secret, pub, spec, helper } = reopened(sb);
    const cmd = planConfinedCommand(spec, LINUX, { helper, hostSecrets: [] });
    const at = (...seq: string[]) => cmd.argv.findIndex((_, i) => i > 8 && seq.every((s, j) => cmd.argv[i + j] === s));
    const [parent, cover, inner, tools, data] = [at("--bind", sb.root), at("--tmpfs", secret), at("--ro-bind", pub, pub), at("--ro-bind", join(secret, "tools")), at("--tmpfs", sb.data)];
    expect([parent, cover, inner, tools, data].every((i) => i > 0)).toBe(true);
    expect(parent < cover && cover < inner && cover < tools && inner < data).toBe(true);
    const args = argsFromEnv(cmd.env)!.join(" ");
    // Inside bwrap a read-only root below a writable one normally leaves Landlock to the writable root's rule; the deny carves that away.
    expect(args).toContain(`--ro ${pub}`);
    expect(args).toContain(`--deny ${secret}`);
  });

  test("at the denied path itself the deny wins; the service's own deny paths are never re-opened, whatever the policy says", async () => {
    await using sb = await layout();
    const { secret, pub, spec, helper } = reopened(sb);
    const scratchDir = join(sb.data, "scratch");
    const cases: Partial<ConfineSpec>[] = [
      { roots: [...spec.roots, { path: secret, write: false }] },
      { roots: [...spec.roots, { path: scratchDir, write: false }] },
      // The data dir (in `deny`) stays closed even when the policy names it too.
      { roots: [...spec.roots, { path: scratchDir, write: false }], policyDeny: [secret, sb.data] },
      { cwd: join(secret, "tools") },
    ];
    for (const c of cases) {
      expect({ c, r: refusal(() => planConfinedCommand({ ...spec, ...c }, LINUX, { helper })) }).toEqual({ c, r: { code: "root_invalid", status: 400 } });
    }
    expect(planConfinedCommand({ ...spec, cwd: pub }, LINUX, { helper }).mode).toBe("landlock+bwrap");
  });

  test("the service's own code inside a denied path stays behind the deny instead of becoming a read-only root", async () => {
    await using sb = await layout();
    const { secret, spec, helper } = reopened(sb);
    const install = join(secret, "hatch");
    mkdirSync(install);
    for (const preferBwrap of [true, false]) {
      const cmd = planConfinedCommand(spec, LINUX, { helper, preferBwrap, hostSecrets: [], neverWritable: [install] });
      expect([...cmd.argv, ...argsFromEnv(cmd.env)!].join(" ")).not.toContain(install);
    }
  });
});

describe("refused roots (root_invalid, before anything is spawned)", () => {
  test("a root that is a symlink leading out of its source boundary", async () => {
    await using sb = await layout();
    symlinkSync("/etc", join(sb.root, "etc-link"));
    const spec = { ...sb.spec(), roots: [{ path: join(sb.root, "etc-link"), write: false }], sourceBoundary: sb.root };
    expect(refusal(() => planConfinedCommand(spec, LINUX, { helper }))).toEqual({ code: "root_invalid", status: 400 });
  });

  test("a source boundary that is a symlink now (a root swapped for a link after the create-time check)", async () => {
    await using sb = await layout();
    const swapped = join(sb.root, "inner");
    symlinkSync(sb.visible, swapped);
    const spec = { ...sb.spec(), roots: [{ path: swapped, write: true }], sourceBoundary: swapped, cwd: swapped };
    expect(refusal(() => planConfinedCommand(spec, LINUX, { helper }))).toEqual({ code: "root_invalid", status: 400 });
  });

  test("a writable root at or inside a never-writable path (the service's own install)", async () => {
    await using sb = await layout();
    mkdirSync(join(sb.root, "inner"));
    for (const path of [sb.root, join(sb.root, "inner")]) {
      const spec = { ...sb.spec(), roots: [{ path, write: true }], cwd: path };
      expect(refusal(() => planConfinedCommand(spec, LINUX, { helper, neverWritable: [sb.root] }))).toEqual({ code: "root_invalid", status: 400 });
    }
  });

  test("a writable root inside the system's code and config (/usr/local, /etc/default) is refused; read-only there is fine", async () => {
    await using sb = await layout();
    for (const path of ["/usr/local", "/etc/default"]) {
      const spec = { ...sb.spec(), roots: [...sb.spec().roots, { path, write: true }] };
      expect({ path, r: refusal(() => planConfinedCommand(spec, LINUX, { helper })) }).toEqual({ path, r: { code: "root_invalid", status: 400 } });
      const readOnly = { ...sb.spec(), roots: [...sb.spec().roots, { path, write: false }] };
      expect(planConfinedCommand(readOnly, LINUX, { helper }).argv.join(" ")).toContain(`--ro-bind ${path} ${path}`);
    }
  });

  test("a writable root at a dot entry of root's home (.ssh, .config) is refused; another dir there is not", async () => {
    await using sb = await layout();
    const home = join(sb.root, "home");
    for (const dir of [".ssh", ".config", "src"]) mkdirSync(join(home, dir), { recursive: true });
    writeFileSync(join(home, ".bashrc"), "");
    const systemCode = systemCodePaths(home);
    expect(systemCode).toEqual(expect.arrayContaining([...SYSTEM_CODE_PATHS, join(home, ".ssh"), join(home, ".config"), join(home, ".bashrc")]));
    expect(systemCode).not.toContain(join(home, "src"));
    for (const path of [join(home, ".ssh"), join(home, ".config")]) {
      const spec = { ...sb.spec(), roots: [...sb.spec().roots, { path, write: true }] };
      expect({ path, r: refusal(() => planConfinedCommand(spec, LINUX, { helper, systemCode })) }).toEqual({ path, r: { code: "root_invalid", status: 400 } });
    }
    const src = { ...sb.spec(), roots: [...sb.spec().roots, { path: join(home, "src"), write: true }] };
    expect(planConfinedCommand(src, LINUX, { helper, systemCode }).mode).toBe("landlock+bwrap");
  });

  test("a root passing through a symlink that leads out and back in", async () => {
    await using sb = await layout();
    mkdirSync(join(sb.root, "inner"));
    symlinkSync(sb.root, join(sb.hidden, "back")); // hidden/back -> root
    symlinkSync(join(sb.hidden, "back"), join(sb.root, "out-and-back")); // root/out-and-back -> hidden/back
    const spec = { ...sb.spec(), roots: [{ path: join(sb.root, "out-and-back", "inner"), write: true }], sourceBoundary: sb.root };
    expect(refusal(() => planConfinedCommand(spec, LINUX, { helper }))).toEqual({ code: "root_invalid", status: 400 });
  });

  test("a symlink that stays inside the boundary is accepted and resolved", async () => {
    await using sb = await layout();
    mkdirSync(join(sb.root, "real"));
    symlinkSync("real", join(sb.root, "alias"));
    const spec = { ...sb.spec(), roots: [{ path: join(sb.root, "alias"), write: true }], cwd: join(sb.root, "real"), sourceBoundary: sb.root };
    const cmd = planConfinedCommand(spec, LINUX, { helper });
    expect(cmd.argv.join(" ")).toContain(`--bind ${join(sb.root, "real")} ${join(sb.root, "real")}`);
  });

  test("a root reached through a symlink inside the boundary that lands in a policy deny, a host secret, or below a root that is read-only or runs nothing (a link swapped in after the create-time check)", async () => {
    await using sb = await layout();
    for (const dir of ["secret/private", "ro/sub", "noexec/sub", "keys/inner", "work"]) mkdirSync(join(sb.root, dir), { recursive: true });
    const base = { ...sb.spec(), sourceBoundary: sb.root, policyDeny: [join(sb.root, "secret")] };
    const direct = [{ path: sb.root, write: true }, { path: join(sb.root, "ro"), write: false }, { path: join(sb.root, "noexec"), write: true, exec: false }];
    const linked = (target: string, root: { write: boolean; exec?: boolean }) => {
      const link = join(sb.root, "work", probeName("link"));
      symlinkSync(join("..", target), link);
      return { ...base, roots: [...direct, { path: link, ...root }] };
    };
    const cases = [
      linked("secret/private", { write: false }),
      linked("ro/sub", { write: true }),
      linked("noexec/sub", { write: true }),
    ];
    for (const spec of cases) {
      expect({ roots: spec.roots.at(-1), r: refusal(() => planConfinedCommand(spec, LINUX, { helper })) }).toEqual({ roots: spec.roots.at(-1), r: { code: "root_invalid", status: 400 } });
    }
    const secret = linked("keys/inner", { write: false });
    expect(refusal(() => planConfinedCommand(secret, LINUX, { helper, hostSecrets: [join(sb.root, "keys")] }))).toEqual({ code: "root_invalid", status: 400 });
    // Where the rules reached directly give as much, a link is followed as before.
    const same = linked("ro/sub", { write: false });
    expect(planConfinedCommand(same, LINUX, { helper, hostSecrets: [] }).argv.join(" ")).toContain(`--ro-bind ${join(sb.root, "ro", "sub")} ${join(sb.root, "ro", "sub")}`);
  });

  test("missing roots, roots inside a deny path, writable system dirs, a cwd outside the roots, a shared scratch dir", async () => {
    await using sb = await layout();
    const base = sb.spec();
    const loose = join(sb.data, "scratch", "loose");
    mkdirSync(loose);
    chmodSync(loose, 0o755);
    const cases: Partial<ConfineSpec>[] = [
      { roots: [{ path: join(sb.root, "missing"), write: true }] },
      { roots: [{ path: join(sb.data, "scratch"), write: false }] },
      { roots: [{ path: "/", write: true }] },
      { roots: [{ path: "/etc", write: true }] },
      { roots: [{ path: "/tmp", write: true }] },
      { roots: [{ path: "/proc/self", write: true }] },
      { roots: [{ path: sb.root, write: true }, { path: sb.root, write: false }] },
      { roots: [{ path: sb.root, write: true }, { path: sb.root, write: true, exec: false }] },
      { cwd: sb.hidden },
      { scratch: loose },
      { argv: ["bash"] },
      { env: { "A=B": "x" } },
    ];
    for (const c of cases) {
      expect({ c, r: refusal(() => planConfinedCommand({ ...base, ...c }, LINUX, { helper })) }).toEqual({ c, r: { code: "root_invalid", status: 400 } });
    }
  });
});

test("the default helper is the landlock-exec.ts beside the planner, run by this Bun", () => {
  expect(defaultLandlockHelper()).toEqual({ bun: process.execPath, script: join(import.meta.dir, "../../src/confine/landlock-exec.ts") });
});
