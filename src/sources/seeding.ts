import { isInside } from "./paths.ts";
import type { Audit } from "../platform/index.ts";
import type { Source, SourceStore } from "./source-store.ts";

/**
 * Seed a local source's default per-role permissions at its first attach, when
 * its root lies inside a deployment OS mount: owners and admins get
 * read/write/exec, members read only. Explicit per-role entries still win
 * (the evaluator ignores seeded rules of a role that has explicit ones).
 * Because the terminal needs effective exec, this decides which members see a tab.
 * The rules, the seeded mark and a `source.rule` entry (no user: the service
 * wrote them) are one transaction, so a stop half way seeds nothing twice.
 */
export function seedDefaultsOnFirstAttach(store: SourceStore, audit: Pick<Audit, "recorded">, source: Source, osMounts: readonly string[], now: number): Source {
  if (source.seededAt !== null || source.kind !== "local" || !source.root) return source;
  const inMount = osMounts.some((mount) => isInside(source.root!, mount));
  const seed = () => {
    const added = inMount ? DEFAULT_RULES.map((rule) => store.addRule(source, { subjectKind: "role", effect: "allow", seeded: true, ...rule })) : [];
    store.markSeeded(source.id, now);
    return added;
  };
  audit.recorded(seed, (added) =>
    added.length ? { action: "source.rule", projectId: source.projectId, target: source.slug, detail: { seeded: true, rules: added.map(({ subject, perms }) => ({ role: subject, perms })) } } : null,
  );
  return { ...source, seededAt: now };
}

/** What a source inside an OS mount starts with. */
const DEFAULT_RULES = [
  { subject: "owner", perms: "rwx" },
  { subject: "admin", perms: "rwx" },
  { subject: "member", perms: "r" },
] as const;
