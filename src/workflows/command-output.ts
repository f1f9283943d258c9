import { RUN_EVENT_TYPES, type RunEvent } from "./runner.ts";

const EVENT_TYPES: ReadonlySet<string> = new Set(RUN_EVENT_TYPES);

/**
 * Reads a runner command's stdout as it arrives. A line holding a JSON object
 * with a known `type` (and a string `text`) is an event; the events of a chunk
 * are emitted at once, together; every other line is plain text, which
 * together makes the turn's one answer.
 *
 * @example
 * const output = new CommandOutput((batch) => events.push(...batch));
 * output.push(bytes); output.end(); output.plainText(); // "hello"
 */
export class CommandOutput {
  readonly #decoder = new TextDecoder();
  /** The unterminated line so far, in pieces: joined once its newline comes, so a long line costs its length, not its square. */
  #partial: string[] = [];
  #plain: string[] = [];
  #bytes = 0;

  constructor(private readonly emit: (events: RunEvent[]) => void) {}

  /** Bytes read so far (the runner caps them). */
  get bytes(): number {
    return this.#bytes;
  }

  /** Feed a chunk of stdout. */
  push(chunk: Uint8Array): void {
    this.#bytes += chunk.byteLength;
    const text = this.#decoder.decode(chunk, { stream: true });
    const last = text.lastIndexOf("\n");
    if (last === -1) {
      this.#partial.push(text);
      return;
    }
    const lines = (this.#partial.join("") + text.slice(0, last)).split("\n");
    this.#partial = [text.slice(last + 1)];
    this.#emit(lines);
  }

  /** Stdout closed: the last unterminated line counts too. */
  end(): void {
    const rest = this.#partial.join("") + this.#decoder.decode();
    this.#partial = [];
    if (rest) this.#emit([rest]);
  }

  /** The plain (non-event) lines, trimmed: the answer when non-empty. */
  plainText(): string {
    return this.#plain.join("\n").trim();
  }

  /** One emit per chunk: its events are stored in one transaction, not one each. */
  #emit(lines: string[]): void {
    const events: RunEvent[] = [];
    for (const line of lines) {
      const event = parseEventLine(line);
      if (event) events.push(event);
      else this.#plain.push(line.replace(/\r$/, ""));
    }
    if (events.length > 0) this.emit(events);
  }
}

/** The event a line declares, or null when the line is plain text. */
export function parseEventLine(line: string): RunEvent | null {
  const trimmed = line.trim();
  if (!trimmed.startsWith("{")) return null;
  let value: unknown;
  try {
    value = JSON.parse(trimmed);
  } catch {
    return null;
  }
  if (!value || typeof value !== "object" || Array.isArray(value)) return null;
  const { type, text } = value as { type?: unknown; text?: unknown };
  if (typeof type !== "string" || !EVENT_TYPES.has(type)) return null;
  if (text !== undefined && typeof text !== "string") return null;
  return { type: type as RunEvent["type"], text: text ?? "" };
}
