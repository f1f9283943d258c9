import { NONE, type Permissions } from "./permissions.ts";

/** One URI-policy rule as the evaluator sees it. */
export interface PolicyRule {
  subjectKind: "role" | "user" | "agent";
  subject: string;
  /** Path below the source root, "" for the whole source. */
  path: string;
  effect: "allow" | "deny";
  perms: string;
  seeded: boolean;
}

/** Who is asking. `agentId` is null for a source tab, which carries no agent context. */
export interface PolicySubject {
  userId: string;
  role: string;
  agentId: string | null;
}

const LETTER = { read: "r", write: "w", exec: "x" } as const;

/**
 * The one evaluator of the URI policy: the effective read/write/exec of a
 * subject at a path below a source's root. The agent shell, the terminal and
 * exec all call it.
 *
 * - A rule applies when it names the user, the role, or (only with agent context) the agent.
 * - Explicit per-role entries always win over seeded defaults: once a role has any
 *   explicit rule on the source, its seeded rules are ignored.
 * - For each permission, the most specific path that mentions it decides; at the
 *   same path a deny beats an allow. Nothing mentioned means no permission.
 */
export function effectivePermissions(rules: readonly PolicyRule[], subject: PolicySubject, path: string): Permissions {
  const applicable = applicableRules(rules, subject).filter((r) => isWithin(path, r.path));
  const result: Permissions = { ...NONE };
  for (const key of Object.keys(LETTER) as (keyof Permissions)[]) {
    const mentioning = applicable.filter((r) => r.perms.includes(LETTER[key]));
    if (mentioning.length === 0) continue;
    const depth = Math.max(...mentioning.map((r) => pathDepth(r.path)));
    const decisive = mentioning.filter((r) => pathDepth(r.path) === depth);
    result[key] = decisive.every((r) => r.effect === "allow");
  }
  return result;
}

/** The rules that apply to a subject (explicit role entries shadow that role's seeded ones). */
export function applicableRules(rules: readonly PolicyRule[], subject: PolicySubject): PolicyRule[] {
  const roleHasExplicit = rules.some((r) => r.subjectKind === "role" && r.subject === subject.role && !r.seeded);
  return rules.filter((r) => {
    if (r.subjectKind === "user") return r.subject === subject.userId;
    if (r.subjectKind === "agent") return subject.agentId !== null && r.subject === subject.agentId;
    return r.subject === subject.role && !(r.seeded && roleHasExplicit);
  });
}

/** Paths below the root where a subject's applicable rules differ from the root's. */
export function policyPaths(rules: readonly PolicyRule[], subject: PolicySubject): string[] {
  return [...new Set(applicableRules(rules, subject).map((r) => r.path).filter((p) => p !== ""))].sort(
    (a, b) => pathDepth(a) - pathDepth(b) || a.localeCompare(b),
  );
}

/** Normalise a sub-path: no leading/trailing slash, no `.`/`..`/empty segments; null when it escapes. */
export function normalizeSubpath(path: string): string | null {
  const parts = path.split("/").filter((p) => p !== "" && p !== ".");
  if (parts.some((p) => p === ".." || p.includes("\0"))) return null;
  return parts.join("/");
}

function isWithin(path: string, rulePath: string): boolean {
  return rulePath === "" || path === rulePath || path.startsWith(rulePath + "/");
}

function pathDepth(path: string): number {
  return path === "" ? 0 : path.split("/").length;
}
