import { join } from "node:path";
import { type ConfinementProbe, systemCodePaths } from "../confine/index.ts";
import type { Platform } from "../platform/index.ts";
import { ParserThread } from "../screen/index.ts";
import {
  bunPtyBackend,
  bunTerminalBackend,
  createCommandSpawner,
  createPtySpawner,
  defaultShellDeps,
  selectShell,
  SessionManager,
  type ProcessCgroups,
} from "../pty/index.ts";
import { SourceStore } from "../sources/index.ts";
import { createConfinement, type Confinement } from "./confinement.ts";
import { endSessionsOfFormerMembers } from "./former-members.ts";
import type { OriginPolicy } from "./origin-policy.ts";
import { RejectionLog } from "./rejection-log.ts";
import { terminalRoutes } from "./routes.ts";
import { SourceDestinations } from "./source-destinations.ts";
import { TerminalService } from "./terminal-service.ts";
import { terminalUpgradeHandler } from "./terminal-socket.ts";

/** What the terminal part needs from the composition root. */
export interface TerminalPartOptions {
  platform: Platform;
  dataDir: string;
  /** Never readable from a tab: the data dir, and the service's own secret files. */
  protectedPaths: string[];
  /** The service's own code (the checkout or install): readable from tabs, never writable. */
  installDir: string;
  inContainer: boolean;
  osMounts: string[];
  shellOverride: string | null;
  ptyBackend: "bun" | "bun-pty";
  preferBwrap: boolean;
  probe: ConfinementProbe;
  /** Where each session gets a cgroup (see `openProcessCgroups`). */
  cgroups: ProcessCgroups;
  /** The environment sessions start from (sanitised per spawn). */
  baseEnv: Record<string, string | undefined>;
  now(): number;
  /** How often the reaper sweeps: idle sessions, and sessions whose owner is no longer a member. */
  reaperIntervalMs?: number;
  /** How often an open terminal connection that sends nothing has its access re-checked. */
  accessRecheckMs?: number;
  /** How often an open terminal connection is pinged (one that answers nothing is dropped). */
  heartbeatMs?: number;
  /** Which pages may open a terminal WebSocket. */
  origins: OriginPolicy;
}

/** WebSocket input cap per connection (DESIGN.md): 64 KiB burst, 32 KiB/s refill. */
const INPUT_BUCKET = { capacity: 64 * 1024, refillPerSecond: 32 * 1024 };
/** The reaper's default sweep interval: well under a minute, the smallest Idle Shutdown; a departed member's sessions end within it too. */
const REAPER_INTERVAL_MS = 15_000;

/** The assembled terminal: routes, the WebSocket upgrade handler, the session manager, the reaper. */
export interface TerminalPart {
  routes: ReturnType<typeof terminalRoutes>;
  onUpgrade: ReturnType<typeof terminalUpgradeHandler>;
  sessions: SessionManager;
  sources: SourceStore;
  confinement: Confinement;
  /** Remove orphaned scratch dirs and start the reaper. */
  start(): Promise<void>;
  dispose(): Promise<void>;
}

/**
 * One round of the reaper: sessions whose owner left their project end first
 * (a departed member's shell must not wait for idle shutdown), then idle ones.
 * Each step's failure is logged on its own, so one cannot stop the other.
 */
async function reap(platform: Platform, sessions: SessionManager): Promise<void> {
  await endSessionsOfFormerMembers(platform, sessions).catch((error: unknown) => console.error("hatch: ending the sessions of former members failed", error));
  await sessions.sweep().catch((error: unknown) => console.error("hatch: the reaper's sweep failed", error));
}

/** Build the terminal part over the platform. */
export function createTerminalPart(options: TerminalPartOptions): TerminalPart {
  const { platform } = options;
  // hatch's own code and the system's: the planner refuses a tab that would write them, and the listing says so first.
  const neverWritable = [options.installDir, ...systemCodePaths()];
  const confinement = createConfinement({ probe: options.probe, preferBwrap: options.preferBwrap, neverWritable });
  const backend = options.ptyBackend === "bun-pty" ? bunPtyBackend : bunTerminalBackend;
  const parser = new ParserThread();
  const sessions = new SessionManager({
    scratchBase: join(options.dataDir, "scratch"),
    parser,
    spawner: createPtySpawner(backend, confinement.status().mode ? confinement.pty : null),
    cgroups: options.cgroups,
    limits: {
      maxSessions: (projectId) => platform.settings.get("terminalMaxSessions", projectId),
      scrollbackLines: (projectId) => platform.settings.get("terminalScrollbackLines", projectId),
      idleShutdownMs: (projectId) => platform.settings.get("terminalIdleShutdownMinutes", projectId) * 60_000,
    },
    protectedPaths: options.protectedPaths,
    inputBucket: INPUT_BUCKET,
    now: options.now,
    onBlocked: (session, view, reason) =>
      platform.audit.write({
        action: "terminal.blocked",
        userId: view.userId,
        projectId: session.key.projectId,
        agentId: session.key.agentId,
        target: session.id,
        detail: { reason, sessionUserId: session.key.userId },
      }),
    // An end nobody asked for is on the record too (a terminate and a former member's end are audited where asked).
    onEnded: (session, end) => {
      try {
        platform.audit.write({
          action: "terminal.terminate",
          userId: session.key.userId,
          projectId: session.key.projectId,
          agentId: session.key.agentId,
          target: session.id,
          detail: { sessionUserId: session.key.userId, reason: end.cause, ...(end.cause === "exited" ? { exitCode: end.code } : {}) },
        });
      } catch (error) {
        // A program can exit as the server shuts down, after the database closed: losing that line beats crashing.
        console.error("hatch: could not write a terminal audit entry", error);
      }
    },
  });
  const store = new SourceStore(platform.db, platform.accessChanges);
  const destinations = new SourceDestinations({
    store,
    audit: platform.audit,
    osMounts: options.osMounts,
    protectedPaths: options.protectedPaths,
    neverWritable,
    inContainer: options.inContainer,
    confinement: () => confinement.status(),
    now: options.now,
  });
  const shellDeps = defaultShellDeps({ ...options.baseEnv, HATCH_SHELL: options.shellOverride ?? undefined });
  const terminal = new TerminalService({
    platform,
    sessions,
    destinations,
    commands: createCommandSpawner(confinement.status().mode ? confinement.command : null),
    shell: () => selectShell("interactive", shellDeps),
    allowedShells: () => [...new Set([selectShell("interactive", shellDeps), selectShell("runner", shellDeps)])],
    baseEnv: options.baseEnv,
  });
  let reaper: ReturnType<typeof setInterval> | null = null;
  return {
    routes: terminalRoutes({ platform, terminal, sources: destinations, confinement: () => confinement.status().mode ?? "unavailable" }),
    onUpgrade: terminalUpgradeHandler({
      platform,
      terminal,
      origins: options.origins,
      rejections: new RejectionLog((line) => console.warn(line)),
      accessRecheckMs: options.accessRecheckMs,
      heartbeatMs: options.heartbeatMs,
    }),
    sessions,
    sources: store,
    confinement,
    start: async () => {
      await sessions.sweepOrphans();
      reaper = setInterval(() => void reap(platform, sessions), options.reaperIntervalMs ?? REAPER_INTERVAL_MS);
      reaper.unref?.();
    },
    dispose: async () => {
      if (reaper) clearInterval(reaper);
      await sessions.dispose();
      parser.dispose();
    },
  };
}
