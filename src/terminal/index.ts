/** The terminal edge: HTTP routes and the companion WebSocket server over pty/, screen/ and sources/. */
export { startCompanionServer, type CompanionServer } from "./companion-server.ts";
export { createConfinement, type Confinement } from "./confinement.ts";
export { CONTAINER_ROOT } from "./destination.ts";
export { originPolicy, type OriginPolicy } from "./origin-policy.ts";
export { createTerminalPart, type TerminalPart, type TerminalPartOptions } from "./terminal-part.ts";
export { CLOSE } from "./view-access.ts";
