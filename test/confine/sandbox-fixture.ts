/**
 * A throwaway host layout for escape tests, and a runner that spawns a bash
 * script through the real planner in a chosen mode.
 *
 * Layout under a fresh temp dir (mkdtemp, removed on dispose):
 *   root/      writable root (cwd)
 *   visible/   read-only root: outside the writable area but visible in both modes
 *   hidden/    in no root: hidden by bwrap's /tmp tmpfs, denied by Landlock
 *   data/      deny path (service data dir) holding key and the sessions' scratch dirs
 *   sibling/   next to data, readable through `/`
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type ConfinedCommand,
  type ConfinementMode,
  type ConfinementProbe,
  type ConfineSpec,
  defaultLandlockHelper,
  type PlanOptions,
  planConfinedCommand,
  probeConfinement,
} from "../../src/confine/index.ts";

/** Both confinement modes; every escape test runs in each. */
export const MODES: ConfinementMode[] = ["landlock", "landlock+bwrap"];

/** The token the test process holds and the sandbox must never see. */
export const FAKE_TOKEN_VALUE = `fake-${crypto.randomUUID()}`;

let probed: Promise<ConfinementProbe> | null = null;
/** The host probe, run once per test file. */
export function hostProbe(): Promise<ConfinementProbe> {
  return (probed ??= probeConfinement());
}

/** Fail (never skip) when the host cannot run `mode`. */
export function requireMode(probe: ConfinementProbe, mode: ConfinementMode): void {
  if (probe.platform !== "linux") throw new Error(`Confinement tests need Linux, got "${probe.platform}"`);
  if (probe.landlockAbi === null) throw new Error("Landlock is not available on this kernel: confinement cannot be tested");
  if (mode === "landlock+bwrap" && probe.bwrapPath === null) {
    throw new Error("bubblewrap is missing or not working here: install it with `apt-get install -y bubblewrap` (CI installs it)");
  }
}

/** Output of one confined run. */
export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** A unique name for a probe file, so a leftover can never make a test pass. */
export const probeName = (label: string) => `hatch-escape-${label}-${crypto.randomUUID()}`;

/** One host layout plus the mode it confines with. */
export class Sandbox implements AsyncDisposable {
  readonly root: string;
  readonly visible: string;
  readonly hidden: string;
  readonly data: string;
  readonly sibling: string;
  readonly scratch: string;

  private constructor(
    readonly mode: ConfinementMode,
    readonly probe: ConfinementProbe,
    readonly base: string,
  ) {
    this.root = join(base, "root");
    this.visible = join(base, "visible");
    this.hidden = join(base, "hidden");
    this.data = join(base, "data");
    this.sibling = join(base, "sibling");
    for (const dir of [this.root, this.visible, this.hidden, join(this.data, "scratch"), this.sibling]) mkdirSync(dir, { recursive: true });
    writeFileSync(join(this.data, "secret.key"), "the-secret-key-material");
    writeFileSync(join(this.sibling, "readme.txt"), "sibling-content");
    writeFileSync(join(this.visible, "note.txt"), "visible-content");
    this.scratch = mkdtempSync(join(this.data, "scratch", "s-"));
    chmodSync(this.scratch, 0o700);
  }

  /** A fresh layout for `mode`; throws (fails the test) when the host cannot run it. */
  static async create(mode: ConfinementMode): Promise<Sandbox> {
    const probe = await hostProbe();
    requireMode(probe, mode);
    return new Sandbox(mode, probe, mkdtempSync(join(tmpdir(), "hatch-confine-")));
  }

  /** The default spec: root writable, visible read-only, data denied. */
  spec(overrides: Partial<ConfineSpec> = {}): ConfineSpec {
    return {
      roots: [
        { path: this.root, write: true },
        { path: this.visible, write: false },
      ],
      scratch: this.scratch,
      deny: [this.data],
      cwd: this.root,
      argv: ["/bin/bash", "--norc", "--noprofile", "-c", "true"],
      env: { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: this.scratch, TMPDIR: this.scratch, TMP: this.scratch, TEMP: this.scratch, LANG: "C.UTF-8", HATCH_VISIBLE: "yes" },
      ...overrides,
    };
  }

  /** Plan in this sandbox's mode; asserts the planner picked that mode. */
  plan(spec: ConfineSpec = this.spec(), options: Partial<PlanOptions> = {}, probe: ConfinementProbe = this.probe): ConfinedCommand {
    const cmd = planConfinedCommand(spec, probe, { helper: defaultLandlockHelper(), preferBwrap: this.mode === "landlock+bwrap", ...options });
    if (cmd.mode !== this.mode) throw new Error(`Planned mode "${cmd.mode}", expected "${this.mode}"`);
    return cmd;
  }

  /** Run `script` with bash, confined, and collect its output. */
  async run(script: string, spec: Partial<ConfineSpec> = {}, extra: { stdio?: (number | "ignore")[]; options?: Partial<PlanOptions> } = {}): Promise<RunResult> {
    const full = this.spec({ argv: ["/bin/bash", "--norc", "--noprofile", "-c", script], ...spec });
    const cmd = this.plan(full, { newSession: true, ...extra.options });
    return runCommand(cmd, extra.stdio);
  }

  /** True if `path` exists on the host (the escape-test oracle). */
  hostHas(path: string): boolean {
    return existsSync(path);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    rmSync(this.base, { recursive: true, force: true });
  }
}

/** Spawn a planned command with its own env and cwd; extra stdio entries become fds 3 and up. */
export async function runCommand(cmd: ConfinedCommand, extraStdio: (number | "ignore")[] = []): Promise<RunResult> {
  const proc = Bun.spawn(cmd.argv, {
    env: cmd.env,
    cwd: cmd.cwd,
    stdio: ["ignore", "pipe", "pipe", ...extraStdio],
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout as ReadableStream).text(),
    new Response(proc.stderr as ReadableStream).text(),
    proc.exited,
  ]);
  return { code, stdout, stderr };
}
