import { existsSync } from "node:fs";
import { isIP } from "node:net";
import { resolve } from "node:path";

/** Every HATCH_* setting, parsed and validated once at start. */
export interface HatchConfig {
  /** Web host port (HTTP API). `0` picks a free port (tests). */
  port: number;
  /** Companion port serving the terminal WebSocket. */
  companionPort: number;
  /** Interface both servers bind to. Defaults to loopback: exposing hatch is a deliberate act. */
  host: string;
  /** Absolute data directory: SQLite file, secret key file, scratch dirs. */
  dataDir: string;
  /** Secret-encryption key material from HATCH_SECRET_KEY, or null to use the key file. */
  secretKey: string | null;
  /** Operator shell override (HATCH_SHELL), used only when the binary exists. */
  shell: string | null;
  /** Peers whose X-Forwarded-For is believed (HATCH_TRUSTED_PROXIES, comma separated IPs). */
  trustedProxies: string[];
  /** Page origins, besides the web host's own, that may open a terminal WebSocket (HATCH_ALLOWED_ORIGINS). */
  allowedOrigins: string[];
  /** Lifetime of a login session in hours (HATCH_SESSION_TTL_HOURS). */
  sessionTtlHours: number;
  /** Whether the process runs inside a container (labels Container Root vs Process Root). */
  inContainer: boolean;
  /** Deployment OS mounts (HATCH_OS_MOUNTS): local sources rooted inside get default permissions at first attach. */
  osMounts: string[];
  /** PTY library (HATCH_PTY_BACKEND): Bun's built-in terminal, or bun-pty. */
  ptyBackend: "bun" | "bun-pty";
  /** Confinement layers (HATCH_CONFINEMENT): `auto` layers bwrap where it works, `landlock` never does. */
  confinement: "auto" | "landlock";
}

/** Raised for an invalid HATCH_* value, naming the variable and the value. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

const DEFAULT_PORT = 3100;
const DEFAULT_COMPANION_PORT = 3101;
/** A week: long enough for daily use, short enough that a stolen cookie dies. */
const DEFAULT_SESSION_TTL_HOURS = 24 * 7;
/** Ten years: a longer login lifetime is a mistake, and past about 2.7e12 hours the cookie's expiry date does not exist. */
const MAX_SESSION_TTL_HOURS = 24 * 365 * 10;

/**
 * Read the configuration from an environment (default: the process's).
 *
 * @example
 * const config = loadConfig({ HATCH_PORT: "0", HATCH_DATA_DIR: tmp });
 */
export function loadConfig(env: Record<string, string | undefined> = process.env, cwd = process.cwd()): HatchConfig {
  const webPort = port(env, "HATCH_PORT", DEFAULT_PORT);
  const companionPort = port(env, "HATCH_COMPANION_PORT", DEFAULT_COMPANION_PORT);
  // Both servers bind it: the second would fail with "Is port N in use?", though nothing else holds it.
  if (webPort !== 0 && webPort === companionPort) {
    throw new ConfigError(`Cannot use HATCH_PORT and HATCH_COMPANION_PORT both ${webPort}: the web host and the companion server each need their own port`);
  }
  return {
    port: webPort,
    companionPort,
    host: listenHost(env.HATCH_HOST?.trim() || "127.0.0.1"),
    dataDir: resolve(cwd, env.HATCH_DATA_DIR?.trim() || "./data"),
    secretKey: env.HATCH_SECRET_KEY ? secretKey(env.HATCH_SECRET_KEY) : null,
    shell: env.HATCH_SHELL?.trim() || null,
    trustedProxies: (env.HATCH_TRUSTED_PROXIES ?? "").split(",").map((s) => s.trim()).filter(Boolean).map(proxyAddress),
    allowedOrigins: (env.HATCH_ALLOWED_ORIGINS ?? "").split(",").map((s) => s.trim()).filter(Boolean).map(origin),
    sessionTtlHours: positiveInt(env, "HATCH_SESSION_TTL_HOURS", DEFAULT_SESSION_TTL_HOURS, MAX_SESSION_TTL_HOURS),
    inContainer: env.HATCH_IN_CONTAINER ? oneOf(env, "HATCH_IN_CONTAINER", ["0", "1"] as const, "0") === "1" : detectContainer(),
    osMounts: (env.HATCH_OS_MOUNTS ?? "").split(",").map((s) => s.trim()).filter(Boolean).map((p) => resolve(cwd, p)),
    ptyBackend: oneOf(env, "HATCH_PTY_BACKEND", ["bun", "bun-pty"] as const, "bun"),
    confinement: oneOf(env, "HATCH_CONFINEMENT", ["auto", "landlock"] as const, "auto"),
  };
}

function port(env: Record<string, string | undefined>, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  // Number(" ") is 0 (any free port): only digits are a port.
  const value = /^\d{1,5}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isInteger(value) || value < 0 || value > 65535) {
    throw new ConfigError(`Cannot use ${name}="${raw}": expected a port number from 0 to 65535`);
  }
  return value;
}

function positiveInt(env: Record<string, string | undefined>, name: string, fallback: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  // As for ports: Number() also reads "0x10", "1e3" and " 5 ", none of which anyone wrote as a number of hours.
  const value = /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isInteger(value) || value <= 0 || value > max) throw new ConfigError(`Cannot use ${name}="${raw}": expected a whole number from 1 to ${max}`);
  return value;
}

/**
 * An IP address (an IPv6 one may come bracketed, as in a URL), or a host name
 * of RFC 1123 labels, returned as the listener and `localUrl` need it. A name
 * whose last label is all digits reads as a mistyped IPv4 address
 * ("999.1.1.1"), so it is refused here rather than failing at listen with an
 * unrelated error. `_` is allowed (Docker Compose names services with it, and
 * the resolver takes it); a fully qualified name's trailing dot is dropped,
 * since Bun's listen refuses it.
 */
function listenHost(raw: string): string {
  const unbracketed = /^\[(.*)\]$/.exec(raw)?.[1];
  if (unbracketed !== undefined && isIP(unbracketed) === 6) return unbracketed;
  if (isIP(raw) !== 0) return raw;
  const name = raw.endsWith(".") ? raw.slice(0, -1) : raw;
  const labels = name.split(".");
  const isName =
    name.length <= 253 && labels.every((label) => /^[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?$/.test(label)) && !/^\d+$/.test(labels.at(-1)!);
  if (!isName) throw new ConfigError(`Cannot use HATCH_HOST="${raw}": expected an IP address or a host name to listen on`);
  return name;
}

function oneOf<T extends string>(env: Record<string, string | undefined>, name: string, allowed: readonly T[], fallback: T): T {
  const raw = env[name]?.trim();
  if (!raw) return fallback;
  if (!(allowed as readonly string[]).includes(raw)) throw new ConfigError(`Cannot use ${name}="${raw}": expected one of ${allowed.join(", ")}`);
  return raw as T;
}

/** One page origin, `scheme://host[:port]` with nothing after it, as a browser sends it. */
function origin(raw: string): string {
  let url: URL | null = null;
  try {
    url = new URL(raw);
  } catch {}
  // A "*" survives the URL parser as a host label (https://*.example.com), but no browser ever sends one in an Origin.
  if (!url || (url.protocol !== "http:" && url.protocol !== "https:") || url.origin !== raw.replace(/\/$/, "") || url.hostname.includes("*")) {
    throw new ConfigError(`Cannot use HATCH_ALLOWED_ORIGINS entry "${raw}": expected an origin such as https://hatch.example.com`);
  }
  return url.origin;
}

/**
 * One trusted proxy: an IP address, compared with the peer's address. A range,
 * a host name or an address with a port would match no peer, so the proxy's
 * forwarded headers would be ignored without a word: refuse it at start instead.
 */
function proxyAddress(raw: string): string {
  if (isIP(raw) === 0) {
    throw new ConfigError(`Cannot use HATCH_TRUSTED_PROXIES entry "${raw}": expected an IP address such as 10.0.0.2 (ranges, host names and ports are not supported)`);
  }
  // Meant as "any", but no peer ever has the unspecified address: it would trust nobody, without a word.
  if (raw.split(/[:.]/).every((part) => /^0*$/.test(part))) {
    throw new ConfigError(`Cannot use HATCH_TRUSTED_PROXIES entry "${raw}": no connection ever comes from the unspecified address; list each proxy's own address`);
  }
  return raw;
}

/** Different characters a secret key must hold: a random or generated key has far more; 32 spaces or one letter repeated has one. */
const SECRET_KEY_MIN_DISTINCT = 8;

function secretKey(raw: string): string {
  // Never echo the value: it is the master key.
  if (raw.length < 32) throw new ConfigError("Cannot use HATCH_SECRET_KEY: it must be at least 32 characters");
  if (new Set(raw).size < SECRET_KEY_MIN_DISTINCT) {
    throw new ConfigError(`Cannot use HATCH_SECRET_KEY: it must hold at least ${SECRET_KEY_MIN_DISTINCT} different characters (generate one with \`openssl rand -base64 32\`)`);
  }
  return raw;
}

function detectContainer(): boolean {
  return existsSync("/.dockerenv") || existsSync("/run/.containerenv");
}

/**
 * The address a client on this machine uses to reach a server bound to `host`
 * on `port`: a wildcard bind is reached on loopback, and an IPv6 literal is
 * bracketed, with any zone's "%" escaped, as a URL needs.
 *
 * @example
 * localUrl("0.0.0.0", 3100) // "http://127.0.0.1:3100"
 * localUrl("::1", 3100) // "http://[::1]:3100"
 */
export function localUrl(host: string, port: number): string {
  const reachable = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host;
  // A link-local address's zone (fe80::1%eth0) is written %25eth0 inside a URL (RFC 6874).
  return `http://${reachable.includes(":") ? `[${reachable.replace("%", "%25")}]` : reachable}:${port}`;
}
