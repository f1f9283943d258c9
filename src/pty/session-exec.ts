import { stripAnsi } from "./ansi.ts";
import type { CommandSpawner } from "./command-spawn.ts";
import type { LaunchSpec } from "./launch-spec.ts";

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
  /** The shell to run `command` with (`shell -c command`). */
  shell: string;
}

/**
 * Run a command as its own process inside a session's sandbox. Output past the
 * cap is read and discarded, so a chatty command never blocks on a full pipe;
 * at the timeout the whole process group is killed.
 */
export async function execInSession(launch: LaunchSpec, options: ExecOptions, spawn: CommandSpawner): Promise<ExecResult> {
  const started = performance.now();
  const child = spawn(launch, [options.shell, "-c", options.command]);
  const chunks: Uint8Array[] = [];
  let kept = 0;
  let truncated = false;
  const collect = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream) {
      const room = options.outputCapBytes - kept;
      if (room <= 0) {
        truncated = true;
        continue;
      }
      if (chunk.length > room) truncated = true;
      const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
      chunks.push(part);
      kept += part.length;
    }
  };
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill("SIGKILL");
  }, options.timeoutMs);
  try {
    const [code] = await Promise.all([child.exited, collect(child.stdout), collect(child.stderr)]);
    const output = stripAnsi(new TextDecoder().decode(concat(chunks, kept)));
    return { exitCode: timedOut ? null : code, output, truncated, timedOut, durationMs: Math.round(performance.now() - started) };
  } finally {
    clearTimeout(timer);
  }
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
