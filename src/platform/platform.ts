import { rmSync } from "node:fs";
import type { Db } from "../db/index.ts";
import { AccessChanges } from "./access-changes.ts";
import { Agents } from "./agents.ts";
import { Audit } from "./audit.ts";
import { AuthSessions } from "./auth-sessions.ts";
import { CallerResolver } from "./caller.ts";
import { Projects } from "./projects.ts";
import { Roles } from "./roles.ts";
import { loadSecretKey } from "./secret-key.ts";
import { opensSealed, Secrets } from "./secrets.ts";
import { Settings } from "./settings.ts";
import { Users } from "./users.ts";

/** Every platform service, built once from the database and passed to the parts above. */
export interface Platform {
  db: Db;
  users: Users;
  sessions: AuthSessions;
  projects: Projects;
  roles: Roles;
  agents: Agents;
  settings: Settings;
  audit: Audit;
  secrets: Secrets;
  callers: CallerResolver;
  /** Changes to grants, memberships, sign-ins and sources, for whoever holds access open. */
  accessChanges: AccessChanges;
  startedAt: number;
}

/** Options for `createPlatform`. */
export interface PlatformOptions {
  db: Db;
  secretKey: CryptoKey;
  sessionTtlMs: number;
  now?: () => number;
}

/** Build the platform services over one database handle. */
export function createPlatform(options: PlatformOptions): Platform {
  const { db, now = Date.now } = options;
  const users = new Users(db);
  const accessChanges = new AccessChanges();
  const sessions = new AuthSessions(db, options.sessionTtlMs, now, accessChanges);
  const projects = new Projects(db, accessChanges);
  const roles = new Roles(db, accessChanges);
  const agents = new Agents(db);
  return {
    db,
    users,
    sessions,
    projects,
    roles,
    agents,
    settings: new Settings(db),
    audit: new Audit(db, now),
    secrets: new Secrets(db, options.secretKey),
    callers: new CallerResolver({ users, sessions, projects, roles, agents }),
    accessChanges,
    startedAt: now(),
  };
}

/** Options for `openPlatform`: where the key comes from instead of the key. */
export interface OpenPlatformOptions extends Omit<PlatformOptions, "secretKey"> {
  secretKey: string | null;
  dataDir: string;
  /**
   * Whether a key other than the one the data dir was set up with is taken
   * while no secret is stored: yes for the server, never for the CLI, which
   * runs beside a server that may seal with its own key any moment.
   */
  takeNewKey: boolean;
}

/**
 * Load the secret key and build the platform on it, refusing a key that is not
 * the one the data dir's secrets were sealed with. A key file this call
 * generated is then removed again: the data dir is left as it was, and the
 * operator restores the right one instead of finding a wrong one in its place.
 */
export async function openPlatform(options: OpenPlatformOptions): Promise<Platform> {
  const loaded = await loadSecretKey(options);
  const { createdFile } = loaded;
  // The contents of a generated secret.key, moved into HATCH_SECRET_KEY, name the file's key: used when that is the one the data dir's secrets were sealed with.
  const key = loaded.asKeyFile && !(await opensSealed(options.db, loaded.key)) && (await opensSealed(options.db, loaded.asKeyFile)) ? loaded.asKeyFile : loaded.key;
  const platform = createPlatform({ ...options, secretKey: key });
  try {
    await platform.secrets.checkKey({ takeNewKey: options.takeNewKey });
  } catch (error) {
    if (createdFile) rmSync(createdFile, { force: true });
    throw error;
  }
  return platform;
}
