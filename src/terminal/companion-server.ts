import { createServer, type IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";

/** The companion HTTP server: it exists only to accept terminal WebSocket upgrades. */
export interface CompanionServer {
  port: number;
  /** Take no new connections; those open stay, so their sessions can still say goodbye on them. */
  stopAccepting(): void;
  /** Take no new connections and cut every open one. Idempotent. */
  close(): Promise<void>;
}

/** Options for `startCompanionServer`. */
export interface CompanionServerOptions {
  port: number;
  host: string;
  /** Handles every upgrade; when absent, every upgrade is refused by destroying the socket. */
  onUpgrade?: (request: IncomingMessage, socket: Duplex, head: Buffer) => void;
}

/**
 * Start the companion server. It is built on node:http rather than Bun.serve
 * because only the `upgrade` event can destroy a socket before any handshake
 * (DESIGN.md), which is how malformed upgrades are refused without a trace.
 */
export function startCompanionServer(options: CompanionServerOptions): Promise<CompanionServer> {
  const server = createServer((_request, response) => {
    response.writeHead(404, { "content-type": "application/json" });
    response.end(JSON.stringify({ error: { code: "not_found", message: "Not found" } }));
  });
  const sockets = new Set<Duplex>();
  server.on("upgrade", (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    if (options.onUpgrade) options.onUpgrade(request, socket, head);
    else socket.destroy();
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : options.port;
      let closed: Promise<void> | undefined;
      const stopAccepting = () => (closed ??= new Promise<void>((done) => server.close(() => done())));
      resolve({
        port,
        stopAccepting: () => void stopAccepting(),
        close: () => {
          const stopped = stopAccepting();
          for (const socket of sockets) socket.destroy();
          server.closeAllConnections?.();
          return stopped;
        },
      });
    });
  });
}
