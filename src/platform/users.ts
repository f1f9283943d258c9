import { eq, sql } from "drizzle-orm";
import type { Db } from "../db/index.ts";
import { isUniqueViolation, users } from "../db/index.ts";
import { badRequest, conflict, notFound } from "./errors.ts";
import { newId } from "./ids.ts";
import { hashPassword, verifyPassword } from "./password.ts";

/** A user as every API shows it: never the hash. */
export interface User {
  id: string;
  email: string;
  createdAt: number;
}

/**
 * A login whose password matched, with the hash it matched: a sign-in is made
 * from it only while that is still the user's hash (see `AuthSessions.create`).
 */
export interface VerifiedLogin {
  user: User;
  passwordHash: string;
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
/**
 * Characters an address never needs that make one look like another:
 * controls, format characters (zero-width marks, bidirectional overrides,
 * tags) and everything Unicode says a renderer may leave out (soft hyphen,
 * combining grapheme joiner).
 */
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Default_Ignorable_Code_Point}]/u;
/** Short passwords fall to offline guessing even under argon2id. */
export const MIN_PASSWORD_LENGTH = 8;
/** Longest password the login route takes (hashing costs per byte): a longer one could be set but never used. */
export const MAX_PASSWORD_LENGTH = 1024;
/** Longest email address (RFC 3696's 64 + 1 + 255), at create and at login alike. */
export const MAX_EMAIL_LENGTH = 320;

/** The user store: create, look up, verify a login. */
export class Users {
  /** A real hash verified for unknown emails, so both 401 paths cost the same time. */
  #decoyHash: Promise<string> | null = null;
  /** Prepared once: every request resolves its user. Never reads the password hash. */
  readonly #byId;

  constructor(private readonly db: Db) {
    this.#byId = db.select({ id: users.id, email: users.email, createdAt: users.createdAt }).from(users).where(eq(users.id, sql.placeholder("id"))).prepare();
    this.#respellStored();
  }

  /**
   * Give addresses stored before emails were Unicode-normalised their one
   * spelling, so a lookup by it finds them. Two rows that are one address
   * in two spellings cannot both have it: the second keeps its own (it
   * still signs in with exactly that spelling) and is logged for the
   * operator to remove.
   */
  #respellStored(): void {
    for (const { id, email } of this.db.select({ id: users.id, email: users.email }).from(users).all()) {
      const respelled = normalizeEmail(email);
      if (respelled === email) continue;
      try {
        this.db.update(users).set({ email: respelled }).where(eq(users.id, id)).run();
      } catch (error) {
        if (!isUniqueViolation(error)) throw error;
        console.warn(`hatch: user ${id} ("${JSON.stringify(email).slice(1, -1)}") is another spelling of an existing user's email address; it keeps its own spelling`);
      }
    }
  }

  /**
   * Create a user; the email is normalised to lower case. `alongside` (its
   * audit entry) runs in the insert's transaction: if it throws, no user is left.
   */
  async create(email: string, password: string, alongside?: (user: User) => void): Promise<User> {
    const normalized = normalizeEmail(email);
    if (!EMAIL.test(normalized) || INVISIBLE.test(normalized)) throw badRequest("invalid_email", `Cannot create user: "${shownEmail(email)}" is not an email address`);
    if (normalized.length > MAX_EMAIL_LENGTH) throw badRequest("invalid_email", `Cannot create user: an email address has at most ${MAX_EMAIL_LENGTH} characters`);
    checkPassword(password, "Cannot create user");
    const exists = () => conflict("user_exists", `Cannot create user: "${normalized}" already exists`);
    if (this.findByEmail(normalized)) throw exists();
    const row = { id: newId(), email: normalized, passwordHash: await hashPassword(password), createdAt: Date.now() };
    const user = publicUser(row);
    try {
      this.db.$client
        .transaction(() => {
          this.db.insert(users).values(row).run();
          alongside?.(user);
        })
        .immediate();
    } catch (error) {
      // Created meanwhile, while the password was hashed (another CLI run, say).
      if (isUniqueViolation(error)) throw exists();
      throw error;
    }
    return user;
  }

  /**
   * Replace a user's password. `alongside` runs in the same transaction: the
   * caller ends their sign-ins there (a reset after a leak must lock the holder
   * out, never leave the new password with the old sign-ins) and audits it.
   */
  async setPassword(userId: string, password: string, alongside?: () => void): Promise<void> {
    checkPassword(password, "Cannot set the password");
    const passwordHash = await hashPassword(password);
    this.db.$client
      .transaction(() => {
        this.db.update(users).set({ passwordHash }).where(eq(users.id, userId)).run();
        alongside?.();
      })
      .immediate();
  }

  /** The user with this id, or null. */
  get(id: string): User | null {
    return this.#byId.get({ id }) ?? null;
  }

  /** The user with this email, or null. */
  findByEmail(email: string): User | null {
    const row = this.#rowByEmail(email);
    return row ? publicUser(row) : null;
  }

  /**
   * The row an address names: the one stored in exactly the spelling given
   * (a row `#respellStored` left in its own, colliding spelling), else the
   * one stored in the address's one spelling.
   */
  #rowByEmail(email: string) {
    const given = email.trim().toLowerCase();
    const normalized = normalizeEmail(email);
    if (given !== normalized) {
      const exact = this.db.select().from(users).where(eq(users.email, given)).get();
      if (exact) return exact;
    }
    return this.db.select().from(users).where(eq(users.email, normalized)).get();
  }

  /** The user with this email, or a 404 naming it. */
  requireByEmail(email: string): User {
    const user = this.findByEmail(email);
    if (!user) throw notFound("user_not_found", `Cannot find user "${email}"`);
    return user;
  }

  /** The user when email and password match; null otherwise, in the same time either way. */
  async verifyLogin(email: string, password: string): Promise<VerifiedLogin | null> {
    const row = this.#rowByEmail(email);
    if (!row) {
      this.#decoyHash ??= hashPassword("decoy password for timing");
      await verifyPassword(password, await this.#decoyHash);
      return null;
    }
    return (await verifyPassword(password, row.passwordHash)) ? { user: publicUser(row), passwordHash: row.passwordHash } : null;
  }
}

/** An address as a message shows it: its invisible characters written as `\u{…}`, so what is refused can be seen. */
function shownEmail(email: string): string {
  return email.replace(new RegExp(INVISIBLE.source, "gu"), (char) => `\\u{${char.codePointAt(0)!.toString(16)}}`);
}

function checkPassword(password: string, doing: string): void {
  if (password.length < MIN_PASSWORD_LENGTH) throw badRequest("weak_password", `${doing}: the password must have at least ${MIN_PASSWORD_LENGTH} characters`);
  if (password.length > MAX_PASSWORD_LENGTH) throw badRequest("password_too_long", `${doing}: the password must have at most ${MAX_PASSWORD_LENGTH} characters (the login takes no more)`);
}

/**
 * The one spelling of an email address that hatch stores and compares:
 * trimmed, lower case, and in Unicode's composed form (NFC), so "é" typed
 * as one character and as "e" plus a combining accent (pasted from macOS
 * or some mail clients) are one address, never two look-alike users.
 */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase().normalize("NFC");
}

function publicUser(row: { id: string; email: string; createdAt: number }): User {
  return { id: row.id, email: row.email, createdAt: row.createdAt };
}
