import type { Terminal } from "@xterm/headless";
import { resizeWithoutReflow } from "./mirror-terminal.ts";

/** A write of nothing, whose callback runs once everything queued before it is parsed. */
const EMPTY = new Uint8Array(0);

/** What the scanner knew about the stream right after a chunk: whether it ends cleanly, and how many resets it held. */
export interface StreamState {
  clean: boolean;
  resets: number;
}

interface BoundaryRequest {
  minOffset: number;
  take: (parsedOffset: number) => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/**
 * Feeds output and resizes to xterm.js in order, and reports how far its
 * asynchronous parsing has got: all of it (`settled`), or the next point
 * where the parsed bytes end cleanly, between two sequences, so a snapshot
 * can be taken there even while a flood keeps the queue from ever draining.
 *
 * @example
 * ```ts
 * const queue = new ParseQueue(terminal, (parsed) => report(parsed));
 * queue.write(bytes, { clean: true, resets: 0 });
 * await queue.settled();
 * ```
 */
export class ParseQueue {
  readonly #terminal: Terminal;
  readonly #onParsed: (parsedBytes: number) => void;
  /** Operations handed to xterm.js, and how many it has finished. */
  #queued = 0;
  #finished = 0;
  #writtenBytes = 0;
  #parsedBytes = 0;
  /** The stream state after the bytes parsed so far. */
  #parsedState: StreamState = { clean: true, resets: 0 };
  #pendingResizes = 0;
  #settleWaiters: { target: number; resolve: () => void }[] = [];
  #boundaryRequests: BoundaryRequest[] = [];
  #disposed = false;

  /** `onParsed` hears the parsed byte count each time xterm.js finishes a write. */
  constructor(terminal: Terminal, onParsed: (parsedBytes: number) => void = () => {}) {
    this.#terminal = terminal;
    this.#onParsed = onParsed;
  }

  /** Bytes parsed so far. */
  get parsed(): number {
    return this.#parsedBytes;
  }

  /** The stream state after the bytes parsed so far. */
  get parsedState(): StreamState {
    return this.#parsedState;
  }

  /** Bytes written but not yet parsed. */
  get backlog(): number {
    return this.#writtenBytes - this.#parsedBytes;
  }

  /** True when xterm.js has finished every write and resize. */
  get drained(): boolean {
    return this.#finished === this.#queued;
  }

  /**
   * Queue output; `state` is the stream's state right after it (whether a
   * sequence or character is cut off there, and the resets so far). Throws,
   * changing nothing, when xterm.js refuses it (a backlog past its 50 MB limit).
   */
  write(chunk: Uint8Array, state: StreamState): void {
    const length = chunk.length;
    this.#terminal.write(chunk, () => {
      this.#parsedBytes += length;
      this.#parsedState = state;
      this.#onParsed(this.#parsedBytes);
      this.#finish();
    });
    this.#queued++;
    this.#writtenBytes += length;
  }

  /** Resize once the output queued so far is parsed: it was laid out at the old size. */
  resize(cols: number, rows: number): void {
    if (this.drained) {
      resizeWithoutReflow(this.#terminal, cols, rows);
      return;
    }
    this.#queued++;
    this.#pendingResizes++;
    this.#terminal.write(EMPTY, () => {
      resizeWithoutReflow(this.#terminal, cols, rows);
      this.#pendingResizes--;
      this.#finish();
    });
  }

  /** Resolves once everything queued so far is parsed (or the queue is disposed). */
  settled(): Promise<void> {
    if (this.#disposed || this.drained) return Promise.resolve();
    const target = this.#queued;
    return new Promise((resolve) => this.#settleWaiters.push({ target, resolve }));
  }

  /**
   * Calls `take(parsedOffset)` synchronously at the first point, once
   * everything written so far is parsed, where the parsed stream ends cleanly
   * with no resize pending, and resolves with its result. Later output cannot
   * delay it past the next such point. Resolves undefined if the queue drains
   * (or is disposed) without one.
   */
  atCleanBoundary<T>(take: (parsedOffset: number) => T): Promise<T | undefined> {
    if (this.#disposed || this.drained) return Promise.resolve(undefined);
    return new Promise((resolve, reject) => {
      const request = { minOffset: this.#writtenBytes, take, resolve: resolve as (value: unknown) => void, reject };
      this.#boundaryRequests.push(request);
    });
  }

  /** Stop reporting; every waiter resolves. */
  dispose(): void {
    this.#disposed = true;
    for (const waiter of this.#settleWaiters) waiter.resolve();
    for (const request of this.#boundaryRequests) request.resolve(undefined);
    this.#settleWaiters = [];
    this.#boundaryRequests = [];
  }

  #finish(): void {
    this.#finished++;
    while (this.#settleWaiters.length > 0 && this.#settleWaiters[0]!.target <= this.#finished) {
      this.#settleWaiters.shift()!.resolve();
    }
    if (this.#boundaryRequests.length === 0) return;
    const atBoundary = this.#parsedState.clean && this.#pendingResizes === 0;
    const drained = this.drained;
    if (!atBoundary && !drained) return;
    const due = this.#boundaryRequests.filter((request) => drained || request.minOffset <= this.#parsedBytes);
    if (due.length === 0) return;
    this.#boundaryRequests = this.#boundaryRequests.filter((request) => !due.includes(request));
    // Inside xterm.js's write callback the screen reflects exactly the bytes
    // parsed so far, so this is where a consistent snapshot can be taken.
    for (const request of due) {
      try {
        request.resolve(atBoundary ? request.take(this.#parsedBytes) : undefined);
      } catch (error) {
        request.reject(error);
      }
    }
  }
}
