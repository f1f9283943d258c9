import type { IBuffer, IMarker, Terminal } from "@xterm/headless";
import { linkOpener, type LinkOpener } from "./hyperlinks.ts";
import { serializeRows } from "./row-serializer.ts";

/**
 * Cached runs hold at most this many rows (more only for one longer logical
 * line), so a run partly trimmed off the top of the scrollback costs at most
 * this many rows of re-serialization, while 10,000 rows stay ~40 addon calls.
 */
const RUN_ROWS = 256;

interface Run {
  text: string;
  rows: number;
}

/** How the receiver treats its first line break when the history is written. */
export interface HistoryLayout {
  /**
   * True when even the first line break scrolls (a one-row screen). Otherwise
   * the receiver writes the first row at the top of a two-row scroll region,
   * so only that first break moves onto a fresh row without scrolling.
   */
  firstBreakScrolls: boolean;
}

/**
 * The normal buffer's scrollback, serialized for a receiver that scrolls
 * every line into its own scrollback, with the serialized form of complete
 * logical lines cached between snapshots.
 *
 * Without reflow, a row that has scrolled into the scrollback never changes
 * again; it can only be trimmed off the top or cleared. So runs of complete
 * logical lines are serialized once. A marker on the last cached row follows
 * trimming (and is disposed when that row goes); a reset of the terminal, a
 * change of width, or a fingerprint mismatch on that row drops the cache.
 *
 * @example
 * ```ts
 * const cache = new ScrollbackCache(terminal);
 * const history = cache.serialize(resets, { firstBreakScrolls: false }); // "" without scrollback
 * ```
 */
export class ScrollbackCache {
  readonly #terminal: Terminal;
  readonly #links: LinkOpener;
  #runs: Run[] = [];
  #rows = 0;
  #marker: IMarker | undefined;
  #fingerprint = "";
  #cols = 0;
  #resets = 0;

  constructor(terminal: Terminal) {
    this.#terminal = terminal;
    this.#links = linkOpener(terminal);
  }

  /**
   * The scrollback rows, oldest first, joined by line breaks and ending in
   * default attributes, or "" when there is no scrollback. `resets` is the
   * number of terminal resets so far: a reset replaces the buffers.
   */
  serialize(resets: number, layout: HistoryLayout): string {
    const terminal = this.#terminal;
    const buffer = terminal.buffer.normal;
    const baseY = buffer.baseY;
    if (resets !== this.#resets || terminal.cols !== this.#cols) {
      this.#clear();
      this.#resets = resets;
      this.#cols = terminal.cols;
    }
    if (baseY === 0) return "";
    let end = this.#validEnd(buffer, baseY);
    // Markers can only be placed while the normal buffer is active; while a
    // full-screen app runs, the normal scrollback cannot grow anyway.
    if (terminal.buffer.active.type === "normal") end = this.#extend(buffer, end, baseY);

    const pieces: string[] = [];
    let next = 0;
    if (this.#rows > 0) {
      const start = end - this.#rows;
      // The receiver's first line break does not scroll, so the first line
      // is serialized under that assumption rather than taken from the cache.
      const headRows = start > 0 ? start : this.#runs[0]!.rows;
      pieces.push(...this.#fresh(0, headRows, layout));
      for (let i = start > 0 ? 0 : 1; i < this.#runs.length; i++) pieces.push(this.#runs[i]!.text);
      next = end;
    }
    if (next < baseY) pieces.push(...this.#fresh(next, baseY, layout));
    return pieces.join("\r\n");
  }

  /** Release the marker. */
  dispose(): void {
    this.#clear();
  }

  /** First row after the cached runs, after dropping runs trimmed off the top; 0 when nothing usable is cached. */
  #validEnd(buffer: IBuffer, baseY: number): number {
    const marker = this.#marker;
    if (!marker || marker.isDisposed || marker.line < 0 || marker.line >= baseY) {
      this.#clear();
      return 0;
    }
    const end = marker.line + 1;
    let start = end - this.#rows;
    while (start < 0 && this.#runs.length > 0) {
      const dropped = this.#runs.shift()!;
      start += dropped.rows;
      this.#rows -= dropped.rows;
    }
    if (this.#rows === 0 || rowText(buffer, end - 1) !== this.#fingerprint) {
      this.#clear();
      return 0;
    }
    return end;
  }

  /** Cache the complete logical lines in [from, baseY); returns the new end of the cache. */
  #extend(buffer: IBuffer, from: number, baseY: number): number {
    let row = from;
    let runStart = from;
    const added: Run[] = [];
    const seal = (): void => {
      if (row === runStart) return;
      const text = serializeRows({ buffer, first: runStart, count: row - runStart, cols: this.#cols, screenRows: 0, links: this.#links });
      // The addon builds its output by concatenation, which engines keep as a
      // rope; reading one character flattens it in place, so joining the
      // cached runs later copies ~1 MB once instead of walking ropes (12 ms).
      text.charCodeAt(0);
      added.push({ text, rows: row - runStart });
      runStart = row;
    };
    while (row < baseY) {
      const lineEnd = logicalLineEnd(buffer, row, baseY);
      // A line that continues onto the screen is not complete yet.
      if (lineEnd === baseY && buffer.getLine(baseY)?.isWrapped) break;
      if (row > runStart && lineEnd - runStart > RUN_ROWS) seal();
      row = lineEnd;
      // The first line is re-serialized on every snapshot (see #fresh), so
      // it gets a run of its own rather than making a whole run uncached.
      if (runStart === 0) seal();
    }
    seal();
    if (added.length === 0) return from;
    const last = row - 1;
    const marker = this.#terminal.registerMarker(last - (buffer.baseY + buffer.cursorY));
    if (!marker) return from;
    this.#marker?.dispose();
    this.#marker = marker;
    this.#fingerprint = rowText(buffer, last);
    for (const run of added) {
      this.#runs.push(run);
      this.#rows += run.rows;
    }
    return row;
  }

  /** Serialize rows [from, to) afresh, treating the very first row of the history specially. */
  #fresh(from: number, to: number, layout: HistoryLayout): string[] {
    const buffer = this.#terminal.buffer.normal;
    const cols = this.#cols;
    if (from > 0 || layout.firstBreakScrolls) {
      return [serializeRows({ buffer, first: from, count: to - from, cols, screenRows: 0, links: this.#links })];
    }
    const firstEnd = logicalLineEnd(buffer, 0, to);
    const pieces = [serializeRows({ buffer, first: 0, count: firstEnd, cols, screenRows: 1, links: this.#links })];
    if (firstEnd < to) pieces.push(serializeRows({ buffer, first: firstEnd, count: to - firstEnd, cols, screenRows: 0, links: this.#links }));
    return pieces;
  }

  #clear(): void {
    this.#marker?.dispose();
    this.#marker = undefined;
    this.#runs = [];
    this.#rows = 0;
    this.#fingerprint = "";
  }
}

/** The row after the logical line starting at `row` (wrapped rows joined), at most `limit`. */
function logicalLineEnd(buffer: IBuffer, row: number, limit: number): number {
  let end = row + 1;
  while (end < limit && buffer.getLine(end)?.isWrapped) end++;
  return end;
}

/** A row's text, to notice if a cached row was ever rewritten after all. */
function rowText(buffer: IBuffer, row: number): string {
  return buffer.getLine(row)?.translateToString(false) ?? "";
}
