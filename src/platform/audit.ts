import { and, desc, eq, gte, isNull, lt, lte, type SQL } from "drizzle-orm";
import type { Db } from "../db/index.ts";
import { auditLog } from "../db/index.ts";

/** What a part records. `detail` must never carry a secret. */
export interface AuditEntryInput {
  action: string;
  userId?: string | null;
  projectId?: string | null;
  agentId?: string | null;
  target?: string | null;
  detail?: Record<string, unknown>;
}

/** An entry as read back. */
export interface AuditEntry extends Required<Omit<AuditEntryInput, "detail">> {
  id: number;
  at: number;
  detail: Record<string, unknown> | null;
}

/** Filters for reading the log. */
export interface AuditQuery {
  /** One project's entries; null for those of no project (a user's password, server-wide settings); absent for all. */
  projectId?: string | null;
  action?: string;
  since?: number;
  until?: number;
  /**
   * Only entries older than the one with this id: the cursor for the next
   * page (the last entry's id). Times cannot be one: more entries than a page
   * share a millisecond (a reaper round, a flood of blocked lines).
   */
  before?: number;
  limit?: number;
}

/** Longest page of audit entries one read returns. */
export const MAX_AUDIT_PAGE = 1000;

/** The one audit writer every part uses, and its reader. */
export class Audit {
  constructor(
    private readonly db: Db,
    private readonly now: () => number = Date.now,
  ) {}

  /** Append an entry. */
  write(entry: AuditEntryInput): void {
    this.db
      .insert(auditLog)
      .values({
        at: this.now(),
        action: entry.action,
        userId: entry.userId ?? null,
        projectId: entry.projectId ?? null,
        agentId: entry.agentId ?? null,
        target: entry.target ?? null,
        detail: entry.detail ? JSON.stringify(entry.detail) : null,
      })
      .run();
  }

  /**
   * Make a change and write its entry in one transaction: if the entry cannot
   * be written (a lock held past the busy timeout, a full disk), the change is
   * undone too and the error goes to the caller, so the log never lacks a
   * change that was kept. `change` must be synchronous (a transaction cannot
   * span an await) and write only to the database; work outside it (a
   * process killed, a token shown) goes after. Inside another transaction it
   * is a savepoint of it. An entry of null (the change turned out to need
   * none) writes nothing.
   */
  recorded<T>(change: () => T, entry: AuditEntryInput | null | ((result: T) => AuditEntryInput | null)): T {
    return this.db.$client
      .transaction(() => {
        const result = change();
        const written = typeof entry === "function" ? entry(result) : entry;
        if (written) this.write(written);
        return result;
      })
      .immediate();
  }

  /**
   * `recorded` for a member's change in their project: the entry names them,
   * the project, and what `describe` says of the result (null: nothing changed,
   * so nothing is written).
   */
  recordedBy<T>(
    caller: { user: { id: string }; project: { id: string } },
    action: string,
    change: () => T,
    describe: (result: T) => Pick<AuditEntryInput, "target" | "detail" | "agentId"> | null,
  ): T {
    return this.recorded(change, (result) => {
      const described = describe(result);
      return described && { action, userId: caller.user.id, projectId: caller.project.id, ...described };
    });
  }

  /** Newest first, filtered by action and time. */
  query(q: AuditQuery): AuditEntry[] {
    const where: SQL[] = [];
    if (q.projectId !== undefined) where.push(q.projectId === null ? isNull(auditLog.projectId) : eq(auditLog.projectId, q.projectId));
    if (q.action) where.push(eq(auditLog.action, q.action));
    if (q.since !== undefined) where.push(gte(auditLog.at, q.since));
    if (q.until !== undefined) where.push(lte(auditLog.at, q.until));
    if (q.before !== undefined) where.push(lt(auditLog.id, q.before));
    return this.db
      .select()
      .from(auditLog)
      .where(and(...where))
      .orderBy(desc(auditLog.id))
      .limit(Math.min(q.limit ?? 100, MAX_AUDIT_PAGE))
      .all()
      .map((row) => ({ ...row, detail: row.detail ? (JSON.parse(row.detail) as Record<string, unknown>) : null }));
  }
}
