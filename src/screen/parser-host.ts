import type { Terminal } from "@xterm/headless";
import { cursorLineAt, lastLines } from "./buffer-text.ts";
import { createMirrorTerminal } from "./mirror-terminal.ts";
import { guardParsing } from "./parse-guard.ts";
import { PaletteChanges } from "./palette.ts";
import { ParseQueue } from "./parse-queue.ts";
import type { FromParser, Question, TerminalSnapshot, ToParser } from "./parser-protocol.ts";
import { ScrollbackCache } from "./scrollback-cache.ts";
import { dropQueuedWrites } from "./xterm-internals.ts";
import { serializeScreen } from "./screen-serializer.ts";

/** One mirror's terminal on the parser thread. */
interface Hosted {
  terminal: Terminal;
  queue: ParseQueue;
  history: ScrollbackCache;
  palette: PaletteChanges;
  closed: boolean;
}

/**
 * The parser thread's side: hosts one headless xterm.js terminal per mirror,
 * parses the output the main thread sends, and answers its questions. It
 * knows nothing of threads; `post` carries its messages back (parser-worker.ts
 * wires it to a Worker, tests may call it directly).
 *
 * Parsed byte counts are gathered per turn and sent as one message, always
 * before an answer, so the main thread's view of the backlog is never older
 * than an answer it acts on.
 *
 * @example
 * ```ts
 * const host = new ParserHost((message) => postMessage(message));
 * self.onmessage = (event) => host.handle(event.data);
 * ```
 */
export class ParserHost {
  readonly #post: (message: FromParser) => void;
  readonly #hosted = new Map<number, Hosted>();
  readonly #parsedCounts = new Map<number, number>();
  #flushQueued = false;

  constructor(post: (message: FromParser) => void) {
    this.#post = post;
  }

  /** Act on one message from the main thread. */
  handle(message: ToParser): void {
    switch (message.op) {
      case "open":
        return this.#open(message.id, message);
      case "write":
        return this.#hosted.get(message.id)?.queue.write(message.chunk, message.state);
      case "resize":
        return this.#hosted.get(message.id)?.queue.resize(message.cols, message.rows);
      case "ask":
        return this.#ask(message.id, message.request, message.question);
      case "close":
        return this.#close(message.id);
    }
  }

  #open(id: number, options: { cols: number; rows: number; scrollback: number }): void {
    const terminal = createMirrorTerminal(options);
    // Output that throws in xterm.js must not end the thread every other session's mirror lives on.
    guardParsing(terminal, (error) => console.error("hatch: a session's screen mirror could not parse part of its output, and skipped it:", error));
    const queue = new ParseQueue(terminal, (bytes) => this.#parsed(id, bytes));
    this.#hosted.set(id, { terminal, queue, history: new ScrollbackCache(terminal), palette: new PaletteChanges(terminal), closed: false });
  }

  #ask(id: number, request: number, question: Question): void {
    const hosted = this.#hosted.get(id);
    if (!hosted) {
      this.#answer({ op: "failed", request, message: `No terminal ${id} on the parser thread` });
      return;
    }
    this.#answerOf(hosted, question).then(
      (value) => this.#answer({ op: "answer", request, value }),
      (error: unknown) => this.#answer({ op: "failed", request, message: error instanceof Error ? error.message : String(error) }),
    );
  }

  async #answerOf(hosted: Hosted, question: Question): Promise<unknown> {
    if (question.kind === "snapshot") return this.#snapshot(hosted);
    await hosted.queue.settled();
    if (question.kind === "settled") return null;
    if (hosted.closed) throw new Error("the screen mirror is disposed");
    const { terminal } = hosted;
    switch (question.kind) {
      case "readLines":
        return lastLines(terminal.buffer.normal, question.max, terminal.cols);
      case "currentLine": {
        const buffer = terminal.buffer.active;
        return cursorLineAt(buffer, buffer.baseY + buffer.cursorY, terminal.cols);
      }
    }
  }

  /**
   * At the first clean point once everything sent so far is parsed; if the
   * queue drains without one, as it stands (marked unclean), and the main
   * thread, which knows the unfinished sequence, completes it.
   */
  async #snapshot(hosted: Hosted): Promise<TerminalSnapshot> {
    const taken = await hosted.queue.atCleanBoundary((offset) => take(hosted, offset, true));
    if (taken) return taken;
    if (hosted.closed) throw new Error("the screen mirror is disposed");
    return take(hosted, hosted.queue.parsed, hosted.queue.parsedState.clean);
  }

  #close(id: number): void {
    const hosted = this.#hosted.get(id);
    if (!hosted) return;
    this.#hosted.delete(id);
    this.#parsedCounts.delete(id);
    hosted.closed = true;
    hosted.queue.dispose();
    dropQueuedWrites(hosted.terminal);
    hosted.history.dispose();
    hosted.palette[Symbol.dispose]();
    // xterm.js's dispose keeps the buffers; a reset drops them.
    hosted.terminal.reset();
    hosted.terminal.dispose();
  }

  #parsed(id: number, bytes: number): void {
    this.#parsedCounts.set(id, bytes);
    if (this.#flushQueued) return;
    this.#flushQueued = true;
    // xterm.js parses in slices of several writes: one message per slice.
    queueMicrotask(() => this.#flushParsed());
  }

  #flushParsed(): void {
    this.#flushQueued = false;
    if (this.#parsedCounts.size === 0) return;
    this.#post({ op: "parsed", counts: [...this.#parsedCounts] });
    this.#parsedCounts.clear();
  }

  #answer(message: FromParser): void {
    this.#flushParsed();
    this.#post(message);
  }
}

/** Serialize `hosted`'s screen as it stands, `offset` bytes in. */
function take(hosted: Hosted, offset: number, clean: boolean): TerminalSnapshot {
  const { terminal, history, queue, palette } = hosted;
  return {
    // The colours first, so the client draws the screen in them from the start.
    data: palette.sequence() + serializeScreen(terminal, history, queue.parsedState.resets),
    cols: terminal.cols,
    rows: terminal.rows,
    offset,
    fullScreen: terminal.buffer.active.type === "alternate",
    clean,
  };
}
