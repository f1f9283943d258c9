import { Elysia, t } from "elysia";
import { AGENT_PACKAGE, can, FEATURES, requireFeature, parseJsonRequest, requireJsonBody, requireObjectBody, sessionTokenOf, type Platform } from "../platform/index.ts";
import { MAX_COLS, MAX_ROWS, MIN_COLS, MIN_ROWS } from "../pty/index.ts";
import { auditSessionEvent } from "./session-audit.ts";
import type { SourceEntry } from "./source-destinations.ts";
import type { TerminalService } from "./terminal-service.ts";

/** Collaborators of the terminal routes. */
export interface TerminalRoutesOptions {
  platform: Platform;
  terminal: TerminalService;
  sources: { list(caller: import("../platform/index.ts").ProjectCaller): SourceEntry[] };
  /** Which confinement is in force for source tabs (`landlock`, `landlock+bwrap`, or an unavailability reason). */
  confinement(): string;
}

const Size = { cols: t.Integer({ minimum: MIN_COLS, maximum: MAX_COLS }), rows: t.Integer({ minimum: MIN_ROWS, maximum: MAX_ROWS }) };
const Address = t.Object({ agentId: t.Optional(t.String({ maxLength: 100 })), userId: t.Optional(t.String({ maxLength: 100 })) });
const Id = t.Object({ id: t.String({ maxLength: 64 }) });
/** Longest exec command accepted; a script belongs in a file. */
const MAX_EXEC_COMMAND = 16 * 1024;
/** Most scrollback lines one read returns. */
const MAX_READ_LINES = 5000;

/** The terminal HTTP routes under /api/packages/agent/terminal. */
export function terminalRoutes(options: TerminalRoutesOptions) {
  const { platform, terminal } = options;
  return new Elysia({ name: "terminal-routes", prefix: `/api/packages/${AGENT_PACKAGE}/terminal` })
    // derive, not resolve: Elysia runs derive before it validates the query and body, so a caller who may not
    // use the terminal gets 401, or 404 like an unknown route, whatever they send; never a 400 that shows the route.
    .derive(async ({ request }) => {
      const caller = await platform.callers.resolveInProject(sessionTokenOf(request.headers.get("cookie")));
      // A hidden package answers exactly like an unknown route, before any feature check.
      platform.callers.requirePackage(caller, AGENT_PACKAGE);
      requireFeature(caller, FEATURES.terminalRead);
      return { caller };
    })
    .onParse(parseJsonRequest)
    .onTransform(requireJsonBody)
    .get("/health", ({ caller }) => ({
      status: "ok",
      // Users never see each other's sessions, not even how many there are: only a supervisor counts the project's.
      sessions: terminal.sessions.count(caller.project.id, can(caller, FEATURES.terminalSupervise) ? undefined : caller.user.id),
      uptimeSeconds: Math.floor((Date.now() - platform.startedAt) / 1000),
      confinement: options.confinement(),
    }))
    .get("/sources", ({ caller }) => ({ sources: options.sources.list(caller), confinement: options.confinement() }))
    .get("/sessions", ({ caller, query }) => ({ sessions: terminal.list(caller, query.scope ?? "own", query) }), {
      query: t.Object({
        scope: t.Optional(t.Union([t.Literal("own"), t.Literal("project")])),
        agentId: t.Optional(t.String({ maxLength: 100 })),
        userId: t.Optional(t.String({ maxLength: 100 })),
      }),
    })
    .post(
      "/sessions",
      async ({ caller, body, query, set }) => {
        const { session, created } = await terminal.create(caller, body, { agentId: body.agentId ?? query.agentId, userId: query.userId });
        set.status = created ? 201 : 200;
        return session;
      },
      {
        query: Address,
        transform: requireObjectBody,
        body: t.Object({
          sourceSlug: t.Optional(t.String({ maxLength: 100 })),
          id: t.Optional(t.String({ maxLength: 64 })),
          agentId: t.Optional(t.String({ maxLength: 100 })),
          shell: t.Optional(t.String({ maxLength: 256 })),
          cwd: t.Optional(t.String({ maxLength: 4096 })),
          env: t.Optional(t.Record(t.String({ pattern: "^[A-Za-z_][A-Za-z0-9_]{0,127}$" }), t.String({ maxLength: 8192 }), { maxProperties: 64 })),
          cols: t.Optional(Size.cols),
          rows: t.Optional(Size.rows),
        }),
      },
    )
    .delete(
      "/sessions/:id",
      async ({ caller, params, query }) => {
        const session = terminal.session(caller, params.id, query);
        await terminal.sessions.destroy(session.key);
        platform.audit.write({
          action: "terminal.terminate",
          userId: caller.user.id,
          projectId: caller.project.id,
          agentId: session.key.agentId,
          target: session.id,
          detail: { sessionUserId: session.key.userId },
        });
        return { ok: true };
      },
      { params: Id, query: Address },
    )
    .post(
      "/sessions/:id/resize",
      async ({ caller, params, query, body }) => {
        await terminal.resize(caller, params.id, query, body.cols, body.rows);
        return { cols: body.cols, rows: body.rows };
      },
      { params: Id, query: Address, body: t.Object(Size) },
    )
    .get(
      "/sessions/:id/read",
      async ({ caller, params, query }) => {
        // Reading the screen is viewing it: refused to the owner of a narrowed session, as a WebSocket connect is.
        const { session, supervising } = await terminal.viewable(caller, params.id, query);
        const lines = await session.mirror.readLines(query.lines ?? 200);
        // Looking at someone else's screen is audited however it is done, as a supervisor's view is (terminal.session attach).
        if (supervising) auditSessionEvent(platform, caller, session, "read", { lines: lines.length });
        return { lines, fullScreen: session.mirror.fullScreen };
      },
      { params: Id, query: t.Object({ ...Address.properties, lines: t.Optional(t.Numeric({ minimum: 1, maximum: MAX_READ_LINES, multipleOf: 1, title: "lines" })) }) },
    )
    .post(
      "/sessions/:id/exec",
      ({ caller, params, query, body }) => terminal.exec(caller, params.id, query, body.command, body.timeoutSeconds),
      {
        params: Id,
        query: Address,
        body: t.Object({ command: t.String({ minLength: 1, maxLength: MAX_EXEC_COMMAND }), timeoutSeconds: t.Optional(t.Integer({ minimum: 1, maximum: 3600 })) }),
      },
    );
}
