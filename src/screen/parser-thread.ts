import type { MirrorTerminalOptions } from "./mirror-terminal.ts";
import type { StreamState } from "./parse-queue.ts";
import type { Answers, FromParser, Question, ToParser } from "./parser-protocol.ts";

/** Where the parser thread's code is; tests point it at other workers. */
export interface ParserThreadOptions {
  workerUrl?: URL;
}

/**
 * Workers started in a minute at most. A worker that dies is replaced when a
 * mirror next needs it; one that keeps dying (a bug some output triggers
 * every time) stops being replaced for the rest of the minute rather than
 * being restarted at the rate output arrives.
 */
export const MAX_WORKER_STARTS_PER_MINUTE = 5;
const MINUTE_MS = 60_000;

/** The main thread's handle on one mirror's terminal on the parser thread. */
export interface ParsedTerminal {
  /** Send output, with the stream's state right after it. The bytes are copied. */
  write(chunk: Uint8Array, state: StreamState): void;
  /** Resize once the output sent before is parsed. */
  resize(cols: number, rows: number): void;
  /** Ask about the terminal once the output sent before is parsed; rejects if the thread fails or the handle closes. */
  ask<K extends Question["kind"]>(question: Extract<Question, { kind: K }>): Promise<Answers[K]>;
  /** Free the terminal; pending questions reject. */
  close(): void;
}

/** What a terminal's owner hears from the parser thread. */
export interface TerminalListener {
  parsed(parsedBytes: number): void;
  failed(error: Error): void;
}

/** Terminal ids and pending questions of one worker. */
interface WorkerState {
  worker: Worker;
  terminals: Map<number, TerminalListener>;
  pending: Map<number, { terminal: number; resolve: (value: unknown) => void; reject: (error: Error) => void }>;
  failure: Error | null;
}

/**
 * The thread that parses every screen mirror's output, so parsing (xterm.js
 * manages ~70 MB/s) runs beside the PTY reads and socket writes of the main
 * thread instead of taking turns with them. One Worker serves every mirror of
 * the process; it starts with the first mirror.
 *
 * A worker that dies fails its terminals' questions (they never hang); the
 * next terminal opened starts a new one (at most MAX_WORKER_STARTS_PER_MINUTE).
 *
 * @example
 * ```ts
 * using thread = new ParserThread();
 * const terminal = thread.open({ cols: 80, rows: 24, scrollback: 1000 }, { parsed: (bytes) => {}, failed: console.error });
 * terminal.write(bytes, { clean: true, resets: 0 });
 * const line = await terminal.ask({ kind: "currentLine" });
 * ```
 */
export class ParserThread implements Disposable {
  readonly #workerUrl: URL;
  #current: WorkerState | null = null;
  #nextTerminal = 1;
  #nextRequest = 1;
  #disposed = false;
  /** When the workers of the last minute started. */
  #starts: number[] = [];

  constructor(options: ParserThreadOptions = {}) {
    this.#workerUrl = options.workerUrl ?? new URL("./parser-worker.ts", import.meta.url);
  }

  /**
   * A terminal on the parser thread. `listener.parsed` hears its parsed byte
   * count as parsing goes on; `listener.failed` hears once if the thread dies
   * (or is stopped) while the terminal is open.
   */
  open(options: MirrorTerminalOptions, listener: TerminalListener): ParsedTerminal {
    if (this.#disposed) throw new Error("Cannot open a terminal: the parser thread is stopped");
    const state = this.#live();
    const id = this.#nextTerminal++;
    state.terminals.set(id, listener);
    this.#send(state, { op: "open", id, ...options });
    let closed = false;
    return {
      write: (chunk, streamState) => {
        if (closed || state.failure) return;
        // A PTY read may be a view into a larger buffer: copy exactly the chunk,
        // then hand that copy over. (Not `slice`: on a Node Buffer it is a view.)
        const copy = new Uint8Array(chunk);
        state.worker.postMessage({ op: "write", id, chunk: copy, state: streamState } satisfies ToParser, [copy.buffer]);
      },
      resize: (cols, rows) => {
        if (!closed) this.#send(state, { op: "resize", id, cols, rows });
      },
      ask: <K extends Question["kind"]>(question: Extract<Question, { kind: K }>) => {
        if (closed) return Promise.reject(new Error("the screen mirror is disposed"));
        if (state.failure) return Promise.reject(state.failure);
        const request = this.#nextRequest++;
        return new Promise<Answers[K]>((resolve, reject) => {
          state.pending.set(request, { terminal: id, resolve: resolve as (value: unknown) => void, reject });
          this.#send(state, { op: "ask", id, request, question });
        });
      },
      close: () => {
        if (closed) return;
        closed = true;
        state.terminals.delete(id);
        for (const [request, waiter] of state.pending) {
          if (waiter.terminal !== id) continue;
          state.pending.delete(request);
          waiter.reject(new Error("the screen mirror is disposed"));
        }
        this.#send(state, { op: "close", id });
      },
    };
  }

  /** Whether `open` can give a working terminal now: not stopped, and a live worker or room to start one. */
  get available(): boolean {
    if (this.#disposed) return false;
    if (this.#current && !this.#current.failure) return true;
    return this.#recentStarts() < MAX_WORKER_STARTS_PER_MINUTE;
  }

  /** Stop the worker; every pending question rejects. */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    const state = this.#current;
    this.#current = null;
    if (!state) return;
    this.#fail(state, new Error("the parser thread is stopped"));
    state.worker.terminate();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  /** The running worker, started if there is none (or the last one died). */
  #live(): WorkerState {
    if (this.#current && !this.#current.failure) return this.#current;
    if (this.#recentStarts() >= MAX_WORKER_STARTS_PER_MINUTE) {
      throw new Error(`Cannot open a terminal: the screen parser thread failed ${MAX_WORKER_STARTS_PER_MINUTE} times in a minute`);
    }
    this.#starts.push(performance.now());
    const worker = new Worker(this.#workerUrl.href);
    // Sessions keep the process alive, not their parser. (Bun's Worker has unref; the DOM typings do not.)
    (worker as Worker & { unref(): void }).unref();
    const state: WorkerState = { worker, terminals: new Map(), pending: new Map(), failure: null };
    worker.addEventListener("message", (event: MessageEvent<FromParser>) => this.#receive(state, event.data));
    worker.addEventListener("error", (event) => {
      const message = event instanceof ErrorEvent ? event.message : "unknown error";
      console.error(`hatch: the screen parser thread failed: ${message}`);
      this.#fail(state, new Error(`the screen parser thread failed: ${message}`));
    });
    worker.addEventListener("close", () => this.#fail(state, new Error("the screen parser thread exited")));
    this.#current = state;
    return state;
  }

  #recentStarts(): number {
    const since = performance.now() - MINUTE_MS;
    this.#starts = this.#starts.filter((at) => at > since);
    return this.#starts.length;
  }

  #send(state: WorkerState, message: ToParser): void {
    if (!state.failure) state.worker.postMessage(message);
  }

  #receive(state: WorkerState, message: FromParser): void {
    if (message.op === "parsed") {
      for (const [id, bytes] of message.counts) state.terminals.get(id)?.parsed(bytes);
      return;
    }
    const waiter = state.pending.get(message.request);
    if (!waiter) return;
    state.pending.delete(message.request);
    if (message.op === "answer") waiter.resolve(message.value);
    else waiter.reject(new Error(message.message));
  }

  #fail(state: WorkerState, error: Error): void {
    if (state.failure) return;
    state.failure = error;
    for (const waiter of state.pending.values()) waiter.reject(error);
    state.pending.clear();
    for (const listener of state.terminals.values()) listener.failed(error);
  }
}
