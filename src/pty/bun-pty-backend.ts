import { spawn } from "bun-pty";
import type { PtyBackend } from "./pty-process.ts";

const encoder = new TextEncoder();
/** coreutils env(1): present on every system bash runs on. */
const ENV_BINARY = "/usr/bin/env";

/**
 * The bun-pty backend (the design card's library), kept selectable with
 * HATCH_PTY_BACKEND=bun-pty. Its reader thread polls every 8 ms and it cannot
 * pause, so it is not the default: see bench/terminal.ts for the echo figures.
 * It delivers decoded strings, which are re-encoded so offsets stay byte counts.
 */
export const bunPtyBackend: PtyBackend = (options) => {
  // bun-pty merges the server's own environment into the child's whatever `env` says,
  // so the program is started through `env -i` with exactly the variables it was given.
  const clean = [ENV_BINARY, "-i", ...Object.entries(options.env).map(([k, v]) => `${k}=${v}`), ...options.argv];
  const [file, ...args] = clean;
  const pty = spawn(file!, args, { name: options.env.TERM ?? "xterm-256color", cols: options.cols, rows: options.rows, cwd: options.cwd, env: options.env });
  pty.onData((data) => options.onData(encoder.encode(data)));
  const exited = new Promise<number>((resolve) => pty.onExit((event) => resolve(event.exitCode)));
  return {
    pid: pty.pid,
    write: (data) => pty.write(data),
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
