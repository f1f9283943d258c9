import type { WebSocket } from "ws";

/**
 * How often an open terminal connection is pinged. A browser answers pings by
 * itself, so a connection that answers none is one whose peer is gone (a
 * laptop put to sleep, a network dropped) without closing: TCP alone holds it
 * open for ever, and its view would keep an idle session from being reaped.
 */
export const HEARTBEAT_MS = 30_000;

/**
 * Ping `ws` every `intervalMs` and terminate it (its `close` event follows)
 * when, since the last ping, it answered nothing and nothing it was sent left
 * the queue. Returns the stop function.
 */
export function keepAlive(ws: WebSocket, intervalMs: number = HEARTBEAT_MS): () => void {
  let heard = true;
  let queued = ws.bufferedAmount;
  const hear = () => {
    heard = true;
  };
  ws.on("pong", hear);
  ws.on("message", hear);
  const timer = setInterval(() => {
    // A ping waits behind the output queued before it: a client still reading a big snapshot on a slow link is there.
    const draining = ws.bufferedAmount < queued;
    queued = ws.bufferedAmount;
    if (!heard && !draining) return void ws.terminate();
    heard = false;
    ws.ping();
  }, intervalMs);
  timer.unref?.();
  return () => {
    clearInterval(timer);
    ws.off("pong", hear);
    ws.off("message", hear);
  };
}
