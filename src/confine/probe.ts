/**
 * What this host can confine with: the platform, the Landlock ABI, and a
 * bubblewrap that actually works here (installed is not enough: user
 * namespaces or /proc mounts may be forbidden, e.g. inside some containers).
 * Probe once at start; the answer does not change while the process lives.
 */
import { accessSync, constants } from "node:fs";
import { BWRAP_ISOLATION } from "./bwrap-args.ts";
import { loadLinuxCalls } from "./linux-calls.ts";

/** What the host offers. */
export interface ConfinementProbe {
  platform: string;
  /** Landlock ABI version, or null when absent or disabled. */
  landlockAbi: number | null;
  /** Absolute path of a bwrap that passed the trial run, or null. */
  bwrapPath: string | null;
}

/** Collaborators, injectable for tests. */
export interface ProbeOptions {
  platform?: string;
  landlockAbi?: () => number | null;
  /** Looked up in this order; PATH is not consulted, so a writable PATH entry cannot swap bwrap. */
  bwrapCandidates?: string[];
  /** Runs bwrap with the trial arguments; true when it exits 0. */
  tryBwrap?: (bwrapPath: string, args: string[]) => Promise<boolean>;
}

const DEFAULT_BWRAP_CANDIDATES = ["/usr/bin/bwrap", "/usr/local/bin/bwrap", "/bin/bwrap"];
/** A trial run takes about 10 ms; anything near this means bwrap is stuck, so treat it as unusable. */
const BWRAP_TRIAL_TIMEOUT_MS = 5_000;
const TRUE_CANDIDATES = ["/usr/bin/true", "/bin/true"];

/** The trial: the same isolation and mounts a real launch uses, running `true`. */
export function bwrapTrialArgs(truePath: string): string[] {
  return [...BWRAP_ISOLATION, "--clearenv", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", truePath];
}

/**
 * Probe the host.
 *
 * @example
 * const probe = await probeConfinement(); // { platform: "linux", landlockAbi: 7, bwrapPath: "/usr/bin/bwrap" }
 */
export async function probeConfinement(options: ProbeOptions = {}): Promise<ConfinementProbe> {
  const platform = options.platform ?? process.platform;
  if (platform !== "linux") return { platform, landlockAbi: null, bwrapPath: null };
  const landlockAbi = (options.landlockAbi ?? hostLandlockAbi)();
  const truePath = firstExecutable(TRUE_CANDIDATES);
  const tryBwrap = options.tryBwrap ?? runTrial;
  let bwrapPath: string | null = null;
  const candidate = firstExecutable(options.bwrapCandidates ?? DEFAULT_BWRAP_CANDIDATES);
  if (candidate !== null && truePath !== null && (await tryBwrap(candidate, bwrapTrialArgs(truePath)))) bwrapPath = candidate;
  return { platform, landlockAbi, bwrapPath };
}

/**
 * A probe function that runs once and then returns the same answer; the
 * composition root owns it.
 *
 * @example
 * const probe = cachedProbe(); await probe(); await probe(); // probed once
 */
export function cachedProbe(options: ProbeOptions = {}): () => Promise<ConfinementProbe> {
  let result: Promise<ConfinementProbe> | null = null;
  return () => (result ??= probeConfinement(options));
}

function hostLandlockAbi(): number | null {
  try {
    return loadLinuxCalls().landlockAbi();
  } catch {
    return null; // no glibc to call through: no Landlock we can use
  }
}

function firstExecutable(paths: string[]): string | null {
  for (const path of paths) {
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      // try the next
    }
  }
  return null;
}

async function runTrial(bwrapPath: string, args: string[]): Promise<boolean> {
  const proc = Bun.spawn([bwrapPath, ...args], { env: {}, stdin: "ignore", stdout: "ignore", stderr: "ignore" });
  const timer = setTimeout(() => proc.kill("SIGKILL"), BWRAP_TRIAL_TIMEOUT_MS);
  try {
    return (await proc.exited) === 0;
  } finally {
    clearTimeout(timer);
  }
}
