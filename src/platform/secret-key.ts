import { chmodSync, existsSync, linkSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** Name of the generated key file inside the data dir. */
export const SECRET_KEY_FILE = "secret.key";
/** Random bytes in a generated key file, and the least a key file must hold. */
const KEY_FILE_BYTES = 32;

/** The key for secrets at rest, and the key file this load wrote (null when it read one, or none is used). */
export interface SecretKey {
  key: CryptoKey;
  /**
   * A HATCH_SECRET_KEY in the form of a generated key file (the base64 of 32
   * bytes) may be one copied out of `secret.key`, whose key is those bytes,
   * not the text: the key as that file would give it. Null otherwise.
   */
  asKeyFile: CryptoKey | null;
  createdFile: string | null;
}

/**
 * Load the AES-256-GCM key for secrets at rest: derived from HATCH_SECRET_KEY
 * when set, otherwise read from (or generated into) a 0600 key file in the data dir.
 */
export async function loadSecretKey(options: { secretKey: string | null; dataDir: string }): Promise<SecretKey> {
  const path = join(options.dataDir, SECRET_KEY_FILE);
  const createdFile = !options.secretKey && !existsSync(path) && createKeyFile(path) ? path : null;
  const material = options.secretKey ? new TextEncoder().encode(options.secretKey) : keyFileBytes(path);
  const fileForm = options.secretKey ? keyFileForm(options.secretKey) : null;
  return { key: await derivedKey(material), asKeyFile: fileForm && (await derivedKey(fileForm)), createdFile };
}

/** SHA-256 turns any key material of at least 32 characters into exactly 256 bits. */
async function derivedKey(material: Uint8Array<ArrayBuffer>): Promise<CryptoKey> {
  return crypto.subtle.importKey("raw", await crypto.subtle.digest("SHA-256", material), "AES-GCM", false, ["encrypt", "decrypt"]);
}

/** The key bytes of `text` read as a key file's contents, when it is exactly such (canonical base64 of 32 bytes). */
function keyFileForm(text: string): Uint8Array<ArrayBuffer> | null {
  const trimmed = text.trim();
  const bytes = Buffer.from(trimmed, "base64");
  return bytes.length === KEY_FILE_BYTES && bytes.toString("base64") === trimmed ? new Uint8Array(bytes) : null;
}

/**
 * The key file's bytes. An empty or truncated file is refused rather than
 * used: hashed, it would give a key anyone can compute (SHA-256 of nothing).
 */
function keyFileBytes(path: string): Buffer<ArrayBuffer> {
  const bytes = Buffer.from(readKeyFile(path), "base64");
  if (bytes.length < KEY_FILE_BYTES) {
    throw new Error(`Cannot use the key file ${path}: it holds ${bytes.length} bytes of key, not ${KEY_FILE_BYTES} (restore it from backup; without it stored secrets cannot be read)`);
  }
  return bytes;
}

function readKeyFile(path: string): string {
  // A key file readable by others is a leak waiting to happen; tighten it.
  if ((statSync(path).mode & 0o077) !== 0) chmodSync(path, 0o600);
  return readFileSync(path, "utf8").trim();
}

/**
 * Write a new key beside `path`, then link it into place: the key file appears
 * whole or not at all. Of two processes creating it at once (the server and
 * the CLI on a new data dir), one links its key and the other reads that one;
 * created in place, the other failed on EEXIST or read it still empty.
 * True when this call's key is the one in place.
 */
function createKeyFile(path: string): boolean {
  const key = Buffer.from(crypto.getRandomValues(new Uint8Array(KEY_FILE_BYTES))).toString("base64") + "\n";
  const staged = `${path}.${process.pid}.new`;
  writeFileSync(staged, key, { mode: 0o600 });
  try {
    linkSync(staged, path);
    return true;
  } catch (error) {
    // EEXIST: another process made it first, and its key is the one. Anything else: a file system without hard links, written in place as before.
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    writeFileSync(path, key, { mode: 0o600, flag: "wx" });
    return true;
  } finally {
    rmSync(staged, { force: true });
  }
}
