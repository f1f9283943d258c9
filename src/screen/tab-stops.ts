import type { Terminal } from "@xterm/headless";
import { bufferInternals } from "./xterm-internals.ts";

/** TBC 3: clear every tab stop of the active buffer. */
const CLEAR_TAB_STOPS = "\x1b[3g";

/** HTS: set a tab stop at the cursor's column. */
const SET_TAB_STOP = "\x1bH";

/** xterm.js's default distance between tab stops (the `tabStopWidth` option). */
const DEFAULT_TAB_STOP_WIDTH = 8;

/**
 * The sequences that give a client's buffer, whose tab stops are a fresh
 * terminal's (every `tabStopWidth` columns), the buffer's: programs that
 * lay out columns with tabs set their own stops (HTS, TBC) once. Moves the
 * client's cursor, so it comes before the cursor is placed; "" when the stops
 * are the defaults or cannot be read (xterm.js keeps them only internally).
 *
 * @example
 * ```ts
 * data += tabStopSequence(terminal, "normal") + moveCursor(...);
 * ```
 */
export function tabStopSequence(terminal: Terminal, buffer: "normal" | "alt"): string {
  const tabs = bufferInternals(terminal, buffer)?.tabs;
  if (typeof tabs !== "object" || tabs === null) return "";
  const width = terminal.options.tabStopWidth ?? DEFAULT_TAB_STOP_WIDTH;
  const stops: number[] = [];
  let custom = false;
  for (let x = 0; x < terminal.cols; x++) {
    const stop = (tabs as Record<number, unknown>)[x] === true;
    if (stop) stops.push(x);
    if (stop !== (x % width === 0)) custom = true;
  }
  // Only the columns on the screen: the stops are set by moving to them.
  return custom ? CLEAR_TAB_STOPS + stops.map((x) => `\x1b[1;${x + 1}H${SET_TAB_STOP}`).join("") : "";
}
