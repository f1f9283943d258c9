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

function logicalLineStart(buffer: IBuffer, row: number): number {
  let start = row;
  while (start > 0 && buffer.getLine(start)?.isWrapped) start--;
  return start;
}

function joinRows(buffer: IBuffer, start: number, end: number, cols: number): string {
  let text = "";
  for (let row = start; row < end; row++) {
    // Only the last row is trimmed: spaces before a wrap point are real text.
    text += buffer.getLine(row)?.translateToString(row === end - 1, 0, cols) ?? "";
  }
  return text.trimEnd();
}
