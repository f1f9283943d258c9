import type { Terminal } from "@xterm/headless";
import { lastLines, logicalLineAt } from "./buffer-text.ts";
import { createMirrorTerminal } from "./mirror-terminal.ts";
import { OutputRing } from "./output-ring.ts";
import { ParseQueue } from "./parse-queue.ts";
import { ScrollbackCache } from "./scrollback-cache.ts";
import { serializeScreen } from "./screen-serializer.ts";
import { StreamScanner } from "./stream-scanner.ts";

/** What a (re)connecting client is sent instead of missed bytes. */
export interface ScreenSnapshot {
  /** Terminal output that recreates the screen in a fresh terminal of `cols` x `rows`. */
  data: string;
  cols: number;
  rows: number;
  /** Raw PTY output bytes that `data` reflects; the client counts on from here. */
  offset: number;
  /** True when `data` ends on the alternate screen (a full-screen app runs). */
  fullScreen: boolean;
}

/** Size and memory bounds of a mirror. */
export interface ScreenMirrorOptions {
  cols: number;
  rows: number;
  /** Lines kept above the screen (the Terminal: Scrollback Lines setting). */
  scrollback: number;
  /** Raw output bytes kept for replay, plus whatever is not parsed yet; default 1 MiB. */
  ringBytes?: number;
}

/** Replay window for reconnects: a few screens of busy output; sshx keeps 2 MiB, VS Code 1 MiB in older builds. */
const DEFAULT_RING_BYTES = 1024 * 1024;

/** xterm.js silently widens anything narrower (its MINIMUM_COLS), which would make the mirror disagree with the PTY. */
const MIN_COLS = 2;
/** One row is the least xterm.js (and a PTY) accepts. */
const MIN_ROWS = 1;

/**
 * xterm.js throws away writes once this many bytes wait to be parsed
 * (WriteBuffer's DISCARD_WATERMARK); the mirror refuses them first, before
 * its offset, ring and scanner have moved, so it never loses sync.
 */
const XTERM_DISCARD_WATERMARK = 50_000_000;

/**
 * How long a snapshot waits for the rest of a sequence or character that a
 * PTY read split. The rest normally follows within microseconds; the bound
 * only matters when a program stalls mid-sequence.
 */
const SPLIT_SEQUENCE_WAIT_MS = 100;

/**
 * The per-session headless terminal mirror: every byte of PTY output goes
 * through it, so a (re)connecting client gets either exactly the bytes it
 * missed or a serialized snapshot of screen and scrollback.
 *
 * `write` stays cheap for the caller: it appends to a byte ring, scans the
 * bytes for alternate-screen switches and queues them for xterm.js, which
 * parses later. Everything that reads the parsed screen waits for it.
 *
 * @example
 * ```ts
 * using mirror = new ScreenMirror({ cols: 80, rows: 24, scrollback: 10_000 });
 * mirror.write(chunk);
 * const missed = mirror.missedSince(clientOffset);
 * if (missed === null) {
 *   const snapshot = await mirror.snapshot();
 *   send(snapshot);
 *   send(mirror.bytesSince(snapshot.offset)!); // output parsed after the snapshot point
 * }
 * ```
 */
export class ScreenMirror {
  readonly #terminal: Terminal;
  readonly #queue: ParseQueue;
  readonly #scanner = new StreamScanner();
  readonly #ring: OutputRing;
  readonly #history: ScrollbackCache;
  #cols: number;
  #rows: number;
  #offset = 0;
  /** No reconnect replays bytes before this: the end of the last full-screen app, or the last resize. */
  #replayFloor = 0;
  #lastResizeAt = 0;
  #writeWaiters: (() => void)[] = [];
  #disposed = false;

  constructor(options: ScreenMirrorOptions) {
    checkSize("create screen mirror", options.cols, options.rows);
    const ringBytes = options.ringBytes ?? DEFAULT_RING_BYTES;
    for (const [name, value] of [["scrollback", options.scrollback], ["ringBytes", ringBytes]] as const) {
      if (!Number.isSafeInteger(value) || value < 0) {
        throw new RangeError(`Cannot create screen mirror: ${name} must be a non-negative integer, got ${value}`);
      }
    }
    this.#cols = options.cols;
    this.#rows = options.rows;
    this.#terminal = createMirrorTerminal(options);
    this.#queue = new ParseQueue(this.#terminal);
    this.#ring = new OutputRing(ringBytes);
    this.#history = new ScrollbackCache(this.#terminal);
  }

  /** Raw PTY output bytes seen so far (monotonic). */
  get offset(): number {
    return this.#offset;
  }

  /** Width as last set; snapshots report it once the output before the resize is parsed. */
  get cols(): number {
    return this.#cols;
  }

  /** Height as last set. */
  get rows(): number {
    return this.#rows;
  }

  /** True while the alternate screen is active, as of the last byte written (not parsed). */
  get fullScreen(): boolean {
    return this.#scanner.fullScreen;
  }

  /**
   * Bytes written but not yet parsed by xterm.js. The PTY should pause above
   * a high watermark: xterm.js refuses writes beyond a 50 MB backlog.
   */
  get backlog(): number {
    return this.#queue.backlog;
  }

  /**
   * Feed raw PTY output. Synchronous and cheap: ring append, byte scan, and a
   * queued parse. The mirror keeps a reference to `chunk`; do not reuse it.
   * Writes after `dispose` are ignored. Throws, changing nothing, when the
   * parse backlog is past xterm.js's 50 MB limit: pause the PTY on `backlog`.
   */
  write(chunk: Uint8Array): void {
    if (this.#disposed || chunk.length === 0) return;
    if (this.#queue.backlog > XTERM_DISCARD_WATERMARK) {
      throw new Error(`Cannot mirror output: ${this.#queue.backlog} bytes are waiting to be parsed; pause the PTY on backlog`);
    }
    const base = this.#offset;
    const lastExit = this.#scanner.scan(chunk, base);
    if (lastExit >= 0) this.#replayFloor = lastExit;
    // Queued after the scan, which says whether the stream ends cleanly here.
    this.#queue.write(chunk, this.#scanner.clean);
    this.#offset = base + chunk.length;
    this.#ring.append(chunk, this.#offset - this.#queue.backlog);
    const waiters = this.#writeWaiters;
    this.#writeWaiters = [];
    for (const wake of waiters) wake();
  }

  /**
   * Exactly the bytes in [offset, this.offset), or null when they cannot be
   * replayed to a reconnecting client: the ring no longer holds all of them,
   * the alternate screen is active, an alternate screen was active after
   * `offset`, the mirror was resized after `offset` (the client's bytes before
   * it were laid out at another size), or `offset` is negative or in the
   * future. Asking at the current offset always gives an empty array.
   */
  missedSince(offset: number): Uint8Array | null {
    if (!Number.isSafeInteger(offset) || offset < 0 || offset > this.#offset) return null;
    if (offset === this.#offset) return new Uint8Array(0);
    if (this.#scanner.fullScreen || offset < this.#replayFloor) return null;
    return this.#ring.slice(offset);
  }

  /**
   * The bytes in [offset, this.offset) whatever the screen mode, or null when
   * the ring no longer holds them or the mirror was resized after `offset`
   * (take a new snapshot then). Only for catching a client up right after a
   * snapshot taken at `offset`; a reconnect must use `missedSince`.
   */
  bytesSince(offset: number): Uint8Array | null {
    if (offset < this.#lastResizeAt) return null;
    return this.#ring.slice(offset);
  }

  /**
   * A serialized snapshot of screen and scrollback (addon-serialize) with
   * colours, cursor, modes and the alternate screen if a full-screen app
   * runs. `offset` is exactly the number of bytes it reflects: once xterm.js
   * has parsed the output written before the call, it is taken at the first
   * point between two sequences, so a flood cannot starve it; send
   * `bytesSince(offset)` after it. When all output is parsed, a sequence
   * left unfinished by the last PTY read is appended to `data`, so the
   * client's parser continues it.
   */
  async snapshot(): Promise<ScreenSnapshot> {
    const deadline = performance.now() + SPLIT_SEQUENCE_WAIT_MS;
    for (;;) {
      this.#checkUsable("snapshot screen");
      if (!this.#queue.drained) {
        const taken = await this.#queue.atCleanBoundary((offset) => this.#takeSnapshot("", offset));
        if (taken) return taken;
        continue;
      }
      const pending = this.#scanner.pendingText();
      const waitLeft = deadline - performance.now();
      if (pending !== null || waitLeft <= 0) {
        // Past the deadline an unfinished character is left out: the client
        // may show one garbled character rather than never attaching.
        return this.#takeSnapshot(pending ?? "", this.#offset);
      }
      await this.#nextWrite(waitLeft);
    }
  }

  /**
   * Resize the mirror. Output already written keeps its line breaks (no
   * reflow). Output written before this call is still parsed at the old size.
   */
  resize(cols: number, rows: number): void {
    checkSize("resize screen mirror", cols, rows);
    if (this.#disposed || (cols === this.#cols && rows === this.#rows)) return;
    this.#cols = cols;
    this.#rows = rows;
    this.#replayFloor = this.#offset;
    this.#lastResizeAt = this.#offset;
    this.#queue.resize(cols, rows);
  }

  /** The last `max` lines of the normal buffer (scrollback and screen) as plain text, trailing blank lines left out. */
  async readLines(max: number): Promise<string[]> {
    if (!Number.isSafeInteger(max) || max < 0) {
      throw new RangeError(`Cannot read lines: max must be a non-negative integer, got ${max}`);
    }
    await this.settled();
    this.#checkUsable("read lines");
    return lastLines(this.#terminal.buffer.normal, max, this.#terminal.cols);
  }

  /**
   * Plain text of the logical line the cursor is on (wrapped rows joined) in
   * the active buffer, as parsed so far; await `settled()` first for the
   * latest output.
   */
  currentLine(): string {
    if (this.#disposed) return "";
    const buffer = this.#terminal.buffer.active;
    return logicalLineAt(buffer, buffer.baseY + buffer.cursorY, this.#terminal.cols);
  }

  /** Resolves once everything written (and every resize) so far is parsed, or the mirror is disposed. */
  settled(): Promise<void> {
    return this.#queue.settled();
  }

  /** Free the terminal, the ring and the cache; pending waits resolve. */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    this.#queue.dispose();
    this.#history.dispose();
    // xterm.js's dispose keeps the buffers; a reset drops them, so a disposed
    // mirror that is still referenced does not pin megabytes of scrollback.
    this.#terminal.reset();
    this.#terminal.dispose();
    this.#ring.reset(this.#offset);
    for (const wake of this.#writeWaiters) wake();
    this.#writeWaiters = [];
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  #takeSnapshot(pending: string, offset: number): ScreenSnapshot {
    const terminal = this.#terminal;
    return {
      data: serializeScreen(terminal, this.#history, this.#scanner.resets) + pending,
      cols: terminal.cols,
      rows: terminal.rows,
      offset,
      fullScreen: terminal.buffer.active.type === "alternate",
    };
  }

  /** Resolves on the next write, or after `ms`. */
  async #nextWrite(ms: number): Promise<void> {
    let wake = (): void => {};
    const woken = new Promise<void>((resolve) => (wake = resolve));
    this.#writeWaiters.push(wake);
    const timer = setTimeout(wake, ms);
    await woken;
    clearTimeout(timer);
    this.#writeWaiters = this.#writeWaiters.filter((waiter) => waiter !== wake);
  }

  #checkUsable(action: string): void {
    if (this.#disposed) throw new Error(`Cannot ${action}: screen mirror is disposed`);
  }
}

function checkSize(action: string, cols: number, rows: number): void {
  if (!Number.isSafeInteger(cols) || cols < MIN_COLS || !Number.isSafeInteger(rows) || rows < MIN_ROWS) {
    throw new RangeError(`Cannot ${action}: size must be at least ${MIN_COLS}x${MIN_ROWS} whole cells, got ${cols}x${rows}`);
  }
}
