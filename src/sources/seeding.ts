import { isInside } from "./paths.ts";
import type { Source, SourceStore } from "./source-store.ts";

/**
 * Seed a local source's default per-role permissions at its first attach, when
 * its root lies inside a deployment OS mount: owners and admins get
 * read/write/exec, members read only. Explicit per-role entries still win
 * (the evaluator ignores seeded rules of a role that has explicit ones).
 * Because the terminal needs effective exec, this decides which members see a tab.
 */
export function seedDefaultsOnFirstAttach(store: SourceStore, source: Source, osMounts: readonly string[], now: number): Source {
  if (source.seededAt !== null || source.kind !== "local" || !source.root) return source;
  if (osMounts.some((mount) => isInside(source.root!, mount))) {
    for (const role of ["owner", "admin"]) store.addRule(source, { subjectKind: "role", subject: role, effect: "allow", perms: "rwx", seeded: true });
    store.addRule(source, { subjectKind: "role", subject: "member", effect: "allow", perms: "r", seeded: true });
  }
  store.markSeeded(source.id, now);
  return { ...source, seededAt: now };
}
