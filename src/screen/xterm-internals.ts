import type { Terminal } from "@xterm/headless";
import type { CellAttributes } from "./sgr.ts";

/**
 * State of one xterm.js buffer that its API does not expose. Every field may
 * be missing or another shape in another xterm.js version, so readers check
 * each one and fall back to what a fresh terminal has.
 */
export interface BufferInternals {
  scrollTop?: unknown;
  scrollBottom?: unknown;
  tabs?: unknown;
  savedX?: unknown;
  savedY?: unknown;
  ybase?: unknown;
  savedCurAttrData?: Partial<CellAttributes>;
  savedCharset?: unknown;
}

/** The parts of xterm.js's internal core a snapshot reads (xterm is pinned; the snapshot tests compare with a reference). */
export interface CoreInternals {
  buffers?: Partial<Record<"normal" | "alt", BufferInternals>>;
  coreService?: { isCursorHidden?: unknown; decPrivateModes?: { cursorStyle?: unknown; cursorBlink?: unknown } };
  coreMouseService?: { activeEncoding?: unknown };
  _inputHandler?: {
    _curAttrData?: Partial<CellAttributes>;
    selectCharset?: unknown;
    _windowTitle?: unknown;
    onColor?: unknown;
    _parser?: { precedingJoinState?: unknown };
  };
  _charsetService?: { glevel?: unknown; charset?: unknown; _charsets?: unknown };
  _oscLinkService?: { getLinkData?: unknown };
  _writeBuffer?: { _writeBuffer?: unknown; _callbacks?: unknown; _pendingData?: unknown; _bufferOffset?: unknown };
}

/** xterm.js's internal core of `terminal`, if it has one. */
export function coreOf(terminal: Terminal): CoreInternals | undefined {
  return (terminal as unknown as { _core?: CoreInternals })._core;
}

/**
 * Forget the output `terminal` was given and has not parsed yet. xterm.js's
 * dispose leaves its write queue running from a timer, so a terminal closed
 * behind a flood would go on parsing megabytes for nobody. Emptied, the queue
 * finds nothing at its next turn and stops, as after its last write.
 */
export function dropQueuedWrites(terminal: Terminal): void {
  const queue = coreOf(terminal)?._writeBuffer;
  if (!queue || !Array.isArray(queue._writeBuffer) || !Array.isArray(queue._callbacks)) return;
  queue._writeBuffer.length = 0;
  queue._callbacks.length = 0;
  queue._pendingData = 0;
  queue._bufferOffset = 0;
}

/** The internal state of one of `terminal`'s buffers, if it can be read. */
export function bufferInternals(terminal: Terminal, buffer: "normal" | "alt"): BufferInternals | undefined {
  return coreOf(terminal)?.buffers?.[buffer];
}

/**
 * The OSC 8 link id a cell (or an attribute record) carries, or 0. xterm.js
 * keeps it in the extended attributes, which are current only while the cell
 * says it has them: a reused cell object keeps the last ones it read.
 */
export function cellLinkId(cell: object): number {
  const internals = cell as { hasExtendedAttrs?: unknown; extended?: { urlId?: unknown } };
  if (typeof internals.hasExtendedAttrs !== "function" || !internals.hasExtendedAttrs()) return 0;
  const id = internals.extended?.urlId;
  return typeof id === "number" ? id : 0;
}

/** xterm.js's flag for SGR 4 in a cell's or attribute record's foreground word. */
const FG_UNDERLINE = 0x10000000;

/**
 * Whether SGR 4 (or 4:x) is in force. xterm.js's `isUnderline()` is also true
 * for every character of a hyperlink, which it draws underlined: an SGR 4
 * sent for those would outlast the link on the client.
 */
export function isUnderlinedBySgr(attributes: { isUnderline(): boolean | number }): boolean {
  const fg = (attributes as { fg?: unknown }).fg;
  if (typeof fg !== "number" || cellLinkId(attributes) === 0) return Boolean(attributes.isUnderline());
  return (fg & FG_UNDERLINE) !== 0;
}
