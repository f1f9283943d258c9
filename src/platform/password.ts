/** Password hashing edge: the only place that knows it is Bun.password (argon2id). */

/** Hash a password with argon2id. */
export function hashPassword(password: string): Promise<string> {
  return Bun.password.hash(password, { algorithm: "argon2id" });
}

/** Verify a password against a stored hash. */
export function verifyPassword(password: string, hash: string): Promise<boolean> {
  return Bun.password.verify(password, hash);
}
