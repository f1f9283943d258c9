import type { CursorLine } from "./buffer-text.ts";
import { OutputRing } from "./output-ring.ts";
import type { Answers, Question } from "./parser-protocol.ts";
import type { ParsedTerminal, ParserThread } from "./parser-thread.ts";
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
  /** The thread that parses the output (one per process, shared by every mirror). */
  parser: ParserThread;
}

/** Replay window for reconnects: a few screens of busy output; sshx keeps 2 MiB, VS Code 1 MiB in older builds. */
const DEFAULT_RING_BYTES = 1024 * 1024;

/** xterm.js silently widens anything narrower (its MINIMUM_COLS), which would make the mirror disagree with the PTY. */
const MIN_COLS = 2;
/** One row is the least xterm.js (and a PTY) accepts. */
const MIN_ROWS = 1;

/**
 * Unparsed bytes past which the mirror starts its terminal over. A PTY pauses
 * at a few MiB of backlog, but one whose program turned flow control off
 * (raw mode) cannot be paused, and xterm.js throws writes away past 50 MB
 * (WriteBuffer's DISCARD_WATERMARK). Starting over bounds the memory and keeps
 * the mirror in step with the stream, at the cost of the history before.
 */
const START_OVER_BACKLOG_BYTES = 16 * 1024 * 1024;

/** DECSET 1049: a terminal started over while a full-screen app runs begins on the alternate screen. */
const ENTER_ALT_SCREEN = "\x1b[?1049h";

const encoder = new TextEncoder();
/** The cursor line of a disposed mirror. */
const NO_LINE: CursorLine = { line: "", before: [] };

/**
 * How long a snapshot waits for the rest of a sequence or character that a
 * PTY read split. The rest normally follows within microseconds; the bound
 * only matters when a program stalls mid-sequence.
 */
const SPLIT_SEQUENCE_WAIT_MS = 100;
/** Longest UTF-8 character less its last byte: how far before the offset a split character can start. */
const MAX_SPLIT_CHARACTER_BYTES = 3;
/**
 * How long a finished snapshot is handed out again while the stream and the
 * size stay as they were: long enough for a burst of attaches (a page with
 * several tabs, a client reconnecting in a loop) to cost one snapshot, short
 * enough that an idle session does not hold megabytes of text.
 */
const SNAPSHOT_REUSE_MS = 2_000;

/**
 * The per-session headless terminal mirror: every byte of PTY output goes
 * through it, so a (re)connecting client gets either exactly the bytes it
 * missed or a serialized snapshot of screen and scrollback.
 *
 * `write` stays cheap for the caller: it appends to a byte ring, scans the
 * bytes for alternate-screen switches and sends them to the parser thread,
 * where an xterm.js terminal parses them beside the main thread's work.
 * Everything that reads the parsed screen is asked of that thread, and is
 * answered once the output written before the question is parsed. If that
 * thread dies, the questions pending on it fail and the mirror starts over on
 * a new one at its next write or question: the session keeps working, and its
 * snapshots lack the history before (replays of missed bytes do not).
 *
 * @example
 * ```ts
 * using mirror = new ScreenMirror({ cols: 80, rows: 24, scrollback: 10_000, parser });
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
  readonly #parser: ParserThread;
  readonly #scrollback: number;
  #terminal!: ParsedTerminal;
  /** Counts the terminals opened; an answer from an earlier one is stale. */
  #generation = 0;
  /** Stream offset of the current terminal's first byte: it counts its bytes from there. */
  #base = 0;
  readonly #scanner = new StreamScanner();
  readonly #ring: OutputRing;
  #cols: number;
  #rows: number;
  #offset = 0;
  /** Stream offset up to which the parser thread has reported parsing. */
  #parsed = 0;
  /** No reconnect replays bytes before this: the end of the last full-screen app, or the last resize. */
  #replayFloor = 0;
  #lastResizeAt = 0;
  /** Resizes so far: a snapshot asked for before one may have been taken before it. */
  #resizes = 0;
  /**
   * Stream offset at which the snapshot being taken was asked for. The
   * parser thread reports bytes parsed past a snapshot before answering with
   * it, so the ring keeps from here, not only from `#parsed`: a snapshot is
   * taken at or after the offset it was asked at. One at most: callers share
   * the snapshot in flight.
   */
  #snapshotFloor: number | null = null;
  /** The snapshot being taken: every caller meanwhile gets it (it is caught up from its offset like any other). */
  #snapshotInFlight: Promise<ScreenSnapshot> | null = null;
  /** The last snapshot taken, while nothing was written, resized or started over since (see SNAPSHOT_REUSE_MS). */
  #lastSnapshot: { snapshot: ScreenSnapshot; offset: number; resizes: number; generation: number } | null = null;
  #lastSnapshotTimer: ReturnType<typeof setTimeout> | undefined;
  #writeWaiters: (() => void)[] = [];
  #drainWaiters: { backlog: number; resolve: () => void }[] = [];
  /** Why the parser thread can no longer answer, if it cannot. */
  #failure: Error | null = null;
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
    this.#ring = new OutputRing(ringBytes);
    this.#parser = options.parser;
    this.#scrollback = options.scrollback;
    this.#open("");
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

  /** Scrollback lines kept, as created: the client sizes its buffer by it. */
  get scrollback(): number {
    return this.#scrollback;
  }

  /** True while the alternate screen is active, as of the last byte written (not parsed). */
  get fullScreen(): boolean {
    return this.#scanner.fullScreen;
  }

  /**
   * Bytes written but not yet reported parsed (0 once the parser thread has
   * failed). The PTY should pause above a high watermark: xterm.js refuses
   * writes beyond a 50 MB backlog.
   */
  get backlog(): number {
    return this.#failure ? 0 : this.#offset - this.#parsed;
  }

  /**
   * Feed raw PTY output. Synchronous and cheap: ring append, byte scan, and a
   * copy posted to the parser thread. The mirror keeps a reference to
   * `chunk`; do not reuse it. Writes after `dispose` are ignored.
   *
   * Pause the PTY on `backlog`: when this chunk would take it past 16 MiB
   * anyway (a PTY that cannot be paused), the terminal starts over before
   * the chunk, on the alternate screen if a full-screen app runs. Snapshots
   * then lack the history before that point; replays of missed bytes are
   * unaffected.
   */
  write(chunk: Uint8Array): void {
    if (this.#disposed || chunk.length === 0) return;
    if (this.backlog + chunk.length > START_OVER_BACKLOG_BYTES || this.#mayRecover()) this.#startOver();
    const base = this.#offset;
    const lastExit = this.#scanner.scan(chunk, base);
    if (lastExit >= 0) this.#replayFloor = lastExit;
    this.#offset = base + chunk.length;
    // Stale now: let its text go rather than hold it for the rest of SNAPSHOT_REUSE_MS.
    this.#lastSnapshot = null;
    // Sent after the scan, which says whether the stream ends cleanly here.
    this.#terminal.write(chunk, { clean: this.#scanner.clean, resets: this.#scanner.resets });
    // Unparsed bytes stay: a snapshot taken at any later parse point is caught up from the ring.
    const parsed = this.#failure ? this.#offset : this.#parsed;
    this.#ring.append(chunk, this.#snapshotFloor === null ? parsed : Math.min(parsed, this.#snapshotFloor));
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
   * runs. `offset` is exactly the number of bytes it reflects: once the
   * output written before the call is parsed, it is taken at the first point
   * between two sequences, so a flood cannot starve it; send
   * `bytesSince(offset)` after it. It is at the size last set, even when a
   * resize came while it was being taken. When all output is parsed, a sequence
   * left unfinished by the last PTY read is appended to `data`, so the
   * client's parser continues it, and a character left unfinished is left
   * out of `offset`, so its bytes come after.
   *
   * Snapshots are built on the parser thread every session shares, so they
   * are shared: callers while one is being taken get that one, and callers
   * shortly after get it again while no output or resize came since.
   */
  snapshot(): Promise<ScreenSnapshot> {
    const last = this.#lastSnapshot;
    if (last && last.offset === this.#offset && last.resizes === this.#resizes && last.generation === this.#generation && !this.#disposed) {
      return Promise.resolve(last.snapshot);
    }
    if (this.#snapshotInFlight) return this.#snapshotInFlight;
    const taking = this.#snapshotOnce().finally(() => {
      if (this.#snapshotInFlight === taking) this.#snapshotInFlight = null;
    });
    this.#snapshotInFlight = taking;
    return taking;
  }

  async #snapshotOnce(): Promise<ScreenSnapshot> {
    // A character cut in two by the last read may start a few bytes before the offset now: keep those too.
    this.#snapshotFloor = Math.max(0, this.#offset - MAX_SPLIT_CHARACTER_BYTES);
    try {
      const snapshot = await this.#takeSnapshot();
      this.#keepSnapshot(snapshot);
      return snapshot;
    } finally {
      this.#snapshotFloor = null;
    }
  }

  /** Hand `snapshot` out again for a while, as long as the stream stays where it is now. */
  #keepSnapshot(snapshot: ScreenSnapshot): void {
    clearTimeout(this.#lastSnapshotTimer);
    this.#lastSnapshot = { snapshot, offset: this.#offset, resizes: this.#resizes, generation: this.#generation };
    this.#lastSnapshotTimer = setTimeout(() => (this.#lastSnapshot = null), SNAPSHOT_REUSE_MS);
    this.#lastSnapshotTimer.unref?.();
  }

  async #takeSnapshot(): Promise<ScreenSnapshot> {
    const deadline = performance.now() + SPLIT_SEQUENCE_WAIT_MS;
    for (;;) {
      this.#checkUsable("snapshot screen");
      const resizes = this.#resizes;
      const [{ clean, ...taken }, base] = await this.#ask("snapshot screen", { kind: "snapshot" });
      taken.offset += base;
      // A resize made meanwhile may have reached the parser thread after the snapshot was taken, at the
      // same offset: such a snapshot would take back the size the client was just told. Take another.
      if (this.#resizes !== resizes) continue;
      if (clean) return taken;
      // Parsing stopped inside a sequence: only the scanner, which has seen
      // the same bytes, knows its text, and only if nothing was written since.
      if (taken.offset !== this.#offset) continue;
      // A character cut in two by the last read is not on the screen yet, so the snapshot also shows
      // the stream just before it: counted from there, the client gets all its bytes after the snapshot.
      const splitCharacter = this.#scanner.splitCharacterStart;
      if (splitCharacter !== null && this.bytesSince(splitCharacter) !== null) return { ...taken, offset: splitCharacter };
      const pending = this.#scanner.pendingText();
      const waitLeft = deadline - performance.now();
      if (pending !== null || waitLeft <= 0) {
        // Past the deadline, a sequence whose start the scanner could not keep (a long OSC 52 or image, or one
        // ending inside a character) is replaced by one the client ignores to the same end: the rest of it,
        // which arrives after the snapshot, is then taken in rather than printed as text.
        return { ...taken, data: taken.data + (pending ?? this.#scanner.restAbsorber ?? "") };
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
    this.#resizes++;
    this.#terminal.resize(cols, rows);
  }

  /** The last `max` lines of the normal buffer (scrollback and screen) as plain text, trailing blank lines left out. */
  async readLines(max: number): Promise<string[]> {
    if (!Number.isSafeInteger(max) || max < 0) {
      throw new RangeError(`Cannot read lines: max must be a non-negative integer, got ${max}`);
    }
    const [lines] = await this.#ask("read lines", { kind: "readLines", max });
    return lines;
  }

  /**
   * Plain text of the logical line the cursor is on (wrapped rows joined) in
   * the active buffer, with the edge-reaching rows above that may be its start
   * (see `CursorLine`), once everything written so far is parsed; empty once
   * the mirror is disposed.
   */
  async currentLine(): Promise<CursorLine> {
    if (this.#disposed) return NO_LINE;
    try {
      const [line] = await this.#ask("read the cursor line", { kind: "currentLine" });
      return line;
    } catch (error) {
      if (this.#disposed) return NO_LINE;
      throw error;
    }
  }

  /**
   * Resolves once everything written (and every resize) so far is parsed, or
   * the mirror is disposed; rejects if the parser thread failed.
   */
  async settled(): Promise<void> {
    if (this.#disposed) return;
    try {
      await this.#ask("wait for parsing", { kind: "settled" });
    } catch (error) {
      if (!this.#disposed) throw error;
    }
  }

  /** Resolves once the backlog is at most `backlog` bytes, or the mirror is disposed or cannot parse any more. */
  drained(backlog: number): Promise<void> {
    if (this.#disposed || this.backlog <= backlog) return Promise.resolve();
    return new Promise((resolve) => this.#drainWaiters.push({ backlog, resolve }));
  }

  /** Free the terminal, the ring and the cache; pending waits resolve. */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    clearTimeout(this.#lastSnapshotTimer);
    this.#lastSnapshot = null;
    this.#terminal.close();
    this.#ring.reset(this.#offset);
    for (const wake of this.#writeWaiters) wake();
    this.#writeWaiters = [];
    for (const waiter of this.#drainWaiters) waiter.resolve();
    this.#drainWaiters = [];
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  /**
   * Ask the current terminal, again if it was started over meanwhile; the
   * answer comes with the stream offset the terminal counts from. A failure
   * says what could not be done.
   */
  async #ask<K extends Question["kind"]>(action: string, question: Extract<Question, { kind: K }>): Promise<[Answers[K], number]> {
    if (this.#mayRecover()) this.#startOver();
    for (;;) {
      const [generation, base] = [this.#generation, this.#base];
      try {
        const answer = await this.#terminal.ask(question);
        if (generation === this.#generation) return [answer, base];
      } catch (error) {
        this.#checkUsable(action);
        if (generation === this.#generation) {
          throw new Error(`Cannot ${action}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
        }
      }
    }
  }

  /**
   * A fresh terminal on the parser thread that counts from the current
   * offset, fed `prefix` first. Throws (and changes nothing) when the thread
   * cannot give one.
   */
  #open(prefix: string): void {
    const generation = this.#generation + 1;
    const bytes = encoder.encode(prefix);
    const base = this.#offset - bytes.length;
    const terminal = this.#parser.open(
      { cols: this.#cols, rows: this.#rows, scrollback: this.#scrollback },
      {
        parsed: (count) => generation === this.#generation && this.#onParsed(base + count),
        failed: (error) => generation === this.#generation && this.#onFailed(error),
      },
    );
    [this.#generation, this.#base, this.#parsed, this.#failure, this.#terminal] = [generation, base, base, null, terminal];
    if (bytes.length > 0) terminal.write(bytes, { clean: this.#scanner.clean, resets: this.#scanner.resets });
  }

  /**
   * Drop the terminal and its unparsed backlog, and open one that continues
   * from here: on the alternate screen if a full-screen app runs, and inside
   * the unfinished sequence if the stream stops in one (a split character is
   * lost). If no terminal can be opened, the mirror stays as it was.
   */
  #startOver(): void {
    const previous = this.#terminal;
    try {
      // A sequence too long to keep is absorbed to its end rather than printed as text.
      this.#open((this.#scanner.fullScreen ? ENTER_ALT_SCREEN : "") + (this.#scanner.pendingText() ?? this.#scanner.restAbsorber ?? ""));
    } catch {
      // The thread is stopped or keeps failing: the failure it reported stands.
      return;
    }
    previous.close();
    this.#wakeDrained();
  }

  /** The parser thread died under this mirror and a new one can be had: start over on it (the history before is lost). */
  #mayRecover(): boolean {
    return this.#failure !== null && !this.#disposed && this.#parser.available;
  }

  #onParsed(offset: number): void {
    this.#parsed = offset;
    this.#wakeDrained();
  }

  #wakeDrained(): void {
    if (this.#drainWaiters.length === 0) return;
    const backlog = this.backlog;
    const due = this.#drainWaiters.filter((waiter) => backlog <= waiter.backlog);
    if (due.length === 0) return;
    this.#drainWaiters = this.#drainWaiters.filter((waiter) => backlog > waiter.backlog);
    for (const waiter of due) waiter.resolve();
  }

  #onFailed(error: Error): void {
    this.#failure = error;
    // Nothing will be parsed any more: nobody should wait for it.
    for (const waiter of this.#drainWaiters) waiter.resolve();
    this.#drainWaiters = [];
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
