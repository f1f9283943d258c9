import { hash } from "node:crypto";
import { constantTimeEqual, randomToken } from "../platform/index.ts";
import type { StoredTokenHash } from "../workflows/index.ts";

/** Every fire token starts with this: the version of the format, and a marker secret scanners can match. */
export const FIRE_TOKEN_PREFIX = "wfk1_";
/** Random bytes in a token: 256 bits, so a salted fast hash is enough (nothing to brute-force). */
export const FIRE_TOKEN_BYTES = 32;
/** Random bytes of a per-token salt: identical tokens (never, but still) hash differently. */
const SALT_BYTES = 16;
/** A well-formed token: the prefix and 43 base64url characters (32 bytes, unpadded). */
const TOKEN_SHAPE = /^wfk1_[A-Za-z0-9_-]{43}$/;

/** A freshly minted token (shown once) and what is stored of it. */
export interface MintedFireToken {
  token: string;
  stored: StoredTokenHash;
}

/**
 * Mint a fire token: `wfk1_` + 32 random bytes (base64url). Only the salted
 * SHA-256 is stored; the token itself is shown once and never again.
 *
 * @example
 * const { token, stored } = mintFireToken(); // token: "wfk1_Q2x…"
 */
export function mintFireToken(): MintedFireToken {
  const token = FIRE_TOKEN_PREFIX + randomToken(FIRE_TOKEN_BYTES);
  const salt = randomToken(SALT_BYTES);
  return { token, stored: { salt, hash: hashFireToken(token, salt) } };
}

/**
 * The stored hash of a token under a salt (hex SHA-256). Synchronous on
 * purpose: Web Crypto's digest is async and hops to a thread pool, which cost
 * about 60 µs per fire in bench/fire.ts. `node:crypto`'s one-shot `hash` (Bun,
 * Node 21.7+ and Deno have it) takes about 0.3 µs for these 80 bytes, half of
 * `createHash().update().digest()`, which builds a stateful hasher first.
 */
export function hashFireToken(token: string, salt: string): string {
  return hash("sha256", `${salt}:${token}`, "hex");
}

/** Whether a string has the shape of a fire token (cheap, before any hashing). */
export function isFireTokenShaped(value: string): boolean {
  return TOKEN_SHAPE.test(value);
}

/** Compare a presented token with a stored hash, in constant time. */
export function fireTokenMatches(token: string, salt: string, hash: string): boolean {
  return constantTimeEqual(hashFireToken(token, salt), hash);
}
