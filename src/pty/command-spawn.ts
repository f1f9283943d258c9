import { statSync } from "node:fs";
import { HatchError } from "../platform/index.ts";
import { enteringCgroup, type LaunchSpec } from "./launch-spec.ts";

/** A non-interactive child process: output streams, exit, and a group kill. */
export interface CommandProcess {
  readonly pid: number;
  readonly stdout: ReadableStream<Uint8Array>;
  readonly stderr: ReadableStream<Uint8Array>;
  readonly exited: Promise<number>;
  /** Signal the child's whole process group. */
  kill(signal: NodeJS.Signals): void;
}

/** Runs `argv` in a session's sandbox (same cwd, env, scratch). The confinement launcher replaces the default. */
export type CommandSpawner = (launch: LaunchSpec, argv: string[]) => CommandProcess;

/**
 * Spawn a non-interactive child in its own process group (`detached`), so a
 * timeout kills everything it started, not just the shell. Only fds 0-2 reach it.
 */
export function spawnDetached(command: { argv: string[]; cwd: string; env: Record<string, string>; stdin?: string }): CommandProcess {
  const stdin = command.stdin === undefined ? "ignore" : new TextEncoder().encode(command.stdin);
  const child = Bun.spawn(command.argv, { cwd: command.cwd, env: command.env, stdin, stdout: "pipe", stderr: "pipe", detached: true });
  return {
    pid: child.pid,
    stdout: child.stdout,
    stderr: child.stderr,
    exited: child.exited,
    kill: (signal) => {
      try {
        process.kill(-child.pid, signal);
      } catch {
        child.kill(signal);
      }
    },
  };
}

/** The command spawner of an unconfined launch (Container Root, exec.unconfined). */
export const spawnCommandUnconfined: CommandSpawner = (launch, argv) => {
  // The session may have removed its own working directory; Bun.spawn's ENOENT would name the program instead (a 500).
  // Answered as a confined launch's missing directory is.
  if (!isDirectory(launch.cwd)) throw new HatchError("root_invalid", 400, `Cannot use working directory "${launch.cwd}": it does not exist`, { detail: { path: launch.cwd } });
  return spawnDetached({ argv: enteringCgroup(launch, argv), cwd: launch.cwd, env: launch.env });
};

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** A command spawner that runs confined launches through the planner and fails closed without one. */
export function createCommandSpawner(planner: ((launch: LaunchSpec) => { argv: string[]; env: Record<string, string>; cwd: string }) | null): CommandSpawner {
  return (launch, argv) => {
    if (!launch.confine) return spawnCommandUnconfined(launch, argv);
    if (!planner) throw new HatchError("confinement_unavailable", 500, "Cannot run a confined command: no confinement launcher is configured");
    const plan = planner({ ...launch, argv });
    return spawnDetached({ ...plan, argv: enteringCgroup(launch, plan.argv) });
  };
}
