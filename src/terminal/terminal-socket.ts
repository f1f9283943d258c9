import { TypeCompiler } from "@sinclair/typebox/compiler";
import { Type } from "@sinclair/typebox";
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { WebSocketServer, type WebSocket } from "ws";
import { AGENT_PACKAGE, can, FEATURES, HatchError, SESSION_COOKIE, type Platform, type ProjectCaller } from "../platform/index.ts";
import { MAX_COLS, MAX_ROWS, MIN_COLS, MIN_ROWS, type PtySession, type View } from "../pty/index.ts";
import type { RejectionLog } from "./rejection-log.ts";
import type { TerminalService } from "./terminal-service.ts";
import { cookieValue, parseTerminalUpgrade, type TerminalUpgrade } from "./upgrade-request.ts";

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
} as const;

const ClientMessage = TypeCompiler.Compile(
  Type.Union([
    Type.Object({ type: Type.Literal("input"), data: Type.String({ maxLength: 1 << 20 }) }),
    Type.Object({ type: Type.Literal("resize"), cols: Type.Integer({ minimum: MIN_COLS, maximum: MAX_COLS }), rows: Type.Integer({ minimum: MIN_ROWS, maximum: MAX_ROWS }) }),
    Type.Object({ type: Type.Literal("takeControl") }),
    Type.Object({ type: Type.Literal("ack"), bytes: Type.Integer({ minimum: 0, maximum: 1 << 30 }) }),
  ]),
);

/** Collaborators of the terminal WebSocket. */
export interface TerminalSocketOptions {
  platform: Platform;
  terminal: TerminalService;
  rejections: RejectionLog;
}

/**
 * The `upgrade` handler of the companion server for /ws/terminal/<id>. Its
 * auth is closed: the session cookie resolves the user, membership is verified,
 * grants decide whether the connection may type, and the agent axis is
 * resolved exactly as on the HTTP routes before any supervise comparison.
 */
export function terminalUpgradeHandler(options: TerminalSocketOptions) {
  const wss = new WebSocketServer({ noServer: true, maxPayload: 2 << 20 });
  return function onUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    const upgrade = parseTerminalUpgrade(request.headers, request.url);
    if (typeof upgrade === "string") {
      options.rejections.record(upgrade);
      socket.destroy();
      return;
    }
    wss.handleUpgrade(request, socket, head, (ws) => {
      connect(options, ws, upgrade).catch((error) => {
        if (!(error instanceof HatchError)) console.error("hatch: terminal connection failed", error);
        ws.close(closeCodeFor(error), "");
      });
    });
  };
}

async function connect(options: TerminalSocketOptions, ws: WebSocket, upgrade: TerminalUpgrade): Promise<void> {
  const { platform, terminal } = options;
  let caller: ProjectCaller;
  try {
    caller = await platform.callers.resolveInProject(cookieValue(upgrade.cookie, SESSION_COOKIE));
    if (!platform.callers.packageVisible(caller, AGENT_PACKAGE) || !can(caller, FEATURES.terminalRead)) throw new Error("terminal not visible");
  } catch {
    ws.close(CLOSE.unauthorized, "Unauthorized");
    return;
  }
  const { namespace, supervising } = terminal.namespace(caller, upgrade, upgrade.sessionId);
  const session = terminal.sessions.get({ ...namespace, id: upgrade.sessionId });
  const narrowed = await terminal.narrowed(caller, session);
  // The owner cannot reopen a narrowed session. A supervisor still may, to see what it shows before terminating it, but only to watch.
  if (narrowed && !supervising) {
    ws.close(CLOSE.forbidden, "This session's source no longer allows you to open it");
    return;
  }
  if (ws.readyState !== ws.OPEN || session.destroyed) return;
  const view = session.attach(
    {
      output: (bytes) => ws.send(bytes, { binary: true }),
      control: (message) => ws.send(JSON.stringify(message)),
      close: (code, reason) => ws.close(code, reason),
    },
    { userId: caller.user.id, canWrite: can(caller, FEATURES.coreExecute) && !narrowed, since: upgrade.since },
  );
  audit(platform, caller, session, "attach");
  ws.on("message", (data, isBinary) => onMessage(session, view, ws, isBinary ? null : data.toString()));
  ws.on("close", () => {
    session.detach(view);
    audit(platform, caller, session, "detach");
  });
}

function onMessage(session: PtySession, view: View, ws: WebSocket, text: string | null): void {
  let message: unknown;
  try {
    message = text === null ? null : JSON.parse(text);
  } catch {
    message = null;
  }
  if (!ClientMessage.Check(message)) {
    ws.close(CLOSE.badMessage, "Expected a JSON message: input, resize, takeControl or ack");
    return;
  }
  switch (message.type) {
    case "input":
      return session.input(view, message.data);
    case "resize":
      session.resize(view, message.cols, message.rows);
      return;
    case "takeControl":
      session.views.takeControl(view);
      return;
    case "ack":
      return session.views.ack(view, message.bytes);
  }
}

function audit(platform: Platform, caller: ProjectCaller, session: PtySession, event: "attach" | "detach"): void {
  // A detach can fire while the server shuts down, after the database closed; losing that line beats crashing.
  tryWrite(() => platform.audit.write({
    action: "terminal.session",
    userId: caller.user.id,
    projectId: caller.project.id,
    agentId: session.key.agentId,
    target: session.id,
    detail: { event, sessionUserId: session.key.userId },
  }));
}

function tryWrite(write: () => void): void {
  try {
    write();
  } catch (error) {
    console.error("hatch: could not write a terminal audit entry", error);
  }
}

function closeCodeFor(error: unknown): number {
  if (error instanceof HatchError) return error.status === 404 ? CLOSE.notFound : error.status === 401 ? CLOSE.unauthorized : CLOSE.forbidden;
  return 1011;
}
