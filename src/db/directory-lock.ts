/**
 * An exclusive `flock(2)` on a directory, the one place the db part calls into
 * libc (`bun:ffi`). A lock on the directory itself, unlike one on a file in
 * it, cannot be undone by deleting a file that reads like a stale lock: the
 * directory cannot go while it holds anything. The kernel drops it when the
 * process dies, and the processes it starts never share it (the fd is opened
 * close-on-exec).
 */
import { dlopen, read } from "bun:ffi";
import { closeSync, constants, openSync } from "node:fs";

/** flock(2)'s operations and its "held by another" errno (Linux values). */
const LOCK_EX = 2;
const LOCK_NB = 4;
const EWOULDBLOCK = 11;

/** libc, bound at the first lock: a process claims one data dir, once. */
let libc: ReturnType<typeof bindLibc> | null = null;

function bindLibc() {
  return dlopen("libc.so.6", {
    flock: { args: ["i32", "i32"], returns: "i32" },
    __errno_location: { args: [], returns: "ptr" },
  }).symbols;
}

/**
 * Lock `dir` for this process until the returned function releases it; null
 * when another process holds it. Never waits. Throws when the directory
 * cannot be opened or locked at all.
 */
export function lockDirectory(dir: string): (() => void) | null {
  const fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY);
  libc ??= bindLibc();
  if (libc.flock(fd, LOCK_EX | LOCK_NB) !== 0) {
    const errno = read.i32(libc.__errno_location()!, 0);
    closeSync(fd);
    if (errno === EWOULDBLOCK) return null;
    throw new Error(`Cannot lock the directory "${dir}": flock(2) failed with errno ${errno} (its filesystem may not support locks)`);
  }
  // Closing the fd drops the lock: it is the lock's only holder.
  return () => closeSync(fd);
}
