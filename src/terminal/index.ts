/** The terminal edge: HTTP routes and the companion WebSocket server over pty/ and screen/. */
export { startCompanionServer, type CompanionServer } from "./companion-server.ts";
export { AGENT_PACKAGE, terminalRoutes } from "./routes.ts";
