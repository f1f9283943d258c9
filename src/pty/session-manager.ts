import { basename } from "node:path";
import { badRequest, conflict, notFound, randomToken, tooMany, unavailable } from "../platform/index.ts";
import type { ParserThread } from "../screen/index.ts";
import type { LaunchSpec, PtySpawner } from "./launch-spec.ts";
import type { CgroupLeaf, ProcessCgroups } from "./process-cgroups.ts";
import { PtySession, type SessionInfo } from "./pty-session.ts";
import { createScratchDir, sweepOrphanScratch } from "./scratch-dir.ts";
import { keyString, namespaceString, SESSION_ID, type SessionKey, type SessionNamespace } from "./session-key.ts";
import type { View } from "./session-views.ts";

/** Settings the manager reads at each create and sweep. */
/** The limits in force for a project's sessions, read at each use (create, sweep). */
export interface SessionLimits {
  maxSessions(projectId: string): number;
  scrollbackLines(projectId: string): number;
  idleShutdownMs(projectId: string): number;
}

/** Collaborators and options of the session manager. */
export interface SessionManagerOptions {
  /** Base dir of every scratch dir (created 0700). */
  scratchBase: string;
  spawner: PtySpawner;
  /** Where each session gets a cgroup its program enters, so its end kills everything it started. */
  cgroups: ProcessCgroups;
  /** Parses every session's screen mirror off the main thread. */
  parser: ParserThread;
  limits: SessionLimits;
  protectedPaths: string[];
  inputBucket: { capacity: number; refillPerSecond: number };
  now(): number;
  /** How long before an idle reap the countdown notice goes out. */
  countdownMs?: number;
  onBlocked?(session: PtySession, view: View, reason: string): void;
  /** A session ended that nobody asked to end: reaped when idle, or its program exited (with its exit code). */
  onEnded?(session: PtySession, end: { cause: "idle" } | { cause: "exited"; code: number }): void;
}

/** A create request, after the terminal edge resolved the source to a launch. */
export interface CreateSessionRequest {
  namespace: SessionNamespace;
  id?: string;
  cols: number;
  rows: number;
  readOnly: boolean;
  /** Fingerprint of the authority the session is created under (reattach compares it). */
  authority: string;
  /** The source tab it opens; an existing id must have been opened on the same one. */
  sourceSlug: string;
  /** Working directory, derived from the source on the server; an existing id must match it. */
  cwd: string;
  /** Builds the launch once the scratch dir exists (its env points TMPDIR at it). */
  launch(scratch: string): LaunchSpec;
}

/** One minute of warning before an idle session is reaped. */
export const DEFAULT_COUNTDOWN_MS = 60_000;

/**
 * Owns every live session of the container plane, keyed by (user, project,
 * agent, id). Creates are deduplicated per key before anything is spawned.
 */
export class SessionManager {
  readonly #sessions = new Map<string, PtySession>();
  readonly #creating = new Map<string, Promise<PtySession>>();
  /** Destroys under way: a session leaves the map as its destroy begins, and shutdown still waits for its end. */
  readonly #ending = new Set<Promise<void>>();
  /** Set by dispose(): from then on nothing new is spawned, and a spawn already under way is ended. */
  #closing = false;

  constructor(private readonly options: SessionManagerOptions) {}

  /** Remove scratch dirs an unclean exit left behind. Call once at start. */
  async sweepOrphans(): Promise<string[]> {
    const live = new Set([...this.#sessions.values()].map((s) => s.scratchPath));
    return (await sweepOrphanScratch(this.options.scratchBase, { isLive: (path) => live.has(path) })).removed;
  }

  /**
   * Create a session, or return the live one with the same key and working
   * directory. The same key with another working directory is a 409: a session
   * is never rebound.
   */
  async create(request: CreateSessionRequest): Promise<{ session: PtySession; created: boolean }> {
    if (this.#closing) throw shuttingDown();
    const id = request.id ?? randomToken(9);
    if (!SESSION_ID.test(id)) throw badRequest("invalid_session_id", `Cannot create session "${id}": ids are 1-64 characters of A-Z a-z 0-9 _ -`);
    const key: SessionKey = { ...request.namespace, id };
    const k = keyString(key);
    const pending = this.#creating.get(k);
    const existing = this.#sessions.get(k) ?? (pending ? await pending : undefined);
    if (existing) return { session: this.#sameDestination(existing, request), created: false };

    const live = this.#countInNamespace(request.namespace);
    const limit = this.options.limits.maxSessions(key.projectId);
    if (live >= limit) throw tooMany("session_limit", `Cannot create session "${id}": ${live} sessions are live, the limit is ${limit}`);
    const creating = this.#spawn(key, request).then(async (session) => {
      if (!this.#closing) return session;
      // dispose() began while this one spawned and could not see it: it must not outlive the service.
      await session.destroy("The service is shutting down");
      throw shuttingDown();
    });
    this.#creating.set(k, creating);
    try {
      const session = await creating;
      this.#sessions.set(k, session);
      return { session, created: true };
    } finally {
      this.#creating.delete(k);
    }
  }

  /** A live session by key, or 404. */
  get(key: SessionKey): PtySession {
    const session = this.#sessions.get(keyString(key));
    if (!session || session.destroyed) throw sessionNotFound(key.id);
    return session;
  }

  /** A live session by key, or null. */
  find(key: SessionKey): PtySession | null {
    const session = this.#sessions.get(keyString(key));
    return session && !session.destroyed ? session : null;
  }

  /** Live sessions of one namespace. */
  list(namespace: SessionNamespace): SessionInfo[] {
    return this.#inNamespace(namespace).map((s) => s.info());
  }

  /** Every live session of a project (supervision). */
  listProject(projectId: string): SessionInfo[] {
    return [...this.#sessions.values()].filter((s) => s.key.projectId === projectId && !s.destroyed).map((s) => s.info());
  }

  /** Every live session of every project (the terminal's periodic membership check). */
  listAll(): SessionInfo[] {
    return [...this.#sessions.values()].filter((s) => !s.destroyed).map((s) => s.info());
  }

  /** Live sessions of a project (of one user in it when given), for the health route. */
  count(projectId?: string, userId?: string): number {
    return [...this.#sessions.values()].filter(
      (s) => !s.destroyed && (projectId === undefined || s.key.projectId === projectId) && (userId === undefined || s.key.userId === userId),
    ).length;
  }

  /** Destroy a session (DELETE or Terminate): kills the process group and removes scratch. */
  async destroy(key: SessionKey, reason = "The session was terminated"): Promise<void> {
    const session = this.get(key);
    this.#sessions.delete(keyString(key));
    await this.#tracked(session.destroy(reason));
  }

  /** An end under way, which a stop waits for though its session is no longer in the map. */
  async #tracked(ending: Promise<void>): Promise<void> {
    this.#ending.add(ending);
    try {
      await ending;
    } finally {
      this.#ending.delete(ending);
    }
  }

  /**
   * The reaper: a session idle past Idle Shutdown with no view attached is
   * destroyed; a watched session never is. Views of a session nearing the
   * limit get a countdown on the control channel, withdrawn once it no longer
   * is. Settings are read at each sweep, once per project (each project's Idle
   * Shutdown applies to its sessions).
   */
  async sweep(): Promise<string[]> {
    const now = this.options.now();
    const reaped: string[] = [];
    const idleLimits = new Map<string, number>();
    for (const session of [...this.#sessions.values()]) {
      // Destroys are awaited one by one: a session terminated or ended meanwhile is no longer ours to reap.
      if (session.destroyed || this.#sessions.get(keyString(session.key)) !== session) continue;
      const { projectId } = session.key;
      const idleMs = idleLimits.get(projectId) ?? this.options.limits.idleShutdownMs(projectId);
      idleLimits.set(projectId, idleMs);
      const countdownMs = Math.min(this.options.countdownMs ?? DEFAULT_COUNTDOWN_MS, idleMs);
      // A running exec is use: the session is not idle while one runs.
      const idle = session.execsRunning > 0 ? 0 : now - session.lastActivityAt;
      // The countdown stops at the limit: past it a session is reaped, or it is watched and never will be.
      if (idle >= idleMs && session.views.size === 0) {
        reaped.push(session.id);
        await this.destroy(session.key, "The session was closed after being idle");
        this.options.onEnded?.(session, { cause: "idle" });
      } else if (idle >= idleMs - countdownMs && idle < idleMs) {
        session.countdown(Math.max(0, Math.ceil((idleMs - idle) / 1000)));
      } else {
        // Used again, or watched past the limit: the reap the views were counting down to is not coming.
        session.countdown(null);
      }
    }
    return reaped;
  }

  /** Destroy every session and refuse new ones (shutdown); resolves once creates still spawning are ended too. */
  async dispose(): Promise<void> {
    this.#closing = true;
    // Forgotten first: a program killed by the shutdown did not end by itself (see onExit).
    const all = [...this.#sessions.values()];
    this.#sessions.clear();
    await Promise.all(all.map((s) => s.destroy("The service is shutting down")));
    // A terminate or reap already under way is no longer in the map, but its program may not have ended yet.
    await Promise.allSettled([...this.#ending]);
    // Each create still spawning ends its own session on seeing #closing: wait until it has.
    await Promise.allSettled([...this.#creating.values()]);
  }

  #sameDestination(session: PtySession, request: CreateSessionRequest): PtySession {
    // Two sources can share a root with different rules: the session of one is never handed out as the other's.
    if (request.sourceSlug !== session.sourceSlug) {
      throw conflict("session_exists", `Cannot create session "${session.id}": it exists on another source`);
    }
    if (request.cwd !== session.cwd) {
      throw conflict("session_exists", `Cannot create session "${session.id}": it exists with another working directory`);
    }
    return session;
  }

  #inNamespace(namespace: SessionNamespace): PtySession[] {
    const ns = namespaceString(namespace);
    return [...this.#sessions.values()].filter((s) => !s.destroyed && namespaceString(s.key) === ns);
  }

  /** Live sessions plus creates still spawning: both count against the limit. */
  #countInNamespace(namespace: SessionNamespace): number {
    const prefix = namespaceString(namespace) + "\0";
    return this.#inNamespace(namespace).length + [...this.#creating.keys()].filter((k) => k.startsWith(prefix)).length;
  }

  async #spawn(key: SessionKey, request: CreateSessionRequest): Promise<PtySession> {
    const scratch = await createScratchDir(this.options.scratchBase);
    // Named as its scratch dir is: unique in the data dir, and a leftover of either names the other's session.
    let cgroup: CgroupLeaf | undefined;
    try {
      cgroup = this.options.cgroups.leaf(basename(scratch.path));
      const launch: LaunchSpec = { ...request.launch(scratch.path), cgroup };
      const session: PtySession = new PtySession({
        key,
        sourceSlug: launch.sourceSlug,
        cwd: launch.cwd,
        readOnly: request.readOnly,
        authority: request.authority,
        cols: request.cols,
        rows: request.rows,
        scrollback: this.options.limits.scrollbackLines(key.projectId),
        parser: this.options.parser,
        scratch,
        launch,
        spawn: (onData) => this.options.spawner(launch, { cols: request.cols, rows: request.rows }, onData),
        protectedPaths: this.options.protectedPaths,
        inputBucket: this.options.inputBucket,
        now: this.options.now,
        onBlocked: (view, reason) => this.options.onBlocked?.(session, view, reason),
        onExit: (s, code) => {
          // The session ends itself when its program exits: a stop must wait for that end too (its sweep, its scratch).
          if (s.ending) void this.#tracked(s.ending).catch(() => undefined);
          if (this.#sessions.get(keyString(s.key)) === s) {
            this.#sessions.delete(keyString(s.key));
            this.options.onEnded?.(s, { cause: "exited", code });
          }
        },
      });
      return session;
    } catch (error) {
      await cgroup?.end();
      await scratch.remove();
      throw error;
    }
  }
}

function shuttingDown() {
  return unavailable("shutting_down", "Cannot create a session: the service is shutting down");
}

/** The one answer for a session that is missing or not the caller's. */
export function sessionNotFound(id: string) {
  return notFound("session_not_found", id ? `Cannot find session "${id}"` : "Cannot find that session namespace");
}
