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
  _inputHandler?: { _curAttrData?: Partial<CellAttributes>; selectCharset?: unknown };
  _charsetService?: { glevel?: unknown; charset?: unknown; _charsets?: unknown };
}

/** xterm.js's internal core of `terminal`, if it has one. */
export function coreOf(terminal: Terminal): CoreInternals | undefined {
  return (terminal as unknown as { _core?: CoreInternals })._core;
}

/** The internal state of one of `terminal`'s buffers, if it can be read. */
export function bufferInternals(terminal: Terminal, buffer: "normal" | "alt"): BufferInternals | undefined {
  return coreOf(terminal)?.buffers?.[buffer];
}
