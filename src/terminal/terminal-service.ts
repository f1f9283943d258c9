import { AGENT_PACKAGE, badRequest, can, conflict, FEATURES, forbidden, HatchError, requireFeature, type Platform, type ProjectCaller } from "../platform/index.ts";
import {
  buildSessionEnv,
  execInSession,
  sessionNotFound,
  type CommandSpawner,
  type ExecResult,
  type PtySession,
  type SessionInfo,
  type SessionManager,
  type SessionNamespace,
} from "../pty/index.ts";
import { CONTAINER_ROOT, isUriShaped, type DestinationResolver } from "./destination.ts";

/** Which session a request addresses: `agentId` and, for supervisors, `userId`. */
export interface SessionAddress {
  agentId?: string;
  userId?: string;
}

/** A create body, as validated by the route. */
export interface CreateSessionBody {
  sourceSlug?: string;
  id?: string;
  shell?: string;
  cwd?: string;
  env?: Record<string, string>;
  cols?: number;
  rows?: number;
}

/** Collaborators of the terminal service. */
export interface TerminalServiceOptions {
  platform: Platform;
  sessions: SessionManager;
  destinations: DestinationResolver;
  /** Runs exec commands in a session's sandbox (confined when the session is). */
  commands: CommandSpawner;
  /** The interactive shell (selection per the specification) and the shells a create may name. */
  shell(): string;
  allowedShells(): string[];
  /** The process environment sessions start from, before sanitising. */
  baseEnv: Record<string, string | undefined>;
}

/** Default terminal size when a create names none. */
const DEFAULT_SIZE = { cols: 80, rows: 24 };

/**
 * The terminal's rules over the session manager: who may address which
 * namespace, destination checks on create, exec. Routes and the WebSocket both
 * call it, so the agent axis is resolved the same way for both.
 */
export class TerminalService {
  constructor(private readonly options: TerminalServiceOptions) {}

  get sessions() {
    return this.options.sessions;
  }

  /**
   * Resolve the namespace a request addresses. An agent the target user cannot
   * use, or another user's namespace without terminal.supervise, answers
   * exactly like a missing session.
   */
  namespace(caller: ProjectCaller, address: SessionAddress, sessionId: string): { namespace: SessionNamespace; supervising: boolean } {
    const userId = address.userId ?? caller.user.id;
    const supervising = userId !== caller.user.id;
    if (supervising && !can(caller, FEATURES.terminalSupervise)) throw sessionNotFound(sessionId);
    let agentId: string | null = null;
    if (address.agentId !== undefined) {
      const agent = this.options.platform.agents.usable(caller.project.id, userId, address.agentId);
      if (!agent) throw sessionNotFound(sessionId);
      agentId = agent.id;
    }
    return { namespace: { userId, projectId: caller.project.id, agentId }, supervising };
  }

  /** A live session the caller may address, or 404. */
  session(caller: ProjectCaller, sessionId: string, address: SessionAddress): PtySession {
    const { namespace } = this.namespace(caller, address, sessionId);
    return this.options.sessions.get({ ...namespace, id: sessionId });
  }

  /** Create (or return the identical live) session after re-checking the destination. */
  async create(caller: ProjectCaller, body: CreateSessionBody, address: SessionAddress): Promise<{ session: SessionInfo; created: boolean }> {
    if (!body.sourceSlug) throw badRequest("source_required", "Cannot create a session without a source: pick a source tab (sourceSlug)");
    if (body.cwd !== undefined && isUriShaped(body.cwd)) {
      throw badRequest("cwd_not_os_path", `Cannot create a session in "${body.cwd}": cwd must be an OS path, not a URI`);
    }
    if (address.userId !== undefined && address.userId !== caller.user.id) {
      throw forbidden("own_namespace_only", "Sessions are created in your own namespace only");
    }
    const { namespace } = this.namespace(caller, address, body.id ?? "");
    const shell = this.#shell(body.shell);
    const destination = await this.options.destinations.resolve(caller, body.sourceSlug, body.cwd);
    const { session, created } = await this.options.sessions.create({
      namespace,
      id: body.id,
      cols: body.cols ?? DEFAULT_SIZE.cols,
      rows: body.rows ?? DEFAULT_SIZE.rows,
      readOnly: destination.readOnly,
      authority: destination.authority,
      sourceSlug: destination.sourceSlug,
      cwd: destination.cwd,
      launch: (scratch) => ({
        sourceSlug: destination.sourceSlug,
        cwd: destination.cwd,
        // Interactive (stdin is the PTY), not a login shell: the same rc files an editor's terminal reads.
        argv: [shell],
        // Choosing a shell's environment can drive it: a caller who may not type only describes their terminal.
        env: buildSessionEnv({ base: this.options.baseEnv, extra: body.env ?? {}, callerMayType: can(caller, FEATURES.coreExecute), scratch }).env,
        scratch,
        confine: destination.confine,
      }),
    });
    // An existing id is a reattach: the state table's check is the narrowing one, as on the WebSocket and the read route.
    if (!created && (await this.narrowed(caller, session))) throw forbidden("source_narrowed", "This session's source no longer allows you to open it");
    return { session: session.info(), created };
  }

  /** Sessions of the caller's namespace, or (supervisors, scope=project) of the whole project. */
  list(caller: ProjectCaller, scope: "own" | "project", address: SessionAddress): SessionInfo[] {
    if (scope === "project") {
      requireFeature(caller, FEATURES.terminalSupervise);
      return this.options.sessions.listProject(caller.project.id);
    }
    return this.options.sessions.list(this.namespace(caller, address, "").namespace);
  }

  /**
   * Whether the session's source narrowed for its owner since it was created
   * (disabled, root moved, or a permission it was created with taken away).
   * Judged by the owner's current policy whoever asks, so a supervisor cannot
   * start new work in a session its owner could no longer open.
   */
  async narrowed(caller: ProjectCaller, session: PtySession): Promise<boolean> {
    const { callers } = this.options.platform;
    const owner = session.key.userId === caller.user.id ? caller : callers.member(caller.project, session.key.userId);
    // An owner who lost the terminal itself (a role without terminal.read, or one the agent package is hidden from)
    // can open nothing, whatever rule still names them on the source.
    if (!owner || !callers.packageVisible(owner, AGENT_PACKAGE) || !can(owner, FEATURES.terminalRead)) return true;
    return !(await this.options.destinations.stillAllowed(owner, session.sourceSlug, session.authority));
  }

  /**
   * A session the caller may look at (the read route, a WebSocket view), with
   * whether they supervise it and whether its source narrowed. The owner cannot
   * look at a narrowed session any more; a supervisor still may, to see what it
   * shows before terminating it, but only to watch.
   */
  async viewable(caller: ProjectCaller, sessionId: string, address: SessionAddress): Promise<{ session: PtySession; supervising: boolean; narrowed: boolean }> {
    const { namespace, supervising } = this.namespace(caller, address, sessionId);
    const session = this.options.sessions.get({ ...namespace, id: sessionId });
    const narrowed = await this.narrowed(caller, session);
    if (narrowed && !supervising) throw forbidden("source_narrowed", "This session's source no longer allows you to open it");
    return { session, supervising, narrowed };
  }

  /**
   * Resize the PTY from the HTTP route. The rules of a view that may type: core.execute,
   * and a session whose source has not narrowed (its views are read-only then, resize included).
   * And the input lease's: while another user's view holds it, the size is theirs (409 `lease_held`).
   */
  async resize(caller: ProjectCaller, sessionId: string, address: SessionAddress, cols: number, rows: number): Promise<void> {
    const session = await this.#drivable(caller, sessionId, address);
    // Refused now, or (a resize held for the session's resize interval) dropped if the lease moves to another user meanwhile.
    if (!session.resize({ userId: caller.user.id }, cols, rows)) {
      if (session.destroyed) throw conflict("session_closed", "Cannot resize: the session has ended");
      throw conflict("lease_held", "Cannot resize: another user's view holds this session's input and size (the input lease); take control in a view first");
    }
  }

  /** Run a command in the session's sandbox. */
  async exec(caller: ProjectCaller, sessionId: string, address: SessionAddress, command: string, timeoutSeconds?: number): Promise<ExecResult> {
    if (command.includes("\0")) throw badRequest("invalid_command", "Cannot run the command: it holds a NUL byte, which no program can receive");
    const session = await this.#drivable(caller, sessionId, address);
    const screened = session.screenExec(command);
    if (screened.blocked) {
      this.options.platform.audit.write({
        action: "terminal.blocked",
        userId: caller.user.id,
        projectId: caller.project.id,
        agentId: session.key.agentId,
        target: session.id,
        detail: { reason: screened.reason, sessionUserId: session.key.userId, via: "exec" },
      });
      throw forbidden("command_blocked", `The command was not run: ${screened.reason}`);
    }
    const { settings } = this.options.platform;
    const { projectId } = session.key;
    const timeoutMs = (timeoutSeconds ?? settings.get("terminalExecTimeoutSeconds", projectId)) * 1000;
    const outputCapBytes = settings.get("terminalExecOutputCapBytes", projectId);
    const audit = (outcome: Record<string, unknown>) =>
      this.options.platform.audit.write({
        action: "terminal.exec",
        userId: caller.user.id,
        projectId: caller.project.id,
        agentId: session.key.agentId,
        target: session.id,
        detail: { sessionUserId: session.key.userId, ...outcome, commandBytes: new TextEncoder().encode(command).length },
      });
    let result: ExecResult;
    try {
      result = await session.runExec((signal) =>
        execInSession(session.launch, { command, timeoutMs, outputCapBytes, shell: session.launch.argv[0]!, signal }, this.options.commands),
      );
    } catch (error) {
      // It may have run for most of its timeout before its session ended: who ran it, where, is recorded whatever stopped it.
      audit({ error: error instanceof HatchError ? error.code : "exec_failed" });
      throw error;
    }
    audit({ exitCode: result.exitCode, timedOut: result.timedOut });
    return result;
  }

  /**
   * Whether a supervisor's keys may reach another user's session. A confined
   * session runs under its owner's policy, which `narrowed` holds it to. An
   * unconfined one (Container Root, a tab of an exec.unconfined holder) is a
   * bare process: driving it takes the feature that would give the supervisor
   * one of their own, or terminal.supervise alone would be an unconfined shell.
   */
  supervisorMayDrive(caller: ProjectCaller, session: PtySession): boolean {
    if (session.launch.confine !== null) return true;
    return can(caller, unconfinedFeatureOf(session));
  }

  /** A session the caller may drive (type into, resize, exec in), or the refusal. */
  async #drivable(caller: ProjectCaller, sessionId: string, address: SessionAddress): Promise<PtySession> {
    requireFeature(caller, FEATURES.coreExecute);
    const { namespace, supervising } = this.namespace(caller, address, sessionId);
    const session = this.options.sessions.get({ ...namespace, id: sessionId });
    if (supervising && !this.supervisorMayDrive(caller, session)) {
      const feature = unconfinedFeatureOf(session);
      throw forbidden("unconfined_session", `This session runs unconfined: driving it takes ${feature}, which you do not hold`);
    }
    // New work runs under the authority the session was created with: refuse it once that authority narrowed, as a reattach is.
    if (await this.narrowed(caller, session)) {
      throw forbidden("source_narrowed", "This session's source no longer allows its owner to run commands in it");
    }
    return session;
  }

  #shell(requested: string | undefined): string {
    if (requested === undefined) return this.options.shell();
    if (!this.options.allowedShells().includes(requested)) {
      throw badRequest("shell_not_allowed", `Cannot use shell "${requested}": it is not one of ${this.options.allowedShells().join(", ")}`);
    }
    return requested;
  }
}

/** The feature that gives a caller an unconfined session like this one. */
function unconfinedFeatureOf(session: PtySession): string {
  return session.sourceSlug === CONTAINER_ROOT ? FEATURES.terminalContainer : FEATURES.execUnconfined;
}
