/**
 * bubblewrap's argument list for one confined command. Pure: the planner
 * passes in what it learned from the filesystem.
 *
 * Order matters: bwrap applies mounts left to right and a later mount lands on
 * top of an earlier one. Hidden shared dirs, host secrets, exposed helper paths,
 * roots and the caller's policy denies are mounted shallowest first, so the
 * deeper one wins: a read-only sub-rule lands on its writable parent, a root
 * under /root shows through, a root above /tmp or a secret (a source rooted at
 * /var) gets them hidden again on top of it, and a path the policy allows
 * again below one it denies is bound on the empty tmpfs (bwrap makes its mount
 * point there). At one path a root wins over a hidden dir or secret, as the
 * operator asked for it, a policy deny wins over a root, as in the policy, and
 * the helper's own files win over all, read-only (the planner refuses a
 * writable root at them). Then the service's own deny paths are covered, over
 * everything (a denied data dir inside a root stays hidden), and the scratch
 * dir is bound last so it shows even when it lives under /tmp or the data dir.
 */

/** One entry to hide: a directory gets an empty tmpfs, a file gets /dev/null. */
export interface HiddenPath {
  path: string;
  kind: "dir" | "file";
}

/** Everything bwrap needs to lay out the sandbox. */
export interface BwrapLayout {
  /** Host dirs replaced by an empty tmpfs (shared /tmp, /run…), only ones that exist as real dirs. */
  hide: string[];
  /** Host secrets that exist; roots below them show through. */
  conceal: HiddenPath[];
  /** Binaries the helper needs that would otherwise sit under a hidden dir; bound read-only. */
  expose: string[];
  /** Roots, parents first. */
  roots: { path: string; write: boolean }[];
  /** Paths the caller's policy denies that exist on the host; roots below them show through. */
  policyDeny: HiddenPath[];
  /** The service's own deny paths that exist on the host; covered over everything. */
  deny: HiddenPath[];
  scratch: string;
  /** setsid(): no controlling terminal. Off for interactive PTYs (job control needs it). */
  newSession: boolean;
}

/**
 * Namespace and privilege flags. As root, `--unshare-user --cap-drop ALL` is
 * what stops the sandbox from remounting `/` read-write (notes, experiment B).
 */
export const BWRAP_ISOLATION = ["--die-with-parent", "--unshare-all", "--unshare-user", "--disable-userns", "--cap-drop", "ALL"];

/**
 * Size of a sandbox's /dev/shm, Docker's default. POSIX shared memory
 * (Python's multiprocessing, browsers) needs it writable; left on bwrap's
 * /dev tmpfs it could hold half the host's RAM per sandbox, memory no
 * process's RSS shows, for the OOM killer to take out of hatch.
 */
export const DEV_SHM_BYTES = 64 * 1024 * 1024;

/**
 * The arguments after the bwrap path and before the inner command.
 *
 * @example
 * [bwrapPath, ...bwrapArgs(layout), bun, helper, ...helperArgs]
 */
export function bwrapArgs(layout: BwrapLayout): string[] {
  const args = [...BWRAP_ISOLATION];
  if (layout.newSession) args.push("--new-session");
  // No --clearenv: the helper's arguments (the program's env among them) arrive in bwrap's
  // environment, kept off its host-visible command line. The helper hands the program exactly
  // its --env list, and Landlock keeps the program from reading bwrap's PID 1's environ.
  args.push("--ro-bind", "/", "/");
  const layered: { path: string; mount: string[] }[] = [
    ...layout.hide.map((dir) => ({ path: dir, mount: ["--tmpfs", dir] })),
    ...layout.conceal.map((hidden) => ({ path: hidden.path, mount: cover(hidden) })),
    ...layout.roots.map((root) => ({ path: root.path, mount: [root.write ? "--bind" : "--ro-bind", root.path, root.path] })),
    ...layout.policyDeny.map((hidden) => ({ path: hidden.path, mount: cover(hidden) })),
    ...layout.expose.map((path) => ({ path, mount: ["--ro-bind", path, path] })),
    // The sandbox's own /dev, /dev/shm and /proc, in the same order: a source rooted at / must not bind the host's over them.
    { path: "/dev", mount: ["--dev", "/dev"] },
    { path: "/dev/shm", mount: ["--size", String(DEV_SHM_BYTES), "--tmpfs", "/dev/shm"] },
    { path: "/proc", mount: ["--proc", "/proc"] },
  ];
  // Deeper paths last (a stable sort keeps hide, conceal, roots, policy denies, expose at one path, and roots parents first).
  for (const { mount } of layered.sort((a, b) => depth(a.path) - depth(b.path))) args.push(...mount);
  for (const hidden of layout.deny) args.push(...cover(hidden));
  args.push("--bind", layout.scratch, layout.scratch);
  // Bun reads bunfig.toml from its cwd before the helper runs: start it in "/", the helper enters the real cwd.
  args.push("--chdir", "/");
  return args;
}

/** Path components below "/". */
function depth(path: string): number {
  return path.split("/").filter((part) => part !== "").length;
}

function cover(hidden: HiddenPath): string[] {
  return hidden.kind === "dir" ? ["--tmpfs", hidden.path] : ["--ro-bind", "/dev/null", hidden.path];
}
