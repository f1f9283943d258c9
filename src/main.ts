import { fileURLToPath } from "node:url";
import { createApp, MAX_REQUEST_BODY_BYTES } from "./app.ts";
import { localUrl, type HatchConfig } from "./config.ts";
import { claimDataDir, openDataDir, type OpenDatabase, type ServerClaim } from "./db/index.ts";
import { DEFAULT_LOGIN_THROTTLE, FEATURES, hasFeature, LoginThrottle, openPlatform, platformRoutes, type Platform } from "./platform/index.ts";
import { cachedProbe, dotenvFiles } from "./confine/index.ts";
import { createTerminalPart, originPolicy, startCompanionServer, type CompanionServer, type TerminalPart } from "./terminal/index.ts";
import { fireRoutes, triggerRoutes, WebhookTokens } from "./fire/index.ts";
import { createRunnerSpawner, runRoutes, startWorkflowsPart, workflowRoutes, type WorkflowsPart } from "./workflows/index.ts";
import { defaultShellDeps, openProcessCgroups, selectShell } from "./pty/index.ts";
import { sourceRoutes } from "./sources/index.ts";

/** A running hatch: both servers, the platform, and one stop for all of it. */
export interface Hatch {
  platform: Platform;
  /** The raw SQLite handle, for operators' tooling and tests that inspect storage. */
  sqlite: OpenDatabase["sqlite"];
  terminal: TerminalPart;
  workflows: WorkflowsPart;
  /** Base URL of the web host, e.g. http://127.0.0.1:3100 */
  url: string;
  /** Base URL of the companion server (terminal WebSocket). */
  companionUrl: string;
  stop(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** The checkout or install this server runs from: its code runs as the service, so no tab may write it. */
const INSTALL_DIR = fileURLToPath(new URL("..", import.meta.url));

/**
 * The composition root: config -> database -> platform -> parts -> app -> listen.
 * Everything is built here and passed down; nothing below reads the environment.
 */
export async function startHatch(config: HatchConfig, overrides: HatchOverrides = {}): Promise<Hatch> {
  // Whatever was started undoes itself, in reverse, if a later step throws; a started hatch takes the stack over.
  await using started = new AsyncDisposableStack();
  // First of all: a second server on this data dir would kill the live runs and sessions of the first as leftovers.
  const claim = claimDataDir(config.dataDir);
  started.defer(() => claim.release());
  const database = openDataDir(config.dataDir);
  started.defer(() => database.close());
  for (const path of database.narrowed) console.warn(`hatch: ${path} was open to other users; narrowed it to its owner`);
  const now = overrides.now ?? Date.now;
  // Before any session or run: what a crashed server of this data dir left in its cgroups is killed here.
  const cgroups = await openProcessCgroups({ dataDir: config.dataDir });
  if (cgroups.unavailableBecause) console.warn(`hatch: no cgroup per session and run (${cgroups.unavailableBecause}); what they start is found by its environment only`);
  started.defer(() => cgroups.close());
  const platform = await openPlatform({ db: database.db, secretKey: config.secretKey, dataDir: config.dataDir, sessionTtlMs: config.sessionTtlHours * 3600_000, takeNewKey: true, now });
  // Known once the web host listens (before the companion server does): port 0 picks one.
  let webPort = config.port;
  // Never readable from a tab or a run: the database and key, and the .env files Bun loaded secrets from.
  const protectedPaths = [config.dataDir, ...dotenvFiles([INSTALL_DIR, process.cwd()])];
  // Cut only after the sessions ended (so below their disposal): each view is told why first (exit, close 4000).
  let companion: CompanionServer | undefined;
  started.defer(() => companion?.close());
  const terminal = createTerminalPart({
    platform,
    dataDir: config.dataDir,
    protectedPaths,
    installDir: INSTALL_DIR,
    inContainer: config.inContainer,
    osMounts: config.osMounts,
    shellOverride: config.shell,
    ptyBackend: config.ptyBackend,
    preferBwrap: config.confinement === "auto",
    probe: await confinementProbe(),
    cgroups,
    baseEnv: overrides.baseEnv ?? process.env,
    now,
    reaperIntervalMs: overrides.reaperIntervalMs,
    accessRecheckMs: overrides.accessRecheckMs,
    heartbeatMs: overrides.heartbeatMs,
    origins: originPolicy({ webPort: () => webPort, allowed: config.allowedOrigins }),
  });
  started.defer(() => terminal.dispose());
  await terminal.start();
  const baseEnv = overrides.baseEnv ?? process.env;
  const runnerSpawn = createRunnerSpawner({
    shell: () => selectShell("runner", defaultShellDeps({ ...baseEnv, HATCH_SHELL: config.shell ?? undefined })),
    planner: terminal.confinement.status().mode ? terminal.confinement.command : null,
    protectedPaths,
    unconfined: (projectId, userId) => {
      const role = platform.projects.roleOf(projectId, userId);
      return role !== null && hasFeature(platform.roles.featuresOf(projectId, role), FEATURES.execUnconfined);
    },
  });
  const workflows = await startWorkflowsPart({ platform, dataDir: config.dataDir, baseEnv, spawn: runnerSpawn, cgroups, now, ...overrides.workflows });
  started.use(workflows);
  const fireTokens = new WebhookTokens(workflows.triggers);
  const app = createApp({
    allowedOrigins: config.allowedOrigins,
    routes: [
      platformRoutes(platform, { trustedProxies: config.trustedProxies, loginThrottle: new LoginThrottle({ ...DEFAULT_LOGIN_THROTTLE, now }) }),
      terminal.routes,
      sourceRoutes({ platform, store: terminal.sources }),
      workflowRoutes({ platform, part: workflows }),
      runRoutes({ platform, part: workflows }),
      triggerRoutes({ platform, part: workflows, tokens: fireTokens }),
      fireRoutes({ part: workflows, tokens: fireTokens, trustedProxies: config.trustedProxies, ratePerMinute: overrides.fireRatePerMinute, now }),
    ],
  });
  // Elysia asks Bun for SO_REUSEPORT by default: a second hatch on a busy port would start and silently take half the requests.
  const web = await listenNamed("web host", config.host, config.port, "HATCH_PORT", () =>
    app.listen({ port: config.port, hostname: config.host, reusePort: false, maxRequestBodySize: MAX_REQUEST_BODY_BYTES }),
  );
  started.defer(async () => void (await web.stop(true)));
  webPort = web.server!.port!;
  const listening = await listenNamed("companion server", config.host, config.companionPort, "HATCH_COMPANION_PORT", () =>
    startCompanionServer({ port: config.companionPort, host: config.host, onUpgrade: terminal.onUpgrade }),
  );
  companion = listening;
  started.defer(() => listening.stopAccepting());
  const running = started.move();
  // The same order as a failed start: the listeners first, the claim last. Once: a second call (SIGTERM during a
  // Ctrl+C's stop) waits for the same stop rather than returning while sessions are still being ended.
  let stopping: Promise<void> | undefined;
  const stop = () => (stopping ??= running.disposeAsync());
  return {
    platform,
    terminal,
    workflows,
    sqlite: database.sqlite,
    url: localUrl(config.host, webPort),
    companionUrl: localUrl(config.host, listening.port),
    stop,
    [Symbol.asyncDispose]: stop,
  };
}

/**
 * Start a listener, naming the address and the settings behind it when that
 * fails: Bun's own errors ("EEXIST: file already exists, listen" for a name
 * that is not this host's) say neither.
 */
async function listenNamed<T>(what: string, host: string, port: number, portSetting: string, listen: () => T | Promise<T>): Promise<T> {
  try {
    return await listen();
  } catch (error) {
    throw new Error(`Cannot listen for the ${what} on ${host}:${port} (HATCH_HOST, ${portSetting}): ${(error as Error).message}`, { cause: error });
  }
}

/** Test and embedding hooks: a clock, the reaper's interval, workflow and fire-endpoint tuning. */
export interface HatchOverrides {
  now?: () => number;
  reaperIntervalMs?: number;
  /** How often an open terminal connection that sends nothing has its access re-checked. */
  accessRecheckMs?: number;
  /** How often an open terminal connection is pinged (one that answers nothing is dropped). */
  heartbeatMs?: number;
  /** Workflow worker pool size, retry waits and access-check interval (defaults in src/workflows/workflows-part.ts), and the openai runner's fetch. */
  workflows?: { poolSize?: number; retryDelaysMs?: readonly number[]; accessCheckMs?: number; fetch?: typeof fetch };
  /** Fires per source address per minute at the fire endpoint (default 60; 0 disables). */
  fireRatePerMinute?: number;
  /** The environment sessions start from (default: this process's). */
  baseEnv?: Record<string, string | undefined>;
}

/** The host's confinement facilities, probed once per process (a bwrap trial run costs ~10 ms). */
const confinementProbe = cachedProbe();

