import { readFileSync, readlinkSync } from "node:fs";
import { basename } from "node:path";

/**
 * Which program has the keyboard of a session's terminal, as the kernel sees
 * it: the leader of the terminal's foreground process group. The screen mirror
 * only knows what the output claimed (an alternate screen is one `printf`
 * away), so the input guard asks this before it trusts "a full-screen program
 * runs".
 *
 * Linux only, through /proc; /proc answers from memory, so the reads are
 * synchronous and take microseconds. They run only when an edited line ends
 * while the alternate screen is active.
 */

/**
 * File names of the shells a user reads a command line in. The session's own
 * shell is added by the caller, so a shell not listed here (or installed under
 * another name by the operator) still counts when the session started it.
 */
export const SHELL_NAMES: ReadonlySet<string> = new Set([
  "sh", "bash", "rbash", "dash", "ash", "busybox", "zsh", "fish", "ksh", "ksh93", "mksh", "pdksh", "oksh", "loksh",
  "yash", "posh", "tcsh", "csh", "elvish", "nu", "xonsh", "pwsh",
]);

/**
 * True when a shell leads the foreground of the terminal `pid` is attached to,
 * false when another program does, null when the kernel cannot tell (no /proc,
 * no controlling terminal, the process is gone).
 *
 * The program is the file the leader runs (`/proc/<pid>/exe`), not its name:
 * a process renames itself with one write to `/proc/self/comm`, and a symlink
 * named `vim` still runs bash. A copy of a shell under another name is not
 * recognised; the screening this serves is best-effort.
 *
 * @example
 * shellInForeground(session.pid, "/bin/bash") // true at the prompt, false under vim
 */
export function shellInForeground(pid: number, ownShell: string): boolean | null {
  const leader = foregroundGroup(pid);
  if (leader === null) return null;
  let program: string;
  try {
    program = readlinkSync(`/proc/${leader}/exe`).replace(/ \(deleted\)$/, "");
  } catch {
    return null;
  }
  const name = basename(program);
  return SHELL_NAMES.has(name) || name === basename(ownShell);
}

/**
 * The working directory of the program with the keyboard of the terminal
 * `pid` is attached to (at a prompt, the shell reading the line), else of
 * `pid` itself; null when the kernel cannot tell.
 *
 * @example
 * foregroundDirectory(session.pid) // "/" in a fresh Container Root tab
 */
export function foregroundDirectory(pid: number): string | null {
  for (const candidate of [foregroundGroup(pid), pid]) {
    if (candidate === null) continue;
    try {
      return readlinkSync(`/proc/${candidate}/cwd`).replace(/ \(deleted\)$/, "");
    } catch {
      // Gone, or not ours to read: try the next.
    }
  }
  return null;
}

/** The foreground process group of `pid`'s controlling terminal (`tpgid`), or null. */
function foregroundGroup(pid: number): number | null {
  const stat = readProc(`/proc/${pid}/stat`);
  if (stat === undefined) return null;
  // "pid (comm) state ppid pgrp session tty_nr tpgid ...": comm may hold spaces and parentheses.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const tpgid = Number(fields[5]);
  return Number.isInteger(tpgid) && tpgid > 0 ? tpgid : null;
}

function readProc(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
}
