import { TypeCompiler } from "@sinclair/typebox/compiler";
import { Type } from "@sinclair/typebox";
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { WebSocketServer, type WebSocket } from "ws";
import { HatchError, touches, type Platform } from "../platform/index.ts";
import { INPUT_TOO_FAST, MAX_COLS, MAX_ROWS, MIN_COLS, MIN_ROWS, type PtySession, type View } from "../pty/index.ts";
import type { OriginPolicy } from "./origin-policy.ts";
import type { RejectionLog } from "./rejection-log.ts";
import type { TerminalService } from "./terminal-service.ts";
import { parseTerminalUpgrade, type TerminalUpgrade } from "./upgrade-request.ts";
import { AccessGate } from "./access-gate.ts";
import { keepAlive } from "./keep-alive.ts";
import { auditSessionEvent } from "./session-audit.ts";
import { SupervisorLeases } from "./supervisor-leases.ts";
import { CLOSE, closeCodeFor, decideViewAccess } from "./view-access.ts";

/** Largest frame a client may send; ws closes the connection with 1009 past it. */
export const MAX_FRAME_BYTES = 2 << 20;

/** How often an open connection's access is decided again when it sends nothing (input is checked as it arrives). */
export const ACCESS_RECHECK_MS = 10_000;

const ClientMessage = TypeCompiler.Compile(
  Type.Union([
    // No length here: a frame is at most MAX_FRAME_BYTES, and an input over the session's burst gets a notice, not a close.
    Type.Object({ type: Type.Literal("input"), data: Type.String() }),
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
  /** Which pages may open a connection (checked before anything else is looked up). */
  origins: OriginPolicy;
  /** How often an idle connection's access is re-checked; ACCESS_RECHECK_MS by default. */
  accessRecheckMs?: number;
  /** How often a connection is pinged, to drop one whose peer vanished; HEARTBEAT_MS by default. */
  heartbeatMs?: number;
}

/**
 * The `upgrade` handler of the companion server for /ws/terminal/<id>. Its
 * auth is closed: the session cookie resolves the user, membership is verified,
 * grants decide whether the connection may type, and the agent axis is
 * resolved exactly as on the HTTP routes before any supervise comparison.
 */
export function terminalUpgradeHandler(options: TerminalSocketOptions) {
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_FRAME_BYTES });
  return function onUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    const upgrade = parseTerminalUpgrade(request.headers, request.url);
    if (typeof upgrade === "string") {
      options.rejections.record(upgrade);
      socket.destroy();
      return;
    }
    const origin = request.headers.origin;
    if (!options.origins(typeof origin === "string" ? origin : undefined, request.headers.host!)) {
      // Refused before any lookup, so it tells the page nothing about sessions; the status tells an operator why.
      options.rejections.record("foreign_origin");
      socket.end("HTTP/1.1 403 Forbidden\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
      return;
    }
    wss.handleUpgrade(request, socket, head, (ws) => {
      // A frame ws cannot accept (bad UTF-8, over the size limit) closes the connection (1007, 1009) and is
      // emitted as an error: unhandled, it would print a stack per frame, before authentication.
      ws.on("error", (error: Error & { code?: string }) => options.rejections.record(frameRejection(error)));
      connect(options, ws, upgrade).catch((error) => {
        if (!(error instanceof HatchError)) console.error("hatch: terminal connection failed", error);
        ws.close(closeCodeFor(error), "");
      });
    });
  };
}

async function connect(options: TerminalSocketOptions, ws: WebSocket, upgrade: TerminalUpgrade): Promise<void> {
  const { platform, terminal } = options;
  const access = await decideViewAccess(platform, terminal, upgrade);
  if (!access.allowed) {
    ws.close(access.code, access.reason);
    return;
  }
  const { caller, session } = access;
  if (ws.readyState !== ws.OPEN) return;
  // Terminated while its access was being decided: answered like a session that was never there, not left open and mute.
  if (session.destroyed) return void ws.close(CLOSE.notFound, "");
  const full = session.views.fullFor(caller.user.id);
  if (full) return void ws.close(CLOSE.tooManyViews, full);
  const leases = new SupervisorLeases(platform, caller, session);
  const view = session.attach(
    {
      output: (bytes) => ws.send(bytes, { binary: true }),
      control: (message) => {
        leases.told(message);
        ws.send(JSON.stringify(message));
      },
      close: (code, reason) => ws.close(code, reason),
      buffered: () => ws.bufferedAmount,
    },
    { userId: caller.user.id, canWrite: access.canWrite, since: upgrade.since, instance: upgrade.instance },
  );
  auditSessionEvent(platform, caller, session, "attach");
  leases.attached();
  // Access is decided again before input, resize and take control, and every accessRecheckMs for a view that only watches:
  // a user logged out, removed, demoted or narrowed loses the view as a fresh connect would be refused.
  // Set once access is lost: the close is under way, and a decision made meanwhile (a change notified, a key) must not audit it twice.
  let lost = false;
  const gate = new AccessGate(async () => {
    if (lost || view.closed || session.destroyed) return false;
    const now = await decideViewAccess(platform, terminal, upgrade).catch((error: unknown) => {
      console.error("hatch: could not re-check a terminal connection's access", error);
      return { allowed: false as const, code: 1011, reason: "" };
    });
    if (!now.allowed || now.session !== session) {
      if (lost) return false;
      lost = true;
      auditSessionEvent(platform, caller, session, "access_lost");
      // Detached now, not when the close handshake ends: a client that stopped reading never answers it, and
      // would hold the lease (and a PTY paused for it) for ws's 30-second close timeout.
      session.detach(view);
      ws.close(now.allowed ? CLOSE.notFound : now.code, now.allowed ? "" : now.reason);
      return false;
    }
    if (view.canWrite && !now.canWrite) {
      session.views.demote(view);
      auditSessionEvent(platform, caller, session, "demoted");
    }
    return true;
  });
  // A change made in this process (a revoke, a logout, a rule) is decided on at once; the timer catches the CLI's.
  const stopHearing = platform.accessChanges.subscribe((scope) => {
    if (touches(scope, { userId: caller.user.id, projectId: caller.project.id })) gate.recheck();
  });
  const recheck = setInterval(() => gate.run(() => {}), options.accessRecheckMs ?? ACCESS_RECHECK_MS);
  recheck.unref?.();
  // A view whose peer vanished without closing would hold the session from the reaper for ever.
  const stopPinging = keepAlive(ws, options.heartbeatMs);
  const flood = { told: false };
  ws.on("message", (data, isBinary) => onMessage(session, view, ws, gate, flood, leases, isBinary ? null : data.toString()));
  ws.on("close", () => {
    stopHearing();
    clearInterval(recheck);
    stopPinging();
    session.detach(view);
    auditSessionEvent(platform, caller, session, "detach");
  });
}

/**
 * One client message. `flood.told` is set once the view was told input of its
 * was dropped at the gate, so a flood gets one notice, not one per message.
 */
function onMessage(
  session: PtySession,
  view: View,
  ws: WebSocket,
  gate: AccessGate,
  flood: { told: boolean },
  leases: SupervisorLeases,
  text: string | null,
): void {
  let message: unknown;
  try {
    message = text === null ? null : JSON.parse(text);
  } catch {
    message = null;
  }
  if (!ClientMessage.Check(message)) {
    // Detached now, as on a lost access: ws goes on delivering frames until the client answers the close
    // (up to 30 s), and this view must not type, hold the lease or keep the session watched meanwhile.
    session.detach(view);
    ws.close(CLOSE.badMessage, "Expected a JSON message: input, resize, takeControl or ack");
    return;
  }
  // The gate refuses only while a flood waits on a slow access decision. Lost input is said once, as the input
  // bucket says it; a lost resize or take control is not (a client repeating them while reading nothing queues nothing).
  switch (message.type) {
    case "input": {
      const taken = gate.run(() => session.input(view, message.data), message.data.length);
      if (!taken && !flood.told) session.views.control(view, { type: "notice", message: INPUT_TOO_FAST });
      flood.told = !taken;
      return;
    }
    case "resize":
      return void gate.run(() => session.resize(view, message.cols, message.rows));
    case "takeControl":
      return void gate.run(() => leases.takingControl(() => session.views.takeControl(view)));
    case "ack":
      // An ack carries no authority: it only lets output flow to this view.
      return session.views.ack(view, message.bytes);
  }
}

/** The reason logged for a frame ws refused: its fixed error code (never the peer's bytes). */
function frameRejection(error: { code?: string }): string {
  return error.code && /^WS_ERR_[A-Z0-9_]+$/.test(error.code) ? `bad_frame ${error.code}` : "bad_frame";
}
