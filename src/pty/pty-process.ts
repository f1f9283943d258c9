/**
 * One running program on a pseudo-terminal, whatever library drives it. The
 * session code talks only to this interface, so the backend (and, later, the
 * confined launcher in front of it) can change without touching sessions.
 */
export interface PtyProcess {
  readonly pid: number;
  /** Bytes typed by the user (or a paste); never blocks. */
  write(data: string): void;
  /**
   * Bytes given to `write` that the PTY has not taken yet: a program busy
   * elsewhere reads none, and what it does not read waits in the server.
   * 0 where the backend cannot tell (bun-pty queues in its own thread).
   */
  readonly unwritten: number;
  /** Resize the terminal; the kernel signals the program (SIGWINCH). */
  resize(cols: number, rows: number): void;
  /**
   * Ask the producer to stop writing. Returns false when this PTY cannot pause
   * right now (the program turned tty flow control off, as full-screen apps do),
   * so the caller falls back to cutting the view over to a snapshot.
   */
  pause(): boolean;
  /** Undo `pause`. */
  resume(): void;
  /** Signal the whole process group. */
  kill(signal?: NodeJS.Signals): void;
  /** Resolves with the exit code once the program has exited and its output drained. */
  readonly exited: Promise<number>;
}

/** What a PTY backend is given: the program, where, with what, at which size. */
export interface PtySpawnOptions {
  argv: string[];
  cwd: string;
  env: Record<string, string>;
  cols: number;
  rows: number;
  /** Raw output bytes, in order. Called on the event loop. */
  onData(chunk: Uint8Array): void;
}

/** Spawns a program on a new PTY. */
export type PtyBackend = (options: PtySpawnOptions) => PtyProcess;

/** Smallest and largest terminal sizes we accept; beyond these a client is wrong, not creative. */
export const MIN_COLS = 2;
export const MAX_COLS = 1000;
export const MIN_ROWS = 1;
export const MAX_ROWS = 500;
