import { SerializeAddon } from "@xterm/addon-serialize";
import type { IBuffer, IBufferCell, IBufferLine, Terminal } from "@xterm/headless";
import { withLinks, type LinkOpener } from "./hyperlinks.ts";
import { withProtection } from "./protection.ts";
import { withUnderlineStyles } from "./underline-styles.ts";

/** Which rows to serialize, and what the receiving terminal looks like when they arrive. */
export interface SerializeRowsOptions {
  /** The buffer the rows come from. */
  buffer: IBuffer;
  /** Index of the first row in `buffer`. */
  first: number;
  /** Number of rows; at least 1. */
  count: number;
  /** Terminal width: longer rows (left by a shrink without reflow) are clipped to it. */
  cols: number;
  /**
   * How many rows the receiver writes before every further line break
   * scrolls. The addon assumes a fresh screen until then, and after it that
   * each scrolled-in line is filled with the current background (xterm's
   * back-colour erase). 0 means the receiver scrolls from the first break.
   */
  screenRows: number;
  /** Reads the cells' hyperlinks (OSC 8), which the addon does not carry. */
  links: LinkOpener;
  /**
   * The terminal whose current SGR attributes and modes should end the output.
   * Without it the output ends in default attributes with no modes, so pieces
   * can be cached and joined.
   */
  source?: Terminal;
}

/**
 * Serializes a range of rows with `@xterm/addon-serialize`, by handing the
 * addon a terminal-shaped view of just those rows.
 *
 * The view is what lets the mirror cache and clip: the addon's own range
 * mode clips nothing (after a shrink without reflow, rows are longer than the
 * terminal is wide), assumes a fresh screen at the start of every range, and
 * ends with the live terminal's SGR state. Here, row 0 of the view is a
 * missing line, so the addon's initial "cursor style row" reads nothing and
 * its background stays the default; the real rows follow from index 1.
 *
 * Known limit of addon-serialize 0.14: when a cell stops being dim but is
 * bold, it emits SGR 22, which ends bold as well, so that text arrives not
 * bold. It is cosmetic and left to upstream.
 *
 * @example
 * ```ts
 * const text = serializeRows({ buffer: terminal.buffer.normal, first: 0, count: 3, cols: 80, screenRows: 24, links: linkOpener(terminal) });
 * ```
 */
export function serializeRows(options: SerializeRowsOptions): string {
  const { buffer, first, cols, source } = options;
  // After some resizes xterm.js keeps fewer rows than the screen shows; the
  // missing ones are blank, as on the receiver.
  const count = Math.min(options.count, buffer.length - first);
  if (count < 1) return "";
  const scratch = buffer.getNullCell();
  // The addon asks for the same rows several times (each row, the next one,
  // the row holding the current style), so each is prepared once.
  const prepared: (IBufferLine | undefined)[] = [];
  const prepare = (y: number): IBufferLine | undefined => {
    const line = buffer.getLine(first + y - 1);
    if (!line) return undefined;
    const clipped = clipLine(line, cols, scratch);
    const wrapped = line.isWrapped && y > 1 && !wrapsCleanly(buffer.getLine(first + y - 2), line, cols, scratch) ? unwrapped(clipped) : clipped;
    return withUnderlineStyles(withProtection(withLinks(wrapped, options.links, scratch), scratch), scratch);
  };
  const lastLine = buffer.getLine(first + count - 1);
  const view = {
    type: "normal" as const,
    // One row more than exists: the addon trims trailing rows it thinks are
    // blank when the range fits the screen, and it drops rows that are blank
    // but coloured (an app painting its whole screen blue). A longer buffer
    // switches that trimming off; the extra row is never read.
    length: count + 2,
    baseY: 0,
    viewportY: 0,
    cursorX: 0,
    cursorY: 0,
    getLine: (y: number): IBufferLine | undefined => {
      if (y < 1 || y > count) return undefined;
      return (prepared[y] ??= prepare(y));
    },
    getNullCell: () => buffer.getNullCell(),
  };
  const target = {
    // The addon reads the last row up to this column (other rows to their
    // length), so it must not reach past a clipped last row.
    cols: lastLine ? visibleLength(lastLine, cols, scratch) : cols,
    rows: options.screenRows,
    modes: source?.modes,
    buffer: { normal: view, alternate: view, active: view },
    // The addon reads the current SGR state from this internal field; for a
    // cacheable piece, default attributes make it end with a plain reset.
    _core: source
      ? (source as unknown as { _core: unknown })._core
      : { _inputHandler: { _curAttrData: buffer.getNullCell() } },
  };
  const addon = new SerializeAddon();
  addon.activate(target as unknown as Parameters<SerializeAddon["activate"]>[0]);
  return addon.serialize({
    range: { start: 1, end: count },
    excludeAltBuffer: true,
    excludeModes: source === undefined,
  });
}

/**
 * How many cells of the row a client can be given: at most `cols`, and not a
 * wide character whose second half is cut off by the edge (left by a shrink,
 * or by a later widening that truncated longer rows).
 */
function visibleLength(line: IBufferLine, cols: number, scratch: IBufferCell): number {
  const length = Math.min(line.length, cols);
  return line.getCell(length - 1, scratch)?.getWidth() === 2 ? length - 1 : length;
}

/** The row clipped to its visible length. */
function clipLine(line: IBufferLine, cols: number, scratch: IBufferCell): IBufferLine {
  const length = visibleLength(line, cols, scratch);
  if (length === line.length) return line;
  return {
    isWrapped: line.isWrapped,
    length,
    getCell: (x, cell) => (x < length ? line.getCell(x, cell) : undefined),
    translateToString: (trimRight, start, end) => line.translateToString(trimRight, start, Math.min(end ?? length, length)),
  };
}

/** The row presented as starting a new line. */
function unwrapped(line: IBufferLine): IBufferLine {
  return {
    isWrapped: false,
    length: line.length,
    getCell: (x, cell) => line.getCell(x, cell),
    translateToString: (trimRight, start, end) => line.translateToString(trimRight, start, end),
  };
}

/**
 * Whether the addon reproduces the wrap from `previous` into `line` by simply
 * printing on: the previous row is full to the edge (or ends in the empty
 * cell left by a wide character that moved on) and the continuation starts
 * with a character. Other wraps, which the addon forces with a trick that
 * goes wrong around empty cells (a stray "-", text shifted by one), are sent
 * after a plain line break instead: they look the same and lose only the
 * wrap flag. Such rows only come from resizes without reflow and erasures.
 */
function wrapsCleanly(previous: IBufferLine | undefined, line: IBufferLine, cols: number, scratch: IBufferCell): boolean {
  if (!previous || visibleLength(previous, cols, scratch) < cols) return false;
  const first = line.getCell(0, scratch);
  if (!first || first.getChars() === "") return false;
  const firstIsWide = first.getWidth() === 2;
  const last = previous.getCell(cols - 1, scratch);
  if (!last) return false;
  if (last.getChars() !== "") return true;
  const lastWidth = last.getWidth();
  const beforeLastWidth = previous.getCell(cols - 2, scratch)?.getWidth();
  // The right half of a wide character in place; one orphaned by an overprint after a shrink is an empty cell.
  if (lastWidth === 0) return beforeLastWidth === 2;
  return firstIsWide && beforeLastWidth === 0;
}

