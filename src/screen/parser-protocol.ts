import type { CursorLine } from "./buffer-text.ts";
import type { StreamState } from "./parse-queue.ts";

/**
 * The messages between the main thread and the parser thread. Each mirror's
 * terminal lives on the parser thread under a numeric id; output, resizes and
 * questions about it are posted in order, so a question is answered after
 * everything sent before it has been queued for parsing.
 *
 * @module
 */

/** The state of a terminal's screen, as a snapshot reports it (see ScreenSnapshot). */
export interface TerminalSnapshot {
  data: string;
  cols: number;
  rows: number;
  /** Bytes parsed when it was taken. */
  offset: number;
  fullScreen: boolean;
  /** Whether the parsed stream ended between sequences at `offset`. */
  clean: boolean;
}

/** A question about a terminal, answered once the output sent before it is parsed (snapshot: at the next clean point). */
export type Question =
  | { kind: "snapshot" }
  | { kind: "settled" }
  | { kind: "readLines"; max: number }
  | { kind: "currentLine" };

/** The answer type of each question. */
export interface Answers {
  snapshot: TerminalSnapshot;
  settled: null;
  readLines: string[];
  currentLine: CursorLine;
}

/** Main thread to parser thread. */
export type ToParser =
  | { op: "open"; id: number; cols: number; rows: number; scrollback: number }
  | { op: "write"; id: number; chunk: Uint8Array; state: StreamState }
  | { op: "resize"; id: number; cols: number; rows: number }
  | { op: "ask"; id: number; request: number; question: Question }
  | { op: "close"; id: number };

/** Parser thread to main thread. */
export type FromParser =
  /** Parsed byte counts per terminal id, sent before any answer that depends on them. */
  | { op: "parsed"; counts: [id: number, bytes: number][] }
  | { op: "answer"; request: number; value: unknown }
  | { op: "failed"; request: number; message: string };
