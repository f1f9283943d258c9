import { spawn } from "bun-pty";
import type { PtyBackend } from "./pty-process.ts";

const encoder = new TextEncoder();
/** GNU coreutils env(1), 8.30 or later for `-S` with `${NAME}` (Debian 10, Ubuntu 20.04 and later). */
const ENV_BINARY = "/usr/bin/env";
/** The names the given variables travel under in env(1)'s own environment, numbered, so no name of the server's collides. */
const CARRIED_PREFIX = "HATCH_PTY_ENV_";

/**
 * The bun-pty backend (the design card's library), kept selectable with
 * HATCH_PTY_BACKEND=bun-pty. Its reader thread polls every 8 ms and it cannot
 * pause, so it is not the default: see bench/terminal.ts for the echo figures.
 * It delivers decoded strings, which are re-encoded so offsets stay byte counts.
 */
export const bunPtyBackend: PtyBackend = (options) => {
  // bun-pty merges the server's own environment into the child's whatever `env` says, so the program is
  // started through `env -i` with exactly the variables it was given. Their values must not be env's
  // arguments: any host user and any Landlock-only sandbox can read a command line, and these hold the
  // program's environment (for a confined session, its helper's arguments). They travel in env's own
  // environment instead, and `-S` expands a reference to each (`${NAME}`) into one NAME=VALUE argument,
  // read before -i clears the environment and never split or re-parsed.
  const entries = Object.entries(options.env);
  const carried = Object.fromEntries(entries.map(([name, value], i) => [`${CARRIED_PREFIX}${i}`, `${name}=${value}`]));
  const references = entries.map((_, i) => `\${${CARRIED_PREFIX}${i}}`).join(" ");
  const [file, ...args] = [ENV_BINARY, "-i", "-S", references, ...options.argv];
  const pty = spawn(file!, args, { name: options.env.TERM ?? "xterm-256color", cols: options.cols, rows: options.rows, cwd: options.cwd, env: carried });
  pty.onData((data) => options.onData(encoder.encode(data)));
  const exited = new Promise<number>((resolve) => pty.onExit((event) => resolve(event.exitCode)));
  return {
    pid: pty.pid,
    write: (data) => pty.write(data),
    // Its writer thread keeps its own queue, which it does not show.
    unwritten: 0,
    resize: (cols, rows) => pty.resize(cols, rows),
    pause: () => false,
    resume: () => {},
    kill: (signal = "SIGHUP") => {
      try {
        process.kill(-pty.pid, signal);
      } catch {
        // Already gone.
      }
      pty.kill(signal);
    },
    exited,
  };
};
