/**
 * Landlock's access rights and what each ABI version knows of them, from
 * `include/uapi/linux/landlock.h`. Pure numbers: no kernel call happens here.
 *
 * Best effort means: handle every right the running kernel's ABI knows, so a
 * newer kernel confines more and an older one still confines what it can.
 */

/** Filesystem rights (`LANDLOCK_ACCESS_FS_*`). */
export const FS = {
  EXECUTE: 1 << 0,
  WRITE_FILE: 1 << 1,
  READ_FILE: 1 << 2,
  READ_DIR: 1 << 3,
  REMOVE_DIR: 1 << 4,
  REMOVE_FILE: 1 << 5,
  MAKE_CHAR: 1 << 6,
  MAKE_DIR: 1 << 7,
  MAKE_REG: 1 << 8,
  MAKE_SOCK: 1 << 9,
  MAKE_FIFO: 1 << 10,
  MAKE_BLOCK: 1 << 11,
  MAKE_SYM: 1 << 12,
  /** ABI 2: link or rename across directories. */
  REFER: 1 << 13,
  /** ABI 3: truncate(2), ftruncate(2), O_TRUNC. */
  TRUNCATE: 1 << 14,
  /** ABI 5: ioctl(2) on character and block devices. */
  IOCTL_DEV: 1 << 15,
} as const;

/** Network rights (`LANDLOCK_ACCESS_NET_*`), ABI 4 and later. TCP only. */
export const NET = { BIND_TCP: 1 << 0, CONNECT_TCP: 1 << 1 } as const;

/** IPC scopes (`LANDLOCK_SCOPE_*`), ABI 6 and later. */
export const SCOPE = { ABSTRACT_UNIX_SOCKET: 1 << 0, SIGNAL: 1 << 1 } as const;

/** Below ABI 3, truncate(2) is not controlled: a root-run shell could empty any root-owned host file. */
export const DEFAULT_MIN_ABI = 3;

/** The fs rights that a rule on a non-directory may carry; anything else makes add_rule fail with EINVAL. */
export const FILE_RIGHTS = FS.EXECUTE | FS.WRITE_FILE | FS.READ_FILE | FS.TRUNCATE | FS.IOCTL_DEV;

/** Listing names only: for /dev, whose nodes are opened by explicit grant alone (a root-owned raw disk is readable by uid 0 without any capability). */
export const LIST_RIGHTS = FS.READ_DIR;

/** Reading and running: granted on the whole tree the shell sees. */
export const READ_RIGHTS = FS.EXECUTE | FS.READ_FILE | FS.READ_DIR;

/**
 * Everything needed to change a tree, on top of reading it. MAKE_CHAR and
 * MAKE_BLOCK are left out on purpose: a sandbox never needs device nodes.
 */
export const WRITE_RIGHTS =
  READ_RIGHTS |
  FS.WRITE_FILE |
  FS.REMOVE_DIR |
  FS.REMOVE_FILE |
  FS.MAKE_DIR |
  FS.MAKE_REG |
  FS.MAKE_SOCK |
  FS.MAKE_FIFO |
  FS.MAKE_SYM |
  FS.REFER |
  FS.TRUNCATE;

/** Character devices the shell talks to (/dev/null, its own terminal): read, write, ioctl. */
export const DEVICE_RIGHTS = FS.READ_FILE | FS.WRITE_FILE | FS.TRUNCATE | FS.IOCTL_DEV;

/** The fs rights ABI `abi` can handle; rights newer than the ABI are masked out (best effort). */
export function handledFsRights(abi: number): number {
  let rights = (1 << 13) - 1; // EXECUTE..MAKE_SYM: ABI 1
  if (abi >= 2) rights |= FS.REFER;
  if (abi >= 3) rights |= FS.TRUNCATE;
  if (abi >= 5) rights |= FS.IOCTL_DEV;
  return rights;
}

/** The network rights ABI `abi` can handle (0 before ABI 4). */
export function handledNetRights(abi: number): number {
  return abi >= 4 ? NET.BIND_TCP | NET.CONNECT_TCP : 0;
}

/** The IPC scopes ABI `abi` can handle (0 before ABI 6). */
export function handledScopes(abi: number): number {
  return abi >= 6 ? SCOPE.ABSTRACT_UNIX_SOCKET | SCOPE.SIGNAL : 0;
}

/**
 * Byte size of `struct landlock_ruleset_attr` for an ABI: send only the
 * fields that ABI defines, so an older kernel never sees a field it cannot check.
 */
export function rulesetAttrSize(abi: number): number {
  if (abi >= 6) return 24;
  if (abi >= 4) return 16;
  return 8;
}
