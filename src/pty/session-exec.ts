import { HatchError } from "../platform/index.ts";
import { stripAnsi } from "./ansi.ts";
import type { CommandSpawner } from "./command-spawn.ts";
import type { LaunchSpec } from "./launch-spec.ts";
import { shellCommand } from "./shell-command.ts";

/** What an exec returns. */
export interface ExecResult {
  exitCode: number | null;
  /** ANSI-stripped stdout and stderr, interleaved as they arrived, capped. */
  output: string;
  truncated: boolean;
  timedOut: boolean;
  durationMs: number;
}

/** Options of one exec. */
export interface ExecOptions {
  command: string;
  timeoutMs: number;
  outputCapBytes: number;
  /** The shell to run `command` with (as `shell -c command`, the text kept off the command line: see `shellCommand`). */
  shell: string;
  /** Aborted when the session closes: the command is killed and the exec refused with 409 `session_closed`. */
  signal?: AbortSignal;
}

/**
 * After a kill, how long output still in the pipes is read before answering:
 * a process that left the command's group (setsid) can hold them open forever.
 */
const PIPE_GRACE_MS = 200;

/**
 * Raw bytes kept per byte of the cap. The cap applies to the ANSI-stripped
 * text, and colour codes can be most of what a program writes (`ls --color`,
 * `grep --color`, test runners), so more raw output than the cap is held
 * before stripping; past this bound the rest is read and discarded.
 */
const RAW_BYTES_PER_CAPPED_BYTE = 4;

/**
 * Run a command as its own process inside a session's sandbox. Output past the
 * cap is read and discarded, so a chatty command never blocks on a full pipe.
 * The answer waits for the output to end (like ssh), but at the timeout, or
 * when the session closes, the whole process group is killed and the answer
 * goes out a moment later even if an escaped process still holds the pipes.
 */
export async function execInSession(launch: LaunchSpec, options: ExecOptions, spawn: CommandSpawner): Promise<ExecResult> {
  if (options.signal?.aborted) throw sessionClosed();
  const started = performance.now();
  const { argv, env } = shellCommand(options.shell, options.command);
  const child = spawn({ ...launch, env: { ...launch.env, ...env } }, argv);
  const chunks: Uint8Array[] = [];
  const rawCap = options.outputCapBytes * RAW_BYTES_PER_CAPPED_BYTE;
  let kept = 0;
  let rawTruncated = false;
  const readers = [child.stdout.getReader(), child.stderr.getReader()];
  const collect = async (reader: ReadableStreamDefaultReader<Uint8Array>) => {
    for (let next = await reader.read(); !next.done; next = await reader.read()) {
      const chunk = next.value;
      const room = rawCap - kept;
      if (chunk.length > room) rawTruncated = true;
      if (room <= 0) continue;
      const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
      chunks.push(part);
      kept += part.length;
    }
  };
  let stopped: "timeout" | "closed" | null = null;
  const killed = Promise.withResolvers<void>();
  const stop = (why: "timeout" | "closed") => {
    if (stopped) return;
    stopped = why;
    child.kill("SIGKILL");
    killed.resolve();
  };
  const timer = setTimeout(() => stop("timeout"), options.timeoutMs);
  const onClose = () => stop("closed");
  options.signal?.addEventListener("abort", onClose, { once: true });
  try {
    const output = Promise.all(readers.map(collect));
    const drained = Promise.race([output, killed.promise.then(() => Promise.race([output, new Promise((resolve) => setTimeout(resolve, PIPE_GRACE_MS))]))]);
    const [code] = await Promise.all([child.exited, drained]);
    if (stopped === "closed") throw sessionClosed();
    const { text, truncated } = capText(stripAnsi(new TextDecoder().decode(concat(chunks, kept))), options.outputCapBytes, rawTruncated);
    return { exitCode: stopped === "timeout" ? null : code, output: text, truncated, timedOut: stopped === "timeout", durationMs: Math.round(performance.now() - started) };
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener("abort", onClose);
    // Stop reading pipes a stray process may still hold.
    for (const reader of readers) reader.cancel().catch(() => {});
  }
}

/**
 * The stripped output cut to at most `capBytes` of UTF-8, on a character
 * boundary. When the raw output was cut, an escape sequence may have been cut
 * in half, and what is left of it (from the last ESC on, which stripping
 * would otherwise have removed) is dropped.
 */
function capText(stripped: string, capBytes: number, rawTruncated: boolean): { text: string; truncated: boolean } {
  let text = stripped;
  if (rawTruncated) {
    const lastEscape = text.lastIndexOf("\x1b");
    if (lastEscape >= 0 && text.length - lastEscape <= MAX_CUT_ESCAPE) text = text.slice(0, lastEscape);
  }
  // encodeInto writes whole characters only, so `read` ends on a character boundary.
  const room = new Uint8Array(capBytes);
  const { read } = new TextEncoder().encodeInto(text, room);
  return read < text.length ? { text: text.slice(0, read), truncated: true } : { text, truncated: rawTruncated };
}

/** Longest tail taken for a cut escape sequence (OSC titles and links run long). */
const MAX_CUT_ESCAPE = 4096;

function sessionClosed(): HatchError {
  return new HatchError("session_closed", 409, "The session was closed while the command ran: the command was stopped");
}

function concat(chunks: Uint8Array[], length: number): Uint8Array {
  const out = new Uint8Array(length);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.length;
  }
  return out;
}
