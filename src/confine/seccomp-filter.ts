/**
 * The seccomp filter the Landlock helper installs before it runs the program.
 * Landlock does not see these calls, and with Landlock alone (no bwrap
 * namespaces) the program keeps uid 0 among the host's processes and kernel
 * objects, so each would reach past the sandbox:
 * - `add_key`, `request_key`, `keyctl`: uid 0's kernel keyring (cached
 *   passphrases, Kerberos and CIFS credentials), readable and writable by any
 *   process of that uid;
 * - `prlimit64` on another process: its resource limits (an RLIMIT_CPU of one
 *   second kills a busy daemon; RLIMIT_NOFILE of 3 starves hatch itself). The
 *   kernel checks only the uid. On itself (pid 0) it stays allowed: `ulimit`;
 * - a socket with IPPROTO_MPTCP, and `sendto`/`sendmsg`/`sendmmsg` with
 *   MSG_FASTOPEN: TCP connections Landlock's connect hook never sees;
 * - `io_uring_setup`: io_uring submits sends and connects past seccomp itself;
 * - a new user namespace (`unshare` or `clone` with CLONE_NEWUSER): inside it
 *   the program holds every capability again, CAP_NET_ADMIN over nf_tables
 *   among them, the usual road from an unprivileged process to kernel root
 *   (bwrap refuses it with --disable-userns; Landlock alone needs this);
 * - a set-user-ID bit (`chmod`, `fchmod`, `fchmodat`, and the mode of a file
 *   being created with `open`, `creat` or `mknod`): the file's owner needs no
 *   capability to set it, and the program keeps uid 0, so a tab that may
 *   write a directory other host accounts reach would leave them a root
 *   shell. The set-group-ID bit stays allowed: a filter cannot tell a file
 *   from a directory, and on directories it is everyday (group-shared trees,
 *   git's shared repositories set it on every directory they make).
 * Each fails with EPERM. `clone3` and `openat2` pass their flags in memory,
 * where a filter cannot look: they fail with ENOSYS, as on a kernel without
 * them (glibc then uses `clone`). A foreign system-call
 * ABI (x32, i386 on x86-64) fails every call: its numbers differ, so the
 * filter could not judge them.
 *
 * Pure: it returns the instructions; `LinuxCalls.installSeccomp` loads them.
 */

/** Classic BPF opcodes (linux/filter.h, linux/bpf_common.h). */
const LD_W_ABS = 0x20;
const JEQ_K = 0x15;
const JGE_K = 0x35;
const JSET_K = 0x45;
const RET_K = 0x06;
const RET_ALLOW = 0x7fff0000;
const RET_EPERM = 0x00050000 | 1;
const RET_ENOSYS = 0x00050000 | 38;

/** Offsets into struct seccomp_data: nr, arch, then args[] as 64-bit values (the low word first on these little-endian ABIs). */
const NR = 0;
const ARCH = 4;
const argLow = (i: number) => 16 + 8 * i;

const IPPROTO_MPTCP = 262;
const MSG_FASTOPEN = 0x20000000;
const CLONE_NEWUSER = 0x10000000;
/** S_ISUID. */
const SET_USER_ID = 0o4000;
/** O_CREAT | __O_TMPFILE: the open flags under which the mode argument counts (the same on x86-64 and arm64). */
const CREATING = 0o100 | 0o20000000;
/** x32 system calls on x86-64 carry this bit in their number. */
const X32_SYSCALL_BIT = 0x40000000;

type CallName =
  | "socket" | "sendto" | "sendmsg" | "sendmmsg" | "prlimit64" | "add_key" | "request_key" | "keyctl" | "io_uring_setup"
  | "unshare" | "clone" | "clone3" | "openat2" | "fchmod" | "fchmodat" | "fchmodat2" | "mknodat" | "openat";
/** The calls only older ABIs have: arm64 has just their `*at` forms. */
type LegacyCallName = "open" | "creat" | "chmod" | "mknod";

interface ArchTable {
  audit: number;
  nr: Record<CallName, number> & Partial<Record<LegacyCallName, number>>;
}

/** The ABIs hatch runs on (as `process.arch` names them). */
export const SECCOMP_ARCHES: Record<"x64" | "arm64", ArchTable> = {
  x64: {
    audit: 0xc000003e,
    nr: {
      socket: 41, sendto: 44, sendmsg: 46, sendmmsg: 307, prlimit64: 302, add_key: 248, request_key: 249, keyctl: 250, io_uring_setup: 425,
      unshare: 272, clone: 56, clone3: 435, openat2: 437, fchmod: 91, fchmodat: 268, fchmodat2: 452, mknodat: 259, openat: 257,
      open: 2, creat: 85, chmod: 90, mknod: 133,
    },
  },
  arm64: {
    audit: 0xc00000b7,
    nr: {
      socket: 198, sendto: 206, sendmsg: 211, sendmmsg: 269, prlimit64: 261, add_key: 217, request_key: 218, keyctl: 219, io_uring_setup: 425,
      unshare: 97, clone: 220, clone3: 435, openat2: 437, fchmod: 52, fchmodat: 53, fchmodat2: 452, mknodat: 33, openat: 56,
    },
  },
};

type Step = { op: number; k: number; jt?: string; jf?: string } | { label: string };

/**
 * The filter for `arch` as `struct sock_filter` records (8 bytes each), ready
 * for `struct sock_fprog`. Throws for an architecture it has no table for.
 */
export function seccompFilter(arch: string): Buffer {
  const table = SECCOMP_ARCHES[arch as keyof typeof SECCOMP_ARCHES];
  if (!table) throw new Error(`no seccomp table for architecture "${arch}"`);
  const { nr } = table;
  /** A jump to `label` for each call of `names` this ABI has. */
  const calls = (label: string, ...names: (CallName | LegacyCallName)[]): Step[] =>
    names.flatMap((name) => (nr[name] === undefined ? [] : [{ op: JEQ_K, k: nr[name]!, jt: label }]));
  const steps: Step[] = [
    { op: LD_W_ABS, k: ARCH },
    { op: JEQ_K, k: table.audit, jf: "deny" },
    { op: LD_W_ABS, k: NR },
    ...(arch === "x64" ? [{ op: JGE_K, k: X32_SYSCALL_BIT, jt: "deny" }] : []),
    ...calls("deny", "add_key", "request_key", "keyctl", "io_uring_setup"),
    ...calls("nosys", "clone3", "openat2"),
    { op: JEQ_K, k: nr.prlimit64, jt: "prlimit" },
    { op: JEQ_K, k: nr.socket, jt: "socket" },
    { op: JEQ_K, k: nr.sendto, jt: "flags3" },
    { op: JEQ_K, k: nr.sendmmsg, jt: "flags3" },
    { op: JEQ_K, k: nr.sendmsg, jt: "flags2" },
    ...calls("newuser0", "unshare", "clone"),
    ...calls("mode1", "chmod", "fchmod", "creat", "mknod"),
    ...calls("mode2", "fchmodat", "fchmodat2", "mknodat"),
    ...calls("create1", "open"),
    ...calls("create2", "openat"),
    { op: RET_K, k: RET_ALLOW },
    { label: "prlimit" },
    { op: LD_W_ABS, k: argLow(0) },
    { op: JEQ_K, k: 0, jt: "allow", jf: "deny" },
    { label: "socket" },
    { op: LD_W_ABS, k: argLow(2) },
    { op: JEQ_K, k: IPPROTO_MPTCP, jt: "deny", jf: "allow" },
    ...argHasBits("flags3", 3, MSG_FASTOPEN, "deny"),
    ...argHasBits("flags2", 2, MSG_FASTOPEN, "deny"),
    ...argHasBits("newuser0", 0, CLONE_NEWUSER, "deny"),
    // open(path, flags, mode) and openat(dirfd, path, flags, mode): the mode counts only when the call creates.
    ...argHasBits("create1", 1, CREATING, "mode2"),
    ...argHasBits("create2", 2, CREATING, "mode3"),
    ...argHasBits("mode1", 1, SET_USER_ID, "deny"),
    ...argHasBits("mode2", 2, SET_USER_ID, "deny"),
    ...argHasBits("mode3", 3, SET_USER_ID, "deny"),
    { label: "allow" },
    { op: RET_K, k: RET_ALLOW },
    { label: "deny" },
    { op: RET_K, k: RET_EPERM },
    { label: "nosys" },
    { op: RET_K, k: RET_ENOSYS },
  ];
  return assemble(steps);
}

/** The steps at `label`: argument `arg` holding any of `bits` goes on to `whenSet`; otherwise the call is allowed. */
function argHasBits(label: string, arg: number, bits: number, whenSet: string): Step[] {
  return [{ label }, { op: LD_W_ABS, k: argLow(arg) }, { op: JSET_K, k: bits, jt: whenSet, jf: "allow" }];
}

/** Resolve labels into the forward jump offsets classic BPF uses, and lay the records out. */
function assemble(steps: Step[]): Buffer {
  const at = new Map<string, number>();
  const code: Exclude<Step, { label: string }>[] = [];
  for (const step of steps) {
    if ("label" in step) at.set(step.label, code.length);
    else code.push(step);
  }
  const out = Buffer.alloc(code.length * 8);
  code.forEach((step, i) => {
    const offset = (label: string | undefined) => {
      if (label === undefined) return 0;
      const to = at.get(label)! - i - 1;
      if (!(to >= 0 && to <= 255)) throw new Error(`seccomp jump to "${label}" out of range`);
      return to;
    };
    out.writeUInt16LE(step.op, i * 8);
    out.writeUInt8(offset(step.jt), i * 8 + 2);
    out.writeUInt8(offset(step.jf), i * 8 + 3);
    out.writeUInt32LE(step.k >>> 0, i * 8 + 4);
  });
  return out;
}
