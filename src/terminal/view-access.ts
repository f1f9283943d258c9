import { AGENT_PACKAGE, can, FEATURES, HatchError, sessionTokenOf, type Platform, type ProjectCaller } from "../platform/index.ts";
import type { PtySession } from "../pty/index.ts";
import type { TerminalService } from "./terminal-service.ts";
import type { TerminalUpgrade } from "./upgrade-request.ts";

/** Close codes of the terminal WebSocket (4000-4999 belong to the application). */
export const CLOSE = {
  /** The upgrade reached authentication and failed it (the specification's 4401). */
  unauthorized: 4401,
  /** Authenticated, but the terminal or this session's source is not allowed any more. */
  forbidden: 4403,
  /** No such session in the caller's scope. */
  notFound: 4404,
  /** The client broke the protocol. */
  badMessage: 4400,
  /** The session has as many views as it takes (MAX_VIEWS_PER_SESSION): close one, or try again later. */
  tooManyViews: 4429,
} as const;

/** What a terminal connection may do right now. */
export type ViewAccess =
  | { allowed: true; caller: ProjectCaller; session: PtySession; canWrite: boolean }
  | { allowed: false; code: number; reason: string };

/**
 * Decide what the connection behind `upgrade` may do, from the cookie and the
 * database as they are now: signed in, a member with terminal.read in a
 * project where the package is visible, the session addressable (agent axis,
 * supervise), and, for the session's owner, a source that still allows it.
 * A supervisor types into an unconfined session only with the feature that
 * would give them one of their own.
 * The same rules decide the connect and every later re-check, so a view never
 * keeps more than a fresh connect would get.
 */
export async function decideViewAccess(platform: Platform, terminal: TerminalService, upgrade: TerminalUpgrade): Promise<ViewAccess> {
  let caller: ProjectCaller;
  try {
    caller = await platform.callers.resolveInProject(sessionTokenOf(upgrade.cookie));
    if (!platform.callers.packageVisible(caller, AGENT_PACKAGE) || !can(caller, FEATURES.terminalRead)) throw new Error("terminal not visible");
  } catch {
    return { allowed: false, code: CLOSE.unauthorized, reason: "Unauthorized" };
  }
  try {
    // The same rule as the HTTP read route: a narrowed session is refused to its owner, and a supervisor only watches it.
    const { session, supervising, narrowed } = await terminal.viewable(caller, upgrade.sessionId, upgrade);
    const canWrite = can(caller, FEATURES.coreExecute) && !narrowed && (!supervising || terminal.supervisorMayDrive(caller, session));
    return { allowed: true, caller, session, canWrite };
  } catch (error) {
    // Only the narrowing refusal explains itself; the others must not tell a missing session from a hidden one.
    if (error instanceof HatchError) return { allowed: false, code: closeCodeFor(error), reason: error.code === "source_narrowed" ? error.message : "" };
    throw error;
  }
}

/** The close code for an error met while connecting. */
export function closeCodeFor(error: unknown): number {
  if (error instanceof HatchError) return error.status === 404 ? CLOSE.notFound : error.status === 401 ? CLOSE.unauthorized : CLOSE.forbidden;
  return 1011;
}
