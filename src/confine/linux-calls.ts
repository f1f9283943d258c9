/**
 * The one module that calls into libc through `bun:ffi`: Landlock's three
 * system calls, `prctl` (seccomp among them), `capset`, `setsid`, `unshare`, `chdir`, `execve`. Everything here
 * acts on the calling thread only, which is why the launcher helper runs it on
 * its JS main thread and then `execve`s from that same thread.
 */
import { dlopen, ptr, read } from "bun:ffi";
import { constants } from "node:fs";

/** Syscall numbers shared by x86_64 and arm64 (the generic table). */
const SYS = { landlock_create_ruleset: 444, landlock_add_rule: 445, landlock_restrict_self: 446, close_range: 436 } as const;
/** `landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)` returns the ABI version. */
const LANDLOCK_CREATE_RULESET_VERSION = 1;
const LANDLOCK_RULE_PATH_BENEATH = 1;
/** O_PATH and O_CLOEXEC have the same value on x86_64 and arm64; O_NOFOLLOW does not, so it comes from node. */
const O_PATH = 0o10000000;
const O_CLOEXEC = 0o2000000;
const PR = { SET_NO_NEW_PRIVS: 38, CAPBSET_DROP: 24, SET_SECUREBITS: 28, CAP_AMBIENT: 47, SET_SECCOMP: 22 } as const;
const SECCOMP_MODE_FILTER = 2;
const CLONE_NEWNET = 0x40000000;
const PR_CAP_AMBIENT_CLEAR_ALL = 4;
/** NOROOT, NO_SETUID_FIXUP, NO_CAP_AMBIENT_RAISE and KEEP_CAPS off, each locked: uid 0 never regains capabilities on exec. */
const SECURE_BITS_LOCKED_NOROOT = 0b1110_1111;
/** `_LINUX_CAPABILITY_VERSION_3`: two 32-bit words per set. */
const CAPABILITY_VERSION_3 = 0x20080522;
const CLOSE_RANGE_CLOEXEC = 1 << 2;
const F_SETFD = 2;
const FD_CLOEXEC = 1;
const ENOSYS = 38;
const EPERM = 1;

/** A failed libc or system call, with the errno it left. */
export class SyscallError extends Error {
  constructor(readonly call: string, readonly errno: number) {
    super(`${call} failed: errno ${errno}`);
    this.name = "SyscallError";
  }
}

/** The calls the confinement helper needs, bound to the running libc. */
export interface LinuxCalls {
  /** The Landlock ABI version, or null when Landlock is not built in or disabled at boot. */
  landlockAbi(): number | null;
  /** A new ruleset fd handling the given rights; `attrSize` follows the ABI. */
  createRuleset(fs: number, net: number, scoped: number, attrSize: number): number;
  /** Allow `access` beneath the object `pathFd` refers to. */
  addPathRule(rulesetFd: number, pathFd: number, access: number): void;
  /** An `O_PATH|O_NOFOLLOW|O_CLOEXEC` fd for `path`, or null if it does not exist. */
  openPath(path: string): number | null;
  close(fd: number): void;
  chdir(path: string): void;
  /** Start a new session (or confirm we lead one): no controlling terminal shared with the caller, so TIOCSTI cannot reach it. */
  setsid(): void;
  /** Mark every fd from `first` up close-on-exec, so only 0, 1 and 2 reach the program. */
  cloexecFrom(first: number, openFds: () => number[]): void;
  noNewPrivs(): void;
  /**
   * Move the calling thread into a new, empty network namespace (no interface
   * up): no TCP, UDP or other network at all, whatever Landlock's network
   * rights cover. Needs CAP_SYS_ADMIN, so it does nothing where the helper
   * runs without it: inside bwrap, which made one already, or a service not
   * running as root.
   */
  unshareNetwork(): void;
  /** Load a seccomp filter (`struct sock_filter` records) on the calling thread; needs no_new_privs. Inherited across execve. */
  installSeccomp(filter: Buffer): void;
  /** Empty the bounding, ambient, effective, permitted and inheritable sets and lock securebits when allowed. */
  dropCapabilities(): void;
  restrictSelf(rulesetFd: number): void;
  /** Replace the process image; returns only by throwing. */
  execve(path: string, argv: string[], env: string[]): never;
}

/** Bind libc (glibc's `libc.so.6`) and return the calls; throws if libc cannot be loaded. */
export function loadLinuxCalls(): LinuxCalls {
  const { symbols: c } = dlopen("libc.so.6", {
    // num + 5 arguments: with fewer, the unused registers carry garbage into add_rule's flags (EINVAL).
    syscall: { args: ["i64", "i64", "i64", "i64", "i64", "i64"], returns: "i64" },
    prctl: { args: ["i32", "u64", "u64", "u64", "u64"], returns: "i32" },
    open: { args: ["ptr", "i32", "i32"], returns: "i32" },
    close: { args: ["i32"], returns: "i32" },
    chdir: { args: ["ptr"], returns: "i32" },
    setsid: { args: [], returns: "i32" },
    unshare: { args: ["i32"], returns: "i32" },
    getsid: { args: ["i32"], returns: "i32" },
    getpid: { args: [], returns: "i32" },
    fcntl: { args: ["i32", "i32", "i32"], returns: "i32" },
    capset: { args: ["ptr", "ptr"], returns: "i32" },
    execve: { args: ["ptr", "ptr", "ptr"], returns: "i32" },
    __errno_location: { args: [], returns: "ptr" },
  });
  const errno = () => read.i32(c.__errno_location()!, 0);
  const check = (call: string, result: number | bigint) => {
    if (Number(result) < 0) throw new SyscallError(call, errno());
    return Number(result);
  };
  const cstr = (s: string) => Buffer.from(`${s}\0`, "utf8");

  return {
    landlockAbi() {
      const abi = Number(c.syscall(SYS.landlock_create_ruleset, 0, 0, LANDLOCK_CREATE_RULESET_VERSION, 0, 0));
      return abi > 0 ? abi : null;
    },
    createRuleset(fs, net, scoped, attrSize) {
      const attr = new BigUint64Array([BigInt(fs), BigInt(net), BigInt(scoped)]);
      return check("landlock_create_ruleset", c.syscall(SYS.landlock_create_ruleset, ptr(attr), attrSize, 0, 0, 0));
    },
    addPathRule(rulesetFd, pathFd, access) {
      // struct landlock_path_beneath_attr is packed: u64 allowed_access, s32 parent_fd (12 bytes).
      const attr = Buffer.alloc(12);
      attr.writeBigUInt64LE(BigInt(access), 0);
      attr.writeInt32LE(pathFd, 8);
      check("landlock_add_rule", c.syscall(SYS.landlock_add_rule, rulesetFd, LANDLOCK_RULE_PATH_BENEATH, ptr(attr), 0, 0));
    },
    openPath(path) {
      const fd = c.open(cstr(path), O_PATH | O_CLOEXEC | constants.O_NOFOLLOW, 0);
      if (fd >= 0) return fd;
      const code = errno();
      if (code === 2 || code === 20) return null; // ENOENT, ENOTDIR: nothing there to grant
      throw new SyscallError(`open("${path}")`, code);
    },
    close(fd) {
      c.close(fd);
    },
    chdir(path) {
      check(`chdir("${path}")`, c.chdir(cstr(path)));
    },
    setsid() {
      if (c.setsid() >= 0) return;
      // EPERM: already a group leader. Fine only if we already lead our own session (bwrap
      // --new-session or a PTY spawner did it); otherwise the caller's terminal is still ours.
      const code = errno();
      if (code === EPERM && c.getsid(0) === c.getpid()) return;
      throw new SyscallError("setsid", code);
    },
    cloexecFrom(first, openFds) {
      const result = Number(c.syscall(SYS.close_range, first, 0xffffffff, CLOSE_RANGE_CLOEXEC, 0, 0));
      if (result === 0) return;
      if (errno() !== ENOSYS) throw new SyscallError("close_range", errno());
      for (const fd of openFds()) if (fd >= first) check("fcntl(F_SETFD)", c.fcntl(fd, F_SETFD, FD_CLOEXEC));
    },
    noNewPrivs() {
      check("prctl(PR_SET_NO_NEW_PRIVS)", c.prctl(PR.SET_NO_NEW_PRIVS, 1, 0, 0, 0));
    },
    unshareNetwork() {
      if (c.unshare(CLONE_NEWNET) === 0 || errno() === EPERM) return;
      throw new SyscallError("unshare(CLONE_NEWNET)", errno());
    },
    installSeccomp(filter) {
      // struct sock_fprog: u16 len, padding, then the pointer to the records.
      const program = Buffer.alloc(16);
      program.writeUInt16LE(filter.length / 8, 0);
      program.writeBigUInt64LE(BigInt(ptr(filter)), 8);
      check("prctl(PR_SET_SECCOMP)", c.prctl(PR.SET_SECCOMP, SECCOMP_MODE_FILTER, BigInt(ptr(program)), 0, 0));
    },
    dropCapabilities() {
      // Needs CAP_SETPCAP; inside bwrap the process has none and the sets are already empty.
      c.prctl(PR.SET_SECUREBITS, SECURE_BITS_LOCKED_NOROOT, 0, 0, 0);
      for (let cap = 0; cap <= 63; cap++) c.prctl(PR.CAPBSET_DROP, cap, 0, 0, 0);
      c.prctl(PR.CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
      const header = new Uint32Array([CAPABILITY_VERSION_3, 0]);
      const data = new Uint32Array(6); // effective, permitted, inheritable x 2 words, all zero
      check("capset", c.capset(header, data));
    },
    restrictSelf(rulesetFd) {
      check("landlock_restrict_self", c.syscall(SYS.landlock_restrict_self, rulesetFd, 0, 0, 0, 0));
    },
    execve(path, argv, env) {
      const keep: Buffer[] = []; // the pointer arrays must not outlive their strings
      const vector = (items: string[]) => {
        const out = new BigUint64Array(items.length + 1);
        items.forEach((item, i) => {
          const b = cstr(item);
          keep.push(b);
          out[i] = BigInt(ptr(b));
        });
        return out;
      };
      const argvPtrs = vector(argv);
      const envPtrs = vector(env);
      c.execve(cstr(path), argvPtrs, envPtrs);
      const code = errno();
      keep.length = 0; // a use after the call keeps the strings alive until execve has read them
      throw new SyscallError(`execve("${path}")`, code);
    },
  };
}
