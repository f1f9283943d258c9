import { and, eq, sql } from "drizzle-orm";
import { realpathSync } from "node:fs";
import { isAbsolute, resolve } from "node:path";
import { sourceRules, sources, type Db } from "../db/index.ts";
import { badRequest, conflict, isOneLineText, newId, notFound, type AccessChanges } from "../platform/index.ts";
import { parsePerms } from "./permissions.ts";
import { normalizeSubpath, type PolicyRule } from "./policy.ts";

/** Kinds of sources. Only local and host ones can be terminal destinations. */
export const SOURCE_KINDS = ["local", "host", "brain", "webtop"] as const;
export type SourceKind = (typeof SOURCE_KINDS)[number];

/** A source of a project. */
export interface Source {
  id: string;
  projectId: string;
  slug: string;
  label: string;
  kind: SourceKind;
  connector: string;
  root: string | null;
  enabled: boolean;
  running: boolean;
  seededAt: number | null;
  createdAt: number;
}

/** A rule as stored and listed. */
export interface SourceRule extends PolicyRule {
  id: number;
  sourceId: string;
}

/** What adding a source takes. */
export interface NewSource {
  slug: string;
  kind: SourceKind;
  root?: string | null;
  label?: string;
  connector?: string;
}

const SLUG = /^[a-z0-9][a-z0-9-]{0,62}$/;
/** Longest root or rule path (Linux's PATH_MAX is 4096 bytes). */
export const MAX_PATH_LENGTH = 4096;
/** Longest source label: a tab's title. */
export const MAX_LABEL_LENGTH = 200;
/** Longest connector name. */
export const MAX_CONNECTOR_LENGTH = 100;
/** Longest rule subject: a role name, a user id or an agent id. */
export const MAX_SUBJECT_LENGTH = 100;
/** Slugs the product itself uses for synthetic tabs. */
const RESERVED_SLUGS = new Set(["container-root"]);
/** The slug of the host plane's own tab, listed when no host source exists. */
export const HOST_TAB_SLUG = "host";
/** The connector of each kind, when the caller names none. */
const DEFAULT_CONNECTOR: Record<SourceKind, string> = { local: "fs", host: "host-broker", brain: "vector", webtop: "webtop" };

/**
 * Whether a source's connector belongs to a terminal execution plane: the
 * filesystem for a local source (container plane), the host broker for a host
 * source (host plane). Another connector has no working directory a PTY can use.
 */
export function onTerminalPlane(source: Source): boolean {
  return (source.kind === "local" || source.kind === "host") && source.connector === DEFAULT_CONNECTOR[source.kind];
}

/** Sources of every project and their URI-policy rules. */
export class SourceStore {
  /** Prepared once: a terminal re-reads its source and rules before each keystroke (src/terminal/view-access.ts). */
  readonly #bySlug;
  readonly #rules;

  /**
   * `changes` hears of every change that can narrow a session (rules, enabled,
   * running); the CLI, another process, has no one to tell and passes none.
   */
  constructor(
    private readonly db: Db,
    private readonly changes?: AccessChanges,
  ) {
    this.#bySlug = db.select().from(sources).where(and(eq(sources.projectId, sql.placeholder("projectId")), eq(sources.slug, sql.placeholder("slug")))).prepare();
    this.#rules = db.select().from(sourceRules).where(eq(sourceRules.sourceId, sql.placeholder("sourceId"))).prepare();
  }

  /** Add a source. Local and host sources need an absolute root. */
  add(projectId: string, input: NewSource): Source {
    if (!SLUG.test(input.slug) || RESERVED_SLUGS.has(input.slug)) throw badRequest("invalid_slug", `Cannot add source: "${input.slug}" is not a valid slug`);
    // The host plane's tab is called "host" when no host source exists: another kind of that name would be a second "host" tab.
    if (input.slug === HOST_TAB_SLUG && input.kind !== "host") {
      throw badRequest("invalid_slug", `Cannot add source: "${HOST_TAB_SLUG}" is kept for a host source (the host plane's tab)`);
    }
    // Here, not only in the route's schema: the CLI adds sources too.
    if ((input.root?.length ?? 0) > MAX_PATH_LENGTH) throw badRequest("invalid_root", `Cannot add source "${input.slug}": a root has at most ${MAX_PATH_LENGTH} characters`);
    if ((input.label?.length ?? 0) > MAX_LABEL_LENGTH) throw badRequest("invalid_label", `Cannot add source "${input.slug}": a label has at most ${MAX_LABEL_LENGTH} characters`);
    if ((input.connector?.length ?? 0) > MAX_CONNECTOR_LENGTH) {
      throw badRequest("invalid_connector", `Cannot add source "${input.slug}": a connector has at most ${MAX_CONNECTOR_LENGTH} characters`);
    }
    const needsRoot = input.kind === "local" || input.kind === "host";
    if (needsRoot && (!input.root || !isAbsolute(input.root))) {
      throw badRequest("invalid_root", `Cannot add source "${input.slug}": a ${input.kind} source needs an absolute root path`);
    }
    if (input.root?.includes("\0")) throw badRequest("invalid_root", `Cannot add source "${input.slug}": the root holds a NUL byte, which no path can`);
    if (input.label !== undefined && !isOneLineText(input.label)) {
      throw badRequest("invalid_label", `Cannot add source "${input.slug}": the label must be one line, without control or bidirectional-override characters`);
    }
    if (input.kind === "local" && input.root) refuseLinkedRoot(input.slug, input.root);
    if (this.bySlug(projectId, input.slug)) throw conflict("source_exists", `Cannot add source: "${input.slug}" already exists`);
    const source: Source = {
      id: newId(),
      projectId,
      slug: input.slug,
      label: input.label?.trim() || input.slug,
      kind: input.kind,
      connector: input.connector ?? DEFAULT_CONNECTOR[input.kind],
      // `..`, `.`, `//` and a trailing slash written out, so the root reads as the directory sessions open.
      root: needsRoot ? resolve(input.root!) : (input.root ?? null),
      enabled: true,
      running: true,
      seededAt: null,
      createdAt: Date.now(),
    };
    this.db.insert(sources).values(source).run();
    return source;
  }

  /** Every source of a project. */
  list(projectId: string): Source[] {
    return this.db.select().from(sources).where(eq(sources.projectId, projectId)).all() as Source[];
  }

  /** Every source of every project. */
  listAll(): Source[] {
    return this.db.select().from(sources).all() as Source[];
  }

  /** The source with this slug, or null. */
  bySlug(projectId: string, slug: string): Source | null {
    return (this.#bySlug.get({ projectId, slug }) as Source | undefined) ?? null;
  }

  /** The source with this slug, or 404. */
  require(projectId: string, slug: string): Source {
    const source = this.bySlug(projectId, slug);
    if (!source) throw notFound("source_not_found", `Cannot find source "${slug}"`);
    return source;
  }

  /** Enable or disable a source. */
  setEnabled(projectId: string, slug: string, enabled: boolean): Source {
    const source = this.require(projectId, slug);
    this.db.update(sources).set({ enabled }).where(eq(sources.id, source.id)).run();
    this.changes?.notify({ projectId: source.projectId });
    return { ...source, enabled };
  }

  /** Record whether the shell engine can cover the source right now. */
  setRunning(projectId: string, slug: string, running: boolean): Source {
    const source = this.require(projectId, slug);
    this.db.update(sources).set({ running }).where(eq(sources.id, source.id)).run();
    this.changes?.notify({ projectId: source.projectId });
    return { ...source, running };
  }

  /** Add a rule; `perms` is any of r, w, x; `path` is below the root. */
  addRule(source: Source, rule: { subjectKind: PolicyRule["subjectKind"]; subject: string; path?: string; effect: PolicyRule["effect"]; perms: string; seeded?: boolean }): SourceRule {
    const perms = parsePerms(rule.perms);
    if (!perms) throw badRequest("invalid_perms", `Cannot add rule: "${rule.perms}" is not a permission set (r, w, x)`);
    if (rule.subject.length === 0 || rule.subject.length > MAX_SUBJECT_LENGTH) {
      throw badRequest("invalid_subject", `Cannot add rule: a subject has 1 to ${MAX_SUBJECT_LENGTH} characters`);
    }
    if ((rule.path?.length ?? 0) > MAX_PATH_LENGTH) throw badRequest("invalid_path", `Cannot add rule: a path has at most ${MAX_PATH_LENGTH} characters`);
    const path = normalizeSubpath(rule.path ?? "");
    if (path === null) throw badRequest("invalid_path", `Cannot add rule: "${rule.path}" leaves the source root`);
    const row = { sourceId: source.id, subjectKind: rule.subjectKind, subject: rule.subject, path, effect: rule.effect, perms, seeded: rule.seeded ?? false, createdAt: Date.now() };
    const inserted = this.db.insert(sourceRules).values(row).returning({ id: sourceRules.id }).get();
    // A deny rule narrows as much as a removed allow rule.
    this.changes?.notify({ projectId: source.projectId });
    return { id: inserted.id, ...row };
  }

  /**
   * Remove one rule of a source; 404 `rule_not_found` when the source has no
   * rule with that id. Sessions opened under the rule are re-checked at once
   * (their open views), and at their next keystroke, reattach or exec.
   */
  removeRule(source: Source, ruleId: number): SourceRule {
    const removed = this.db
      .delete(sourceRules)
      .where(and(eq(sourceRules.id, ruleId), eq(sourceRules.sourceId, source.id)))
      .returning()
      .get();
    if (!removed) throw notFound("rule_not_found", `Cannot find rule ${ruleId} on source "${source.slug}"`);
    this.changes?.notify({ projectId: source.projectId });
    return removed as SourceRule;
  }

  /** Every rule of a source. */
  rules(sourceId: string): SourceRule[] {
    return this.#rules.all({ sourceId }) as SourceRule[];
  }

  /** Mark a source's defaults as seeded. */
  markSeeded(sourceId: string, at: number): void {
    this.db.update(sources).set({ seededAt: at }).where(eq(sources.id, sourceId)).run();
  }
}

/**
 * A local root must be its own real path: a session opens exactly that path,
 * and through a symlink it would open wherever the link points at the time.
 * A root that does not exist yet is accepted (it is checked at every create).
 */
function refuseLinkedRoot(slug: string, root: string): void {
  let real: string;
  try {
    real = realpathSync(root);
  } catch {
    return;
  }
  if (real !== resolve(root)) throw badRequest("invalid_root", `Cannot add source "${slug}": its root ${root} is reached through a symbolic link; add its real path, ${real}`);
}
