import { existsSync, realpathSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { hiddenFromSandbox, isSystemPath, realPathOrSelf, rootInvalid, SYSTEM_CODE_PATHS } from "../confine/index.ts";
import { badRequest, can, FEATURES, forbidden, notFound, requireFeature, unavailable, type Audit, type ProjectCaller } from "../platform/index.ts";
import type { ConfineRequest } from "../pty/index.ts";
import { effectivePermissions, formatPerms, HOST_TAB_SLUG, isInside, onTerminalPlane, policyPaths, seedDefaultsOnFirstAttach, type Permissions, type Source, type SourceStore } from "../sources/index.ts";
import { CONTAINER_ROOT, type Destination, type DestinationResolver } from "./destination.ts";

/** Why a disabled source's tab cannot open, local or host. */
const DISABLED = "The source is disabled";
/** Why a tab whose policy lacks exec at its root cannot open, local or host. */
const EXEC_DENIED = "Your policy does not allow running commands here";

/** One tab of the source listing. */
export interface SourceEntry {
  slug: string;
  label: string;
  kind: string;
  selectable: boolean;
  reason?: string;
  /** Resolved working directory (container-side). */
  cwd: string | null;
  /** Host-side equivalent under containers (same path on bare metal). */
  hostCwd?: string | null;
  readOnly: boolean;
  /** Host sources: the operator ceiling runs host spawns bare. */
  unconfined?: boolean;
  /** Confinement a session opened here would run under. */
  confinement: string;
}

/** Collaborators of the source destinations. */
export interface SourceDestinationsOptions {
  store: SourceStore;
  /** Where the rules seeded at a source's first attach are written with their entry. */
  audit: Pick<Audit, "recorded">;
  /** Deployment OS mounts: a local source rooted inside one gets default permissions at first attach. */
  osMounts: string[];
  /** Never readable from a confined session (the data dir: database and key). */
  protectedPaths: string[];
  /** Never writable from a confined session: hatch's own install and the system's code (`systemCodePaths()`). */
  neverWritable: readonly string[];
  inContainer: boolean;
  /** The confinement source tabs get here, or null with the reason it is unavailable. */
  confinement(): { mode: string | null; reason?: string };
  now(): number;
}

/** The authority a session was created under, compared at reattach, exec and each input of a connected view. */
interface Authority {
  slug: string;
  root: string;
  unconfined: boolean;
  paths: Record<string, string>;
}

/**
 * Source tabs for the terminal: the listing (rules 1 to 6 of the specification)
 * and the destination checks every create re-runs. A source tab carries no agent
 * context, so rules naming an agent never apply here.
 */
export class SourceDestinations implements DestinationResolver {
  constructor(private readonly options: SourceDestinationsOptions) {}

  /** The tabs a caller may see, with selectability and reasons. */
  list(caller: ProjectCaller): SourceEntry[] {
    const entries: SourceEntry[] = [];
    if (can(caller, FEATURES.terminalContainer)) entries.push(this.#containerRootEntry());
    // Read once for the whole listing: each tab hides the others'.
    const sourceRoots = this.#everySourceRoot();
    for (const stored of this.options.store.list(caller.project.id)) {
      if (stored.kind === "brain" || stored.kind === "webtop") continue;
      if (stored.kind === "host") {
        // The plane feature is not sufficient alone: the source's policy decides who sees it, as for local tabs.
        const policy = can(caller, FEATURES.terminalNative) ? this.#policy(caller, stored) : null;
        if (policy?.visible) entries.push(this.#hostEntry(stored, policy.at("")));
        continue;
      }
      const source = this.#seeded(stored);
      const policy = this.#policy(caller, source);
      if (!policy.visible) continue;
      const root = realRoot(source);
      const unconfined = can(caller, FEATURES.execUnconfined);
      const confine = root === null || unconfined ? null : this.#confineRequest(policy, root, hiddenSourceRoots(sourceRoots, source, root));
      // A reachable root is all #unselectableReason needs to find nothing.
      const reason = this.#unselectableReason(caller, source, policy.at("")) ?? (confine && closedPathProblem(confine, root!, this.options.neverWritable));
      entries.push({
        slug: source.slug,
        label: source.label,
        kind: source.kind,
        selectable: reason === null,
        ...(reason === null ? {} : { reason }),
        cwd: root,
        hostCwd: root,
        // A bare spawn writes whatever the service's user may: the policy's RO badge would not be true of it.
        readOnly: !unconfined && !writesAnywhere(confine),
        confinement: unconfined ? "none" : (this.options.confinement().mode ?? "unavailable"),
      });
    }
    // With no host source to offer, the host plane still says why there is none (and no fallback to /).
    if (can(caller, FEATURES.terminalNative) && !entries.some((entry) => entry.kind === "host")) entries.push(NO_HOST_SOURCE);
    return entries;
  }

  async resolve(caller: ProjectCaller, sourceSlug: string, requestedCwd: string | undefined): Promise<Destination> {
    if (sourceSlug === CONTAINER_ROOT) return this.#containerRoot(caller, requestedCwd);
    const stored = this.options.store.bySlug(caller.project.id, sourceSlug);
    if (!stored || stored.kind === "brain" || stored.kind === "webtop") throw sourceNotFound(sourceSlug);
    if (stored.kind === "host") {
      // Unseen first: a host source the caller has no permission on answers as one that does not exist, feature or not.
      const policy = this.#policy(caller, stored);
      if (!policy.visible) throw sourceNotFound(sourceSlug);
      requireFeature(caller, FEATURES.terminalNative);
      if (!stored.enabled) throw forbidden("source_disabled", `Cannot open "${sourceSlug}": ${DISABLED}`);
      if (!policy.at("").exec) throw forbidden("exec_denied", `Cannot open "${sourceSlug}": ${EXEC_DENIED}`);
      throw unavailable("host_broker_unavailable", "Cannot open a host tab: the host broker is not provisioned on this server");
    }
    const source = this.#seeded(stored);
    const policy = this.#policy(caller, source);
    if (!policy.visible) throw sourceNotFound(sourceSlug);
    const perms = policy.at("");
    const reason = this.#unselectableReason(caller, source, perms);
    if (reason !== null) {
      const code = !source.enabled ? "source_disabled" : !perms.exec ? "exec_denied" : "source_unavailable";
      throw forbidden(code, `Cannot open "${sourceSlug}": ${reason}`);
    }
    const root = realRoot(source)!;
    const unconfined = can(caller, FEATURES.execUnconfined);
    const confine = unconfined ? null : this.#confineRequest(policy, root, hiddenSourceRoots(this.#everySourceRoot(), source, root));
    const problem = confine === null ? null : closedPathProblem(confine, root, this.options.neverWritable);
    if (problem !== null) throw rootInvalid(`Cannot open "${sourceSlug}": ${problem}`, { source: sourceSlug });
    // A bare spawn reads whatever the service's user may; a confined tab only what its policy lets it, never what
    // its sandbox hides (a host secret, bwrap's shared dirs) unless its root lies below that: the same refusal either way.
    const mode = this.options.confinement().mode;
    const hidden = confine === null || mode === null ? [] : hiddenFromSandbox(mode).filter((path) => !isInside(root, path));
    const closed = [...(confine?.deny.map(realPathOrSelf) ?? []), ...hidden];
    const readable = (path: string) => confine === null || (policy.at(relative(root, path)).read && !closed.some((d) => isInside(path, d)));
    const cwd = resolveCwd(root, requestedCwd, sourceSlug, readable);
    const authority = authorityOf(policy, source.slug, root, unconfined);
    return {
      sourceSlug,
      cwd,
      readOnly: !unconfined && !writesAnywhere(confine),
      confine,
      authority: JSON.stringify(authority),
    };
  }

  async stillAllowed(caller: ProjectCaller, sourceSlug: string, authority: string): Promise<boolean> {
    if (sourceSlug === CONTAINER_ROOT) return can(caller, FEATURES.terminalContainer);
    const source = this.options.store.bySlug(caller.project.id, sourceSlug);
    if (!source) return false;
    const policy = this.#policy(caller, source);
    if (!policy.visible || this.#unselectableReason(caller, source, policy.at("")) !== null) return false;
    const root = realRoot(source);
    const before = JSON.parse(authority) as Authority;
    if (!root || root !== before.root) return false;
    const now = authorityOf(policy, source.slug, root, can(caller, FEATURES.execUnconfined));
    if (before.unconfined && !now.unconfined) return false;
    // Narrowed when, at any path either policy names, a permission held before is gone now.
    const paths = new Set([...Object.keys(before.paths), ...Object.keys(now.paths)]);
    return [...paths].every((path) => [...lettersAt(before.paths, path)].every((p) => lettersAt(now.paths, path).includes(p)));
  }

  #containerRootEntry(): SourceEntry {
    return { slug: CONTAINER_ROOT, label: this.options.inContainer ? "Container Root (/)" : "Process Root (/)", kind: "container", selectable: true, cwd: "/", hostCwd: null, readOnly: false, confinement: "none" };
  }

  #hostEntry(source: Source, perms: Permissions): SourceEntry {
    const reason = !source.enabled ? DISABLED : !perms.exec ? EXEC_DENIED : "The host broker is not provisioned";
    return { slug: source.slug, label: source.label, kind: "host", selectable: false, reason, cwd: source.root, hostCwd: source.root, readOnly: true, unconfined: false, confinement: "unavailable" };
  }

  #containerRoot(caller: ProjectCaller, requestedCwd: string | undefined): Destination {
    requireFeature(caller, FEATURES.terminalContainer);
    const cwd = requestedCwd ?? "/";
    if (!cwd.startsWith("/") || !existsSync(cwd) || !statSync(cwd).isDirectory()) {
      throw badRequest("invalid_cwd", `Cannot open Container Root in "${cwd}": not an existing absolute directory`);
    }
    return { sourceSlug: CONTAINER_ROOT, cwd, readOnly: false, confine: null, authority: JSON.stringify({ slug: CONTAINER_ROOT }) };
  }

  #seeded(source: Source): Source {
    if (source.seededAt !== null) return source; // the common case, without the realpath calls below
    // Roots are stored as real paths, so a mount configured through a symlink is compared by its target.
    const mounts = this.options.osMounts.map(realPathOrSelf);
    return seedDefaultsOnFirstAttach(this.options.store, this.options.audit, source, mounts, this.options.now());
  }

  /** The caller's policy on a source, its rules read once. A source tab carries no agent context. */
  #policy(caller: ProjectCaller, source: Source): CallerPolicy {
    const rules = this.options.store.rules(source.id);
    const subject = { userId: caller.user.id, role: caller.role, agentId: null };
    const paths = ["", ...policyPaths(rules, subject)];
    const at = (path: string) => effectivePermissions(rules, subject, path);
    return { paths, at, visible: paths.some((path) => letters(at(path)) !== "") };
  }

  #unselectableReason(caller: ProjectCaller, source: Source, perms: Permissions): string | null {
    if (!source.enabled) return DISABLED;
    if (!perms.exec) return EXEC_DENIED;
    // A confined session reads everything not denied, and its root cannot be denied while it works there.
    if (!perms.read) return "Your policy does not allow reading here";
    if (!onTerminalPlane(source)) return `The source's connector (${source.connector}) is not a terminal plane`;
    if (!source.running) return "The source is not running";
    if (!realRoot(source)) return rootProblem(source);
    const { mode, reason } = this.options.confinement();
    if (mode === null && !can(caller, FEATURES.execUnconfined)) return `Confinement is unavailable on this server: ${reason ?? "unknown reason"}`;
    return null;
  }

  /**
   * The caller's policy path by path, in depth order: a path allowed again
   * below one it denies becomes a root inside that policy deny, which
   * confinement re-opens. The service's own protected paths stay apart, in
   * `deny`: nothing inside them is re-opened. The roots of the other sources
   * it hides (`hiddenSourceRoots`) are denied too.
   */
  #confineRequest(policy: CallerPolicy, root: string, otherSourceRoots: string[]): ConfineRequest {
    const roots: ConfineRequest["roots"] = [];
    const policyDeny: string[] = [];
    for (const path of policy.paths) {
      const full = path === "" ? root : join(root, path);
      const perms = policy.at(path);
      if (!perms.read && path !== "") policyDeny.push(full);
      else if (path === "" || existsSync(full)) roots.push({ path: full, write: perms.write, exec: perms.exec });
      // A missing path cannot carry a grant of its own. Narrower than its parent, it would be created under the parent's wider grant, so its place is blocked instead.
      else if (lacksAny(policy.at(parentOf(path)), perms)) policyDeny.push(full);
    }
    policyDeny.push(...otherSourceRoots);
    return { roots, deny: [...this.options.protectedPaths], policyDeny, boundary: root };
  }

  /** The real root of every source of every project that has one on this machine. */
  #everySourceRoot(): SourceRoot[] {
    return this.options.store
      .listAll()
      .filter((source) => source.root !== null && existsSync(source.root))
      .map((source) => ({ sourceId: source.id, root: realPathOrSelf(source.root!) }));
  }
}

/** Where a source lies on this machine. */
interface SourceRoot {
  sourceId: string;
  root: string;
}

/**
 * The roots of the other sources, of any project, that a tab on `source`
 * (at `root`) hides, restricted to its one source: without them it would read
 * another project's files, or a source whose policy denies the caller, by
 * typing its path. Not one that holds `root` or lies inside it (this source's
 * policy decides there), nor one whose hiding would hide what shells need.
 */
function hiddenSourceRoots(everyRoot: SourceRoot[], source: Source, root: string): string[] {
  return everyRoot
    .filter((other) => other.sourceId !== source.id && !isInside(other.root, root) && !isInside(root, other.root) && !holdsWhatShellsNeed(other.root))
    .map((other) => other.root);
}

/** The system's code, configuration and kernel trees: a shell reads them (terminfo in /usr/share, /etc/passwd), whatever source holds them. */
const SHELL_TREES = [...SYSTEM_CODE_PATHS, "/var/run", "/proc", "/sys", "/dev"];
/** Where package managers put programs shells run (conda in /opt, the Nix store, snaps): a source may lie below one, but hiding all of one hides them. */
const PROGRAM_TREES = ["/opt", "/nix", "/snap", "/gnu"];

/**
 * Whether hiding `path` from a tab could hide what its shell needs: it is or
 * holds a system directory or a program tree, or lies in one of SHELL_TREES.
 */
function holdsWhatShellsNeed(path: string): boolean {
  return isSystemPath(path) || PROGRAM_TREES.some((tree) => isInside(tree, path)) || SHELL_TREES.some((tree) => isInside(path, tree));
}

/** The host plane's tab when no host source is offered to a `terminal.native` holder: listed, never selectable. */
const NO_HOST_SOURCE: SourceEntry = {
  slug: HOST_TAB_SLUG,
  label: "Host",
  kind: "host",
  selectable: false,
  reason: "No host source is available to you, and the host broker is not provisioned",
  cwd: null,
  hostCwd: null,
  readOnly: true,
  unconfined: false,
  confinement: "unavailable",
};

/** A caller's effective policy on one source: the paths its rules name ("" first) and the permissions at any path. */
interface CallerPolicy {
  paths: string[];
  at(path: string): Permissions;
  /** Any permission anywhere: a source with none is not shown at all. */
  visible: boolean;
}

/**
 * Why a confined tab cannot open though its policy allows it: a path it would
 * be granted lies inside one hatch never lets a tab read (the data dir, a .env
 * file), which no policy re-opens, or one it would be granted write lies inside
 * one no tab may write (hatch's own install, the system's code). The planner
 * refuses such a root (`root_invalid`); the listing says so first, so a tab
 * listed as selectable never fails on create for it.
 */
function closedPathProblem(request: ConfineRequest, root: string, neverWritable: readonly string[]): string | null {
  const where = (path: string) => (path === root ? "the source's root" : `"${relative(root, path)}"`);
  const closed = request.deny.map(realPathOrSelf);
  const unreadable = request.roots.find((r) => closed.some((path) => isInside(realPathOrSelf(r.path), path)));
  if (unreadable !== undefined) {
    const opened = unreadable.path === root ? "The source's root lies" : `Your policy opens ${where(unreadable.path)}, which lies`;
    return `${opened} inside a path hatch never lets a tab read (its data dir or a .env file)`;
  }
  const unwritable = neverWritable.map(realPathOrSelf);
  for (const r of request.roots.filter((r) => r.write)) {
    const inside = unwritable.find((path) => isInside(realPathOrSelf(r.path), path));
    if (inside !== undefined) return `Your policy lets you write ${where(r.path)}, which lies inside ${inside}: no tab may write hatch's own code or the system's`;
    if (isSystemPath(realPathOrSelf(r.path))) return `Your policy lets you write ${where(r.path)}, which is or contains a shared system directory (such as /home, /tmp or /var): a tab may write below one, never all of it`;
  }
  return null;
}

/**
 * Whether a confined tab can write anywhere: only through a root it is granted.
 * A writable rule on a path that does not exist yet is no root (nor can it be
 * created, under a parent that is not writable), so it does not count.
 */
function writesAnywhere(confine: ConfineRequest | null): boolean {
  return confine !== null && confine.roots.some((root) => root.write);
}

/** The policy path of a path's parent directory ("" for the source root). */
function parentOf(path: string): string {
  const slash = path.lastIndexOf("/");
  return slash === -1 ? "" : path.slice(0, slash);
}

/** Whether `inner` lacks a permission `outer` holds. */
function lacksAny(outer: Permissions, inner: Permissions): boolean {
  return (outer.read && !inner.read) || (outer.write && !inner.write) || (outer.exec && !inner.exec);
}

function letters(perms: Permissions): string {
  return formatPerms(perms).replace("-", "");
}

function authorityOf(policy: CallerPolicy, slug: string, root: string, unconfined: boolean): Authority {
  return { slug, root, unconfined, paths: Object.fromEntries(policy.paths.map((path) => [path, letters(policy.at(path))])) };
}

/** The letters in force at `path`: those of the deepest listed path containing it. */
function lettersAt(paths: Record<string, string>, path: string): string {
  const containing = Object.keys(paths).filter((p) => p === "" || path === p || path.startsWith(p + "/"));
  const deepest = containing.sort((a, b) => b.length - a.length)[0];
  return deepest === undefined ? "" : paths[deepest]!;
}

/**
 * The source's root when it is an existing directory reached without any
 * symlink, else null. Through a symlink the root would be wherever the link
 * points now, and whoever can write the directory holding the link (a member,
 * from another source's tab) would choose it: another team's tree, a hidden
 * host-secret dir, /etc/cron.d.
 */
function realRoot(source: Source): string | null {
  const checked = checkRoot(source);
  return "root" in checked ? checked.root : null;
}

/** Why `realRoot` has no root for a source, for the listing and a refused create. */
function rootProblem(source: Source): string {
  const checked = checkRoot(source);
  return "problem" in checked ? checked.problem : "";
}

/** The source's root, or what is wrong with it: missing (or not a directory), or reached through a symlink. */
function checkRoot(source: Source): { root: string } | { problem: string } {
  const missing = { problem: "The source's root directory does not exist" };
  try {
    const root = realpathSync(source.root!);
    if (root !== resolve(source.root!)) return { problem: "The source's root is reached through a symbolic link; an admin must add it by its real path" };
    return statSync(root).isDirectory() ? { root } : missing;
  } catch {
    return missing;
  }
}

/**
 * The working directory a create asked for, as a real path inside the source
 * that the tab may read. Every way of missing (no such name, outside the
 * source, not a directory, inside a path the caller may not read) gets one
 * answer, and the policy is asked before the file system: otherwise the
 * answers would tell a member which names exist where their policy, or
 * hatch's own protected paths, hide them.
 */
function resolveCwd(root: string, requested: string | undefined, slug: string, readable: (path: string) => boolean): string {
  if (requested === undefined) return root;
  const refused = () => badRequest("invalid_cwd", `Cannot open "${slug}" in "${requested}": not a directory inside the source that you may read`);
  const asked = resolve(root, requested);
  if (!isInside(asked, root) || !readable(asked)) throw refused();
  let real: string;
  try {
    real = realpathSync(asked);
  } catch {
    throw refused();
  }
  if (!isInside(real, root) || !readable(real) || !statSync(real).isDirectory()) throw refused();
  return real;
}

function sourceNotFound(slug: string) {
  return notFound("source_not_found", `Cannot find source "${slug}"`);
}
