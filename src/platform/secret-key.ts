import { chmodSync, existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** Name of the generated key file inside the data dir. */
export const SECRET_KEY_FILE = "secret.key";

/**
 * Load the AES-256-GCM key for secrets at rest: derived from HATCH_SECRET_KEY
 * when set, otherwise read from (or generated into) a 0600 key file in the data dir.
 */
export async function loadSecretKey(options: { secretKey: string | null; dataDir: string }): Promise<CryptoKey> {
  const material = options.secretKey
    ? new TextEncoder().encode(options.secretKey)
    : Buffer.from(readOrCreateKeyFile(join(options.dataDir, SECRET_KEY_FILE)), "base64");
  // SHA-256 turns any key material of at least 32 characters into exactly 256 bits.
  const raw = await crypto.subtle.digest("SHA-256", material);
  return crypto.subtle.importKey("raw", raw, "AES-GCM", false, ["encrypt", "decrypt"]);
}

function readOrCreateKeyFile(path: string): string {
  if (!existsSync(path)) {
    const key = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64");
    writeFileSync(path, key + "\n", { mode: 0o600, flag: "wx" });
  }
  // A key file readable by others is a leak waiting to happen; tighten it.
  if ((statSync(path).mode & 0o077) !== 0) chmodSync(path, 0o600);
  return readFileSync(path, "utf8").trim();
}
