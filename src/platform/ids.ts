/** Random identifiers and tokens; always from the CSPRNG (crypto.getRandomValues, randomUUID). */

/** `bytes` random bytes as base64url (no padding). */
export function randomToken(bytes = 32): string {
  const buf = crypto.getRandomValues(new Uint8Array(bytes));
  return Buffer.from(buf).toString("base64url");
}

/** A new opaque resource id, e.g. for users, projects and agents. */
export function newId(): string {
  return crypto.randomUUID();
}

/** Hex SHA-256 of a string: how cookie values and the like are stored. */
export async function sha256Hex(value: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(value));
  return Buffer.from(digest).toString("hex");
}

/** Compare two strings in time independent of where they differ. */
export function constantTimeEqual(a: string, b: string): boolean {
  const left = new TextEncoder().encode(a);
  const right = new TextEncoder().encode(b);
  let diff = left.length ^ right.length;
  const length = Math.max(left.length, right.length);
  for (let i = 0; i < length; i++) diff |= (left[i] ?? 0) ^ (right[i] ?? 0);
  return diff === 0;
}
