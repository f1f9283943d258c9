/**
 * Stopping a PTY's output from the server's side with `tcflow(TCOOFF)` on its
 * slave, the one place the pty part calls into libc (`bun:ffi`). Unlike an
 * XOFF written to the master, it puts no character on the line: a program
 * whose tty has other stop and start characters (`stty stop undef`), or that
 * turned IXON off meanwhile, never reads a stray ^S or ^Q as a key. And the
 * kernel keeps such a stop apart from the user's ^Q and IXANY, so only the
 * matching TCOON restarts the output.
 */
import { dlopen } from "bun:ffi";
import { closeSync, constants, openSync, readlinkSync } from "node:fs";

/** `ioctl(fd, TCXONC, TCOOFF | TCOON)` is what tcflow(3) does (Linux values). */
const TCXONC = 0x540a;
const TCOOFF = 0;
const TCOON = 1;

let libc: ReturnType<typeof bindLibc> | null = null;

function bindLibc() {
  return dlopen("libc.so.6", { ioctl: { args: ["i32", "u64", "i32"], returns: "i32" } }).symbols;
}

/** The slave of the PTY a process has on its stdin (`/dev/pts/N`), or null when it has none or has already ended. */
export function ptySlaveOf(pid: number): string | null {
  try {
    const path = readlinkSync(`/proc/${pid}/fd/0`);
    return /^\/dev\/pts\/\d+$/.test(path) ? path : null;
  } catch {
    return null;
  }
}

/**
 * Stop the output of the PTY whose slave is `slave`: its programs' writes
 * block until the returned function restarts it. Null when it cannot be
 * stopped (the PTY is gone).
 */
export function stopPtyOutput(slave: string): (() => void) | null {
  let fd: number;
  try {
    fd = openSync(slave, constants.O_RDWR | constants.O_NOCTTY | constants.O_NONBLOCK);
  } catch {
    return null;
  }
  libc ??= bindLibc();
  const calls = libc;
  if (calls.ioctl(fd, TCXONC, TCOOFF) !== 0) {
    closeSync(fd);
    return null;
  }
  return () => {
    calls.ioctl(fd, TCXONC, TCOON);
    closeSync(fd);
  };
}
