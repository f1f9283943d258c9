import type { Terminal } from "@xterm/headless";
import { coreOf } from "./xterm-internals.ts";

/**
 * Keep one session's output from throwing out of xterm.js's parser. xterm.js
 * parses from a timer, so an exception there is uncaught and ends the parser
 * thread, and with it the history of every session it hosts; and any program
 * can print the sequences that throw in xterm.js 6.0 (`CSI 2147483647 b`,
 * repeat the last character, runs out of memory; `CSI 1 J` at the last cell
 * of a screen that never scrolled reads a row that is not there).
 *
 * The erase is done as xterm.js means it (there it equals erasing the whole
 * screen), so the mirror stays exact. Anything else that throws loses the
 * rest of the chunk it was in: the parser goes back to its ground state and
 * `onError` hears of it, once per terminal.
 *
 * Nor may one session's output keep the thread busy: xterm.js scrolls,
 * inserts and deletes lines (SU, SD, IL, DL) and steps through tab stops
 * (CHT, CBT) once per count, and `CSI 2147483647 S` would hold every
 * session's mirror for some ten minutes. Past the screen's height (its width
 * for tabs) a count changes nothing more, so such a count is cut to it.
 *
 * @example
 * ```ts
 * guardParsing(terminal, (error) => console.error("hatch: a session's output could not be parsed:", error));
 * ```
 */
export function guardParsing(terminal: Terminal, onError: (error: unknown) => void): void {
  const handler = coreOf(terminal)?._inputHandler as unknown as ParsingInternals | undefined;
  if (typeof handler?.parse !== "function") return;
  for (const prefix of [undefined, "?"]) {
    terminal.parser.registerCsiHandler({ prefix, final: "J" }, (params) => eraseAboveAtLastCell(terminal, handler, params, prefix === "?"));
  }
  for (const { final, run, bound } of COUNTED_SEQUENCES) {
    terminal.parser.registerCsiHandler({ final }, (params) => countCut(handler, run, params, bound(terminal)));
  }
  const parse = handler.parse.bind(handler);
  let reported = false;
  handler.parse = (data, promiseResult) => {
    try {
      return parse(data, promiseResult);
    } catch (error) {
      handler._parser?.reset?.();
      if (!reported) onError(error);
      reported = true;
      return undefined;
    }
  };
}

/** The parts of xterm.js's input handler the guard uses. */
interface ParsingInternals {
  parse(data: string | Uint8Array, promiseResult?: boolean): void | Promise<boolean>;
  eraseInDisplay?(params: { params: number[] }, respectProtect?: boolean): boolean;
  scrollUp?: CountedAction;
  scrollDown?: CountedAction;
  insertLines?: CountedAction;
  deleteLines?: CountedAction;
  cursorForwardTab?: CountedAction;
  cursorBackwardTab?: CountedAction;
  _parser?: { reset?(): void };
}

type CountedAction = (params: { params: number[] }) => boolean;

/** The sequences xterm.js repeats once per count, and the count past which a repeat changes nothing. */
const COUNTED_SEQUENCES: { final: string; run: keyof ParsingInternals; bound: (terminal: Terminal) => number }[] = [
  // A region has at most `rows` lines: that many scrolls, inserts or deletes leave it blank, and more leave it so.
  { final: "S", run: "scrollUp", bound: (terminal) => terminal.rows },
  { final: "T", run: "scrollDown", bound: (terminal) => terminal.rows },
  { final: "L", run: "insertLines", bound: (terminal) => terminal.rows },
  { final: "M", run: "deleteLines", bound: (terminal) => terminal.rows },
  // Each step reaches the next stop or the row's edge: `cols` steps reach the edge from anywhere.
  { final: "I", run: "cursorForwardTab", bound: (terminal) => terminal.cols },
  { final: "Z", run: "cursorBackwardTab", bound: (terminal) => terminal.cols },
];

/** Run the sequence with its count cut to `bound`; false (xterm.js runs it as sent) when the count is within it. */
function countCut(handler: ParsingInternals, run: keyof ParsingInternals, params: (number | number[])[], bound: number): boolean {
  const count = params[0];
  const action = handler[run] as CountedAction | undefined;
  if (typeof count !== "number" || count <= bound || typeof action !== "function") return false;
  return action.call(handler, { params: [bound] });
}

/**
 * ED 1 (erase above, the cursor's cell included) with the cursor in the last
 * column of the last row of a buffer holding no more rows than the screen:
 * xterm.js would clear the wrap flag of the row below, which is not there,
 * and throw. Erasing the whole screen (ED 2) is the same change. Any other
 * ED is left to xterm.js (false).
 */
function eraseAboveAtLastCell(terminal: Terminal, handler: ParsingInternals, params: (number | number[])[], selective: boolean): boolean {
  const buffer = terminal.buffer.active;
  const atLastCell = buffer.cursorX + 1 >= terminal.cols && buffer.cursorY + 1 >= buffer.length;
  if (params[0] !== 1 || !atLastCell || typeof handler.eraseInDisplay !== "function") return false;
  return handler.eraseInDisplay({ params: [2] }, selective);
}
