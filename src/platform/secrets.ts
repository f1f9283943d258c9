import { and, count, eq } from "drizzle-orm";
import type { Db } from "../db/index.ts";
import { secretKeyCheck, secrets } from "../db/index.ts";
import { badRequest, conflict } from "./errors.ts";

/** Where a secret lives: a user's own scope or a project's. */
export type SecretScope = "user" | "project";

/** What any API may show of a secret: never its value. */
export interface SecretInfo {
  scope: SecretScope;
  id: string;
  updatedAt: number;
}

/** A secret checked and encrypted, ready to be written. */
export interface SealedSecret {
  scope: SecretScope;
  scopeId: string;
  id: string;
  iv: Buffer;
  ciphertext: Buffer;
}

const SECRET_ID = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;
/** Secrets are tokens and keys, not files. */
const MAX_SECRET_LENGTH = 16 * 1024;
const IV_BYTES = 12;
/**
 * Secrets one scope (a user's own, a project's) holds at most. A user's own
 * scope needs no project role to write, so without a bound any signed-in
 * account could fill the disk 16 KiB (and an audit entry) at a time.
 */
export const MAX_SECRETS_PER_SCOPE = 200;

/** Secrets encrypted at rest with AES-256-GCM; the value only leaves through `reveal` to server code. */
export class Secrets {
  constructor(
    private readonly db: Db,
    private readonly key: CryptoKey,
  ) {}

  /** Store (or replace) a secret. */
  async put(scope: SecretScope, scopeId: string, id: string, value: string): Promise<SecretInfo> {
    return this.store(await this.seal(scope, scopeId, id, value));
  }

  /** Check and encrypt a secret for `store`: the half of `put` that awaits, so the write can share a transaction. */
  async seal(scope: SecretScope, scopeId: string, id: string, value: string): Promise<SealedSecret> {
    if (!SECRET_ID.test(id)) throw badRequest("invalid_secret_id", `Cannot store secret: "${id}" is not a valid secret id`);
    if (typeof value !== "string" || value.length === 0 || value.length > MAX_SECRET_LENGTH) {
      throw badRequest("invalid_secret_value", `Cannot store secret "${id}": the value must be 1 to ${MAX_SECRET_LENGTH} characters`);
    }
    // Sealed as UTF-8, a lone surrogate would come back as U+FFFD: a different secret than the one given.
    if (!value.isWellFormed()) throw badRequest("invalid_secret_value", `Cannot store secret "${id}": the value is not well-formed Unicode (a lone surrogate)`);
    const iv = crypto.getRandomValues(new Uint8Array(IV_BYTES));
    const ciphertext = await crypto.subtle.encrypt(
      { name: "AES-GCM", iv, additionalData: aad(scope, scopeId, id) },
      this.key,
      new TextEncoder().encode(value),
    );
    return { scope, scopeId, id, iv: Buffer.from(iv), ciphertext: Buffer.from(ciphertext) };
  }

  /** Write a sealed secret, replacing one of the same id; a new one past MAX_SECRETS_PER_SCOPE is refused (409 `too_many_secrets`). */
  store(sealed: SealedSecret): SecretInfo {
    const row = { ...sealed, updatedAt: Date.now() };
    const inScope = and(eq(secrets.scope, sealed.scope), eq(secrets.scopeId, sealed.scopeId));
    const replaces = this.db.select({ id: secrets.id }).from(secrets).where(and(inScope, eq(secrets.id, sealed.id))).get();
    if (!replaces && this.db.select({ n: count() }).from(secrets).where(inScope).get()!.n >= MAX_SECRETS_PER_SCOPE) {
      throw conflict("too_many_secrets", `Cannot store secret "${sealed.id}": this ${sealed.scope} scope already holds ${MAX_SECRETS_PER_SCOPE} secrets; delete one first`);
    }
    this.db
      .insert(secrets)
      .values(row)
      .onConflictDoUpdate({ target: [secrets.scope, secrets.scopeId, secrets.id], set: { iv: row.iv, ciphertext: row.ciphertext, updatedAt: row.updatedAt } })
      .run();
    return { scope: row.scope, id: row.id, updatedAt: row.updatedAt };
  }

  /** The plaintext, for server-side use only (a runner's API key, a bot token). Null when absent. */
  async reveal(scope: SecretScope, scopeId: string, id: string): Promise<string | null> {
    const row = this.db.select().from(secrets).where(this.#key(scope, scopeId, id)).get();
    if (!row) return null;
    const plain = await crypto.subtle.decrypt(
      { name: "AES-GCM", iv: new Uint8Array(row.iv), additionalData: aad(scope, scopeId, id) },
      this.key,
      new Uint8Array(row.ciphertext),
    );
    return new TextDecoder().decode(plain);
  }

  /** Ids and times of a scope's secrets. */
  list(scope: SecretScope, scopeId: string): SecretInfo[] {
    return this.db
      .select({ id: secrets.id, updatedAt: secrets.updatedAt })
      .from(secrets)
      .where(and(eq(secrets.scope, scope), eq(secrets.scopeId, scopeId)))
      .all()
      .map((r) => ({ scope, ...r }));
  }

  /** Delete a secret; true when one was there. */
  delete(scope: SecretScope, scopeId: string, id: string): boolean {
    const existed = this.db.select({ id: secrets.id }).from(secrets).where(this.#key(scope, scopeId, id)).get() !== undefined;
    this.db.delete(secrets).where(this.#key(scope, scopeId, id)).run();
    return existed;
  }

  /**
   * Throw unless the key is the one this database's secrets were sealed with.
   * A key set in HATCH_SECRET_KEY after running on the generated key file, a
   * lost file, a database restored without its key: each used to start fine
   * and fail later, at the first secret read, with an error that named no key.
   * The first start seals a known value (`secretKeyCheck`); a database from
   * before that is checked against any secret it holds. A new key is taken
   * while no secret is stored, since none is lost, unless `takeNewKey` is
   * false: the CLI must never re-key a data dir a running server seals with.
   */
  async checkKey({ takeNewKey }: { takeNewKey: boolean }): Promise<void> {
    let check = this.db.select().from(secretKeyCheck).get();
    if (check === undefined) {
      const sample = this.db.select().from(secrets).limit(1).get();
      if (sample && !(await opens(this.key, sample.iv, sample.ciphertext, aad(sample.scope, sample.scopeId, sample.id)))) throw keyMismatch();
      const iv = crypto.getRandomValues(new Uint8Array(IV_BYTES));
      const ciphertext = await crypto.subtle.encrypt({ name: "AES-GCM", iv, additionalData: KEY_CHECK_AAD }, this.key, KEY_CHECK_AAD);
      // Another process (the CLI, on a new data dir) may have sealed its own first: the row there is the one to open.
      this.db.insert(secretKeyCheck).values({ id: 1, iv: Buffer.from(iv), ciphertext: Buffer.from(ciphertext) }).onConflictDoNothing().run();
      check = this.db.select().from(secretKeyCheck).get()!;
    }
    if (await opens(this.key, check.iv, check.ciphertext, KEY_CHECK_AAD)) return;
    // No secret to lose (a key file deleted before any was stored): the new key seals from now on.
    if (takeNewKey && this.db.select({ id: secrets.id }).from(secrets).limit(1).get() === undefined) {
      this.db.delete(secretKeyCheck).run();
      return this.checkKey({ takeNewKey });
    }
    throw keyMismatch();
  }

  #key(scope: SecretScope, scopeId: string, id: string) {
    return and(eq(secrets.scope, scope), eq(secrets.scopeId, scopeId), eq(secrets.id, id));
  }
}

/** Whether `key` opens what the database holds sealed (its key check, else a stored secret); false when it holds nothing sealed. */
export async function opensSealed(db: Db, key: CryptoKey): Promise<boolean> {
  const check = db.select().from(secretKeyCheck).get();
  if (check) return opens(key, check.iv, check.ciphertext, KEY_CHECK_AAD);
  const sample = db.select().from(secrets).limit(1).get();
  return sample !== undefined && opens(key, sample.iv, sample.ciphertext, aad(sample.scope, sample.scopeId, sample.id));
}

async function opens(key: CryptoKey, iv: Buffer, ciphertext: Buffer, additionalData: Uint8Array<ArrayBuffer>): Promise<boolean> {
  try {
    await crypto.subtle.decrypt({ name: "AES-GCM", iv: new Uint8Array(iv), additionalData }, key, new Uint8Array(ciphertext));
    return true;
  } catch {
    return false;
  }
}

/** What the key check seals (also as its additional data): a fixed text no secret's slot can spell. */
const KEY_CHECK_AAD = new TextEncoder().encode("hatch secret key check\0v1");

function keyMismatch(): Error {
  return new Error(
    "the secret key (HATCH_SECRET_KEY, or else secret.key in the data dir) is not the one this data dir's secrets were sealed with: start with that key, restored from backup (a changed HATCH_SECRET_KEY, a lost or regenerated secret.key, a database restored without its key)",
  );
}

/** Binding the ciphertext to its slot stops a row being copied under another id. */
function aad(scope: string, scopeId: string, id: string): Uint8Array<ArrayBuffer> {
  return new TextEncoder().encode(`${scope}\0${scopeId}\0${id}`);
}
