/**
 * The per-session headless terminal mirror: snapshot or missed-output replay
 * for reconnecting clients, alternate-screen tracking, and plain-text reads.
 *
 * @module
 */
export { MAX_LINES_BEFORE, type CursorLine } from "./buffer-text.ts";
export { ScreenMirror, type ScreenMirrorOptions, type ScreenSnapshot } from "./screen-mirror.ts";
export { MAX_WORKER_STARTS_PER_MINUTE, ParserThread, type ParsedTerminal, type ParserThreadOptions } from "./parser-thread.ts";
export { NO_REFLOW_OPTIONS, resizeWithoutReflow, type ResizableTerminal } from "./mirror-terminal.ts";
