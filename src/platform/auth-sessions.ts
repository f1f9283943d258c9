import { and, eq, gt, lte, sql } from "drizzle-orm";
import type { Db } from "../db/index.ts";
import { authSessions } from "../db/index.ts";
import type { AccessChanges } from "./access-changes.ts";
import { randomToken, sha256Hex } from "./ids.ts";

/** The name of the login cookie. */
export const SESSION_COOKIE = "hatch_session";

/** The login cookie's value from a framework's cookie jar (Elysia's `cookie`), if any. */
export function sessionTokenOf(cookies: Record<string, { value?: unknown } | undefined>): string | undefined {
  const value = cookies[SESSION_COOKIE]?.value;
  return typeof value === "string" ? value : undefined;
}

/** A resolved login session. */
export interface AuthSession {
  id: string;
  userId: string;
  projectId: string | null;
  expiresAt: number;
}

/**
 * Server-side login sessions. The cookie carries 32 random bytes; only their
 * SHA-256 is stored, so a database leak does not hand out live cookies.
 */
export class AuthSessions {
  /** Prepared once: every request, and every keystroke of a terminal, resolves its cookie. */
  readonly #live;

  constructor(
    private readonly db: Db,
    private readonly ttlMs: number,
    private readonly now: () => number,
    private readonly changes: AccessChanges,
  ) {
    this.#live = db
      .select()
      .from(authSessions)
      .where(and(eq(authSessions.id, sql.placeholder("id")), gt(authSessions.expiresAt, sql.placeholder("now"))))
      .prepare();
  }

  /** Start a session; returns the cookie value (shown to the browser once). */
  async create(userId: string, projectId: string | null): Promise<{ token: string; expiresAt: number }> {
    const token = randomToken(32);
    const expiresAt = this.now() + this.ttlMs;
    this.db.insert(authSessions).values({ id: await sha256Hex(token), userId, projectId, createdAt: this.now(), expiresAt }).run();
    this.#purgeExpired();
    return { token, expiresAt };
  }

  /** The live session behind a cookie value, or null (unknown, tampered or expired). */
  async resolve(token: string | undefined): Promise<AuthSession | null> {
    if (!token || token.length > 128) return null;
    const row = this.#live.get({ id: await sha256Hex(token), now: this.now() });
    return row ? { id: row.id, userId: row.userId, projectId: row.projectId, expiresAt: row.expiresAt } : null;
  }

  /** End the session behind a cookie value, if any. */
  async destroy(token: string | undefined): Promise<void> {
    if (!token) return;
    const ended = this.db.delete(authSessions).where(eq(authSessions.id, await sha256Hex(token))).returning({ userId: authSessions.userId }).get();
    if (ended) this.changes.notify({ userId: ended.userId });
  }

  /** End every sign-in of a user (a password reset); returns how many there were. */
  endAllFor(userId: string): number {
    const ended = this.db.delete(authSessions).where(eq(authSessions.userId, userId)).returning({ id: authSessions.id }).all().length;
    this.changes.notify({ userId });
    return ended;
  }

  /** Switch a session's active project. */
  setProject(sessionId: string, projectId: string): void {
    const switched = this.db.update(authSessions).set({ projectId }).where(eq(authSessions.id, sessionId)).returning({ userId: authSessions.userId }).get();
    if (switched) this.changes.notify({ userId: switched.userId });
  }

  #purgeExpired(): void {
    this.db.delete(authSessions).where(lte(authSessions.expiresAt, this.now())).run();
  }
}
