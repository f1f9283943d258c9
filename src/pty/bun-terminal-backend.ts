import type { PtyBackend, PtyProcess } from "./pty-process.ts";
import { ptySlaveOf, stopPtyOutput } from "./tty-flow.ts";

/** termios c_iflag bit: output flow control by ^S/^Q (Linux value). */
const IXON = 0o2000;

/**
 * The default PTY backend: Bun's built-in terminal (`Bun.spawn({ terminal })`).
 * It reads the PTY from the event loop as data arrives, so a keystroke's echo
 * reaches the WebSocket without a polling delay (bun-pty's reader polls every
 * 8 ms, which alone misses the echo latency target; bench/terminal.ts prints both).
 *
 * Pausing uses the tty's own flow control: while the program leaves IXON on
 * (shells, `yes`, `cat`, compilers), the tty's output is stopped with
 * tcflow(TCOOFF) on its slave (see tty-flow.ts), which blocks the producer's
 * write() — real backpressure — and puts no ^S or ^Q on the line. A program
 * that turned IXON off (vim, less, htop) asked for no flow control, so it is
 * not paused: `pause` answers false and the caller cuts the view over to a
 * snapshot. One that turns it off while paused stays paused until `resume`.
 */
export const bunTerminalBackend: PtyBackend = (options) => {
  let unwritten = 0;
  const proc = Bun.spawn(options.argv, {
    cwd: options.cwd,
    env: options.env,
    terminal: {
      cols: options.cols,
      rows: options.rows,
      name: options.env.TERM ?? "xterm-256color",
      data: (_terminal, data) => options.onData(data),
      // Called once the PTY has taken everything written so far.
      drain: () => {
        unwritten = 0;
      },
    },
  });
  const terminal = proc.terminal!;
  // Read now, while the program surely has its tty on stdin.
  const slave = ptySlaveOf(proc.pid);
  let restart: (() => void) | null = null;
  const process: PtyProcess = {
    pid: proc.pid,
    write: (data) => {
      if (terminal.closed) return;
      // An upper bound: it counts what the PTY took at once too, until the drain after it.
      unwritten += Buffer.byteLength(data);
      terminal.write(data);
    },
    get unwritten() {
      return unwritten;
    },
    resize: (cols, rows) => {
      if (!terminal.closed) terminal.resize(cols, rows);
    },
    pause: () => {
      if (terminal.closed || slave === null) return false;
      if (restart) return true;
      if ((terminal.inputFlags & IXON) === 0) return false;
      restart = stopPtyOutput(slave);
      return restart !== null;
    },
    resume: () => {
      const held = restart;
      restart = null;
      held?.();
    },
    kill: (signal = "SIGHUP") => {
      try {
        // The shell is a session leader, so its pid is also its process group.
        globalThis.process.kill(-proc.pid, signal);
      } catch {
        proc.kill(signal);
      }
    },
    exited: proc.exited.then(async (code) => {
      // A child the program left may still write to a paused tty: let it go, and close the slave held for the pause.
      process.resume();
      // Let the reader deliver what the program wrote just before exiting.
      await Bun.sleep(EXIT_DRAIN_MS);
      terminal.close();
      return code;
    }),
  };
  return process;
};

/** Trailing output of an exiting program can land after the exit notice; wait for it briefly. */
const EXIT_DRAIN_MS = 30;
