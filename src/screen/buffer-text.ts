import type { IBuffer } from "@xterm/headless";

/**
 * The last `max` logical lines of a buffer as plain text, oldest first.
 * Wrapped rows are joined into the line they continue, each line loses its
 * trailing whitespace, and blank lines at the end (the empty rows under the
 * cursor) are left out. Rows are read at most `cols` wide, so text hidden by
 * a shrink without reflow stays hidden.
 *
 * @example
 * ```ts
 * lastLines(terminal.buffer.normal, 50, terminal.cols); // ["$ ls", "a  b", "$"]
 * ```
 */
export function lastLines(buffer: IBuffer, max: number, cols: number): string[] {
  const lines: string[] = [];
  let end = buffer.length;
  while (end > 0 && lines.length < max) {
    const start = logicalLineStart(buffer, end - 1);
    const text = joinRows(buffer, start, end, cols);
    if (lines.length > 0 || text !== "") lines.push(text);
    end = start;
  }
  return lines.reverse();
}

/**
 * Plain text of the logical line that holds `row` (the rows it wraps across
 * joined), without trailing whitespace.
 *
 * @example
 * ```ts
 * const buffer = terminal.buffer.active;
 * logicalLineAt(buffer, buffer.baseY + buffer.cursorY, terminal.cols); // "$ git push --force"
 * ```
 */
export function logicalLineAt(buffer: IBuffer, row: number, cols: number): string {
  const start = logicalLineStart(buffer, row);
  let end = row + 1;
  while (end < buffer.length && buffer.getLine(end)?.isWrapped) end++;
  return joinRows(buffer, start, end, cols);
}

/** The cursor's logical line, and what may be its start on the rows above. */
export interface CursorLine {
  /** The logical line (wrapped rows joined), without trailing whitespace. */
  line: string;
  /**
   * The logical lines just above it that reach the right edge though the line
   * is not marked as wrapping from them, nearest last: a shell that redraws
   * its line at the wrap (a Backspace there, then typing) moves to the next
   * row itself, and the terminal then sees no wrap. Empty when the row above
   * stops short.
   */
  before: string[];
}

/** Lines above the cursor line that `CursorLine.before` takes at most; a redrawn command line rarely spans more. */
export const MAX_LINES_BEFORE = 4;

/**
 * The logical line holding `row`, and the edge-reaching lines above it.
 *
 * @example
 * ```ts
 * // A 30-column screen after bash redrew "$ echo 1234…" at the wrap:
 * cursorLineAt(buffer, 1, 30); // { line: "xyzABC", before: ["$ echo 12345678901234567890123"] }
 * ```
 */
export function cursorLineAt(buffer: IBuffer, row: number, cols: number): CursorLine {
  const before: string[] = [];
  let start = logicalLineStart(buffer, row);
  while (start > 0 && before.length < MAX_LINES_BEFORE && reachesEdge(buffer, start - 1, cols)) {
    const above = logicalLineStart(buffer, start - 1);
    before.unshift(joinRows(buffer, above, start, cols, false));
    start = above;
  }
  return { line: logicalLineAt(buffer, row, cols), before };
}

/** Whether a row's last cell holds something written (a wide character's right half included), not a blank never printed. */
function reachesEdge(buffer: IBuffer, row: number, cols: number): boolean {
  const cell = buffer.getLine(row)?.getCell(cols - 1);
  return cell !== undefined && (cell.getChars() !== "" || cell.getWidth() === 0);
}

function logicalLineStart(buffer: IBuffer, row: number): number {
  let start = row;
  while (start > 0 && buffer.getLine(start)?.isWrapped) start--;
  return start;
}

function joinRows(buffer: IBuffer, start: number, end: number, cols: number, trim = true): string {
  let text = "";
  for (let row = start; row < end; row++) {
    // Only the last row is trimmed: spaces before a wrap point are real text.
    text += buffer.getLine(row)?.translateToString(trim && row === end - 1, 0, cols) ?? "";
  }
  return trim ? text.trimEnd() : text;
}
