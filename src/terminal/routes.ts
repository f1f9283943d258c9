import { Elysia } from "elysia";
import { FEATURES, requireFeature, SESSION_COOKIE, type Platform } from "../platform/index.ts";

/** The package that owns the terminal (and chat and calendar): its routes live under /api/packages/agent. */
export const AGENT_PACKAGE = "agent";

/** Collaborators of the terminal routes. */
export interface TerminalRoutesOptions {
  platform: Platform;
  sessionCount(projectId: string): number;
}

/** The terminal HTTP routes under /api/packages/agent/terminal. */
export function terminalRoutes(options: TerminalRoutesOptions) {
  const { platform } = options;
  return new Elysia({ name: "terminal-routes", prefix: `/api/packages/${AGENT_PACKAGE}/terminal` })
    .resolve(async ({ cookie }) => {
      const caller = await platform.callers.resolveInProject(cookie[SESSION_COOKIE]?.value as string | undefined);
      // A hidden package answers exactly like an unknown route, before any feature check.
      platform.callers.requirePackage(caller, AGENT_PACKAGE);
      requireFeature(caller, FEATURES.terminalRead);
      return { caller };
    })
    .get("/health", ({ caller }) => ({
      status: "ok",
      sessions: options.sessionCount(caller.project.id),
      uptimeSeconds: Math.floor((Date.now() - platform.startedAt) / 1000),
    }));
}
