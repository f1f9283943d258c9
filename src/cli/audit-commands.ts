import { MAX_AUDIT_PAGE, type AuditEntry, type Platform } from "../platform/index.ts";
import { integerOption, timeOption, UsageError, type Command } from "./command.ts";

/** Entries `admin audit` shows unless --limit says otherwise. */
const DEFAULT_ENTRIES_SHOWN = 50;

/** An audit entry with the names behind its ids, for a reader at the console. */
interface NamedAuditEntry extends AuditEntry {
  userEmail: string | null;
  projectSlug: string | null;
}

/**
 * `hatch admin audit`: the operator's read of the audit log. `/api/audit`
 * shows a project's owners and admins their own project's entries; the entries
 * of no project (a user's password set, a server-wide setting changed) are
 * read here.
 */
export const auditCommands: Command[] = [
  {
    path: ["admin", "audit"],
    readsOnly: true,
    summary: "Show the audit log, newest first: all of it, one project's, or the server-wide entries",
    options: {
      project: { type: "string", description: "only this project's entries (its slug)" },
      server: { type: "boolean", description: "only entries of no project: passwords set, server-wide settings" },
      action: { type: "string", description: "only this action, e.g. user.password or workflow.take_over" },
      since: { type: "string", description: "only entries at or after this time (ISO 8601, e.g. 2026-11-24 or 2026-11-24T09:30Z)" },
      until: { type: "string", description: "only entries at or before this time (ISO 8601)" },
      before: { type: "string", description: "only entries older than the one of this id: the next page after a page's last entry" },
      limit: { type: "string", description: `how many (default ${DEFAULT_ENTRIES_SHOWN}, at most ${MAX_AUDIT_PAGE})` },
    },
    run: async (ctx, v) => {
      if (v.project !== undefined && v.server === true) throw new UsageError("give at most one of --project, --server");
      const limit = integerOption(v, "limit", { min: 1, max: MAX_AUDIT_PAGE, what: `1 to ${MAX_AUDIT_PAGE}` }) ?? DEFAULT_ENTRIES_SHOWN;
      const since = timeOption(v, "since");
      const until = timeOption(v, "until");
      const before = integerOption(v, "before", { min: 1, max: Number.MAX_SAFE_INTEGER, what: "an entry id" });
      const action = typeof v.action === "string" ? v.action : undefined;
      // An empty value (an unset shell variable) would otherwise filter nothing and show every action.
      if (action === "") throw new UsageError("--action needs an action name, e.g. user.password");
      const platform = await ctx.platform();
      const projectId = v.server === true ? null : typeof v.project === "string" ? platform.projects.requireBySlug(v.project).id : undefined;
      return platform.audit.query({ projectId, action, since, until, before, limit }).map((entry) => named(platform, entry));
    },
    human: (r) => ((r as NamedAuditEntry[]).length ? (r as NamedAuditEntry[]).map(entryLine) : "(no entries)"),
  },
];

function named(platform: Platform, entry: AuditEntry): NamedAuditEntry {
  const userEmail = entry.userId === null ? null : (platform.users.get(entry.userId)?.email ?? null);
  const projectSlug = entry.projectId === null ? null : (platform.projects.get(entry.projectId)?.slug ?? null);
  return { ...entry, userEmail, projectSlug };
}

/** `#41  2026-11-24T09:30:00.000Z  user.password  server-wide  user member@example.com  target member@example.com  {"signedOut":1,"via":"cli"}` (the id is what --before takes) */
function entryLine(e: NamedAuditEntry): string {
  const parts = [`#${e.id}`, new Date(e.at).toISOString(), e.action, e.projectSlug ?? e.projectId ?? "server-wide"];
  // The entry's user: who acted, or for user.password whose password was set.
  if (e.userId !== null) parts.push(`user ${e.userEmail ?? e.userId}`);
  if (e.agentId !== null) parts.push(`agent ${e.agentId}`);
  if (e.target !== null) parts.push(`target ${e.target}`);
  if (e.detail !== null) parts.push(JSON.stringify(e.detail));
  return parts.join("  ");
}
