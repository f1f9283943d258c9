import type { Platform, ProjectCaller } from "../platform/index.ts";
import type { PtySession } from "../pty/index.ts";

/**
 * What a person did with a session's screen: a view came or went, lost
 * access or writing, or a supervisor read it or got its keyboard (`lease`).
 */
export type SessionEvent = "attach" | "detach" | "access_lost" | "demoted" | "read" | "lease";

/**
 * Write a `terminal.session` entry: who (the caller) did what to whose session.
 * It never throws: a detach can fire while the server shuts down, after the
 * database closed, and losing that line beats crashing.
 */
export function auditSessionEvent(platform: Platform, caller: ProjectCaller, session: PtySession, event: SessionEvent, detail: Record<string, unknown> = {}): void {
  try {
    platform.audit.write({
      action: "terminal.session",
      userId: caller.user.id,
      projectId: caller.project.id,
      agentId: session.key.agentId,
      target: session.id,
      detail: { event, sessionUserId: session.key.userId, ...detail },
    });
  } catch (error) {
    console.error("hatch: could not write a terminal audit entry", error);
  }
}
