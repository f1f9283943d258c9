import { and, desc, eq, gt, lte, notInArray, sql } from "drizzle-orm";
import type { Db } from "../db/index.ts";
import { authSessions, users } from "../db/index.ts";
import type { AccessChanges } from "./access-changes.ts";
import type { VerifiedLogin } from "./users.ts";
import { randomToken, sha256Hex } from "./ids.ts";

/** The name of the login cookie. */
export const SESSION_COOKIE = "hatch_session";

/**
 * The login cookie's value from a request's `Cookie` header, when it holds
 * exactly one. Two mean another page planted one: cookies ignore ports, and a
 * browser sends the cookie with the longer path first, so a page on another
 * port of this host that set `hatch_session=<its own>; Path=/api` would
 * otherwise sign the visitor into its account on every /api request, quietly
 * filing what they store there under it. Neither is trusted: signed out.
 */
export function sessionTokenOf(cookieHeader: string | null | undefined): string | undefined {
  let token: string | undefined;
  for (const pair of (cookieHeader ?? "").split(";")) {
    const eq = pair.indexOf("=");
    if (eq === -1 || pair.slice(0, eq).trim() !== SESSION_COOKIE) continue;
    if (token !== undefined) return undefined;
    token = pair.slice(eq + 1).trim();
  }
  return token;
}

/**
 * Every `hatch_session` value in a Cookie header. A logout
 * ends them all: with a cookie planted beside the real one (see
 * `sessionTokenOf`) it could not tell which is the visitor's, and a logout
 * that says it worked must leave no sign-in behind that a copied cookie
 * could use. Each value is a random token, so ending one not the visitor's
 * costs nobody anything they did not plant. There is no cap: a page can
 * plant any number ahead of the real one, and the header's size bounds them.
 */
export function sessionTokensIn(cookieHeader: string | null | undefined): string[] {
  const tokens = new Set<string>();
  for (const pair of (cookieHeader ?? "").split(";")) {
    const eq = pair.indexOf("=");
    if (eq === -1 || pair.slice(0, eq).trim() !== SESSION_COOKIE) continue;
    const token = pair.slice(eq + 1).trim();
    if (token !== "") tokens.add(token);
  }
  return [...tokens];
}

/**
 * Sign-ins one user keeps at once; a login past it ends their oldest. A
 * person has a few browsers; without a bound, a script logging in with a
 * known password in a loop grows the table (and every lookup) for ever.
 */
export const MAX_SIGN_INS_PER_USER = 50;

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
      // Made within the lifetime in force too: one lowered at a restart (after a leaked cookie, say) ends older sign-ins.
      .where(and(eq(authSessions.id, sql.placeholder("id")), gt(authSessions.expiresAt, sql.placeholder("now")), gt(authSessions.createdAt, sql.placeholder("madeAfter"))))
      .prepare();
  }

  /**
   * Start a session for a verified login; returns the cookie value (shown to
   * the browser once), or null when the password changed since it was
   * verified. Verifying takes tens of milliseconds, and a reset (`hatch admin
   * user password`, another process) may land in them: it ends the sign-ins
   * it finds, so one made after it from the old password must not appear.
   * The check and the insert are one statement.
   */
  async create(login: VerifiedLogin, projectId: string | null): Promise<{ token: string; expiresAt: number } | null> {
    const token = randomToken(32);
    const id = await sha256Hex(token);
    const now = this.now();
    const expiresAt = now + this.ttlMs;
    const whileCurrent = this.db
      .select({ id: sql`${id}`.as("id"), userId: users.id, projectId: sql`${projectId}`.as("project_id"), createdAt: sql`${now}`.as("created_at"), expiresAt: sql`${expiresAt}`.as("expires_at") })
      .from(users)
      .where(and(eq(users.id, login.user.id), eq(users.passwordHash, login.passwordHash)));
    const made = this.db.insert(authSessions).select(whileCurrent).returning({ id: authSessions.id }).get();
    if (!made) return null;
    this.#purgeExpired();
    this.#endOldestBeyondLimit(login.user.id);
    return { token, expiresAt };
  }

  /** The live session behind a cookie value, or null (unknown, tampered or expired). */
  async resolve(token: string | undefined): Promise<AuthSession | null> {
    if (!token || token.length > 128) return null;
    const now = this.now();
    const row = this.#live.get({ id: await sha256Hex(token), now, madeAfter: now - this.ttlMs });
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

  #endOldestBeyondLimit(userId: string): void {
    const kept = this.db
      .select({ id: authSessions.id })
      .from(authSessions)
      .where(eq(authSessions.userId, userId))
      .orderBy(desc(authSessions.createdAt), desc(sql`rowid`))
      .limit(MAX_SIGN_INS_PER_USER);
    const ended = this.db.delete(authSessions).where(and(eq(authSessions.userId, userId), notInArray(authSessions.id, kept))).returning({ id: authSessions.id }).all();
    if (ended.length > 0) this.changes.notify({ userId });
  }

  #purgeExpired(): void {
    this.db.delete(authSessions).where(lte(authSessions.expiresAt, this.now())).run();
  }
}
