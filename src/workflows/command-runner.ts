import { mkdirSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { basename, join } from "node:path";
import { killMarkedProcesses, removeTree, type CgroupLeaf, type ProcessCgroups } from "../pty/index.ts";
import { CommandOutput } from "./command-output.ts";
import { renderDocument } from "./prompt.ts";
import { RunnerFailedError, type Runner, type RunnerRequest, type RunnerResult } from "./runner.ts";
import { runMark, runnerEnvironment } from "./runner-environment.ts";
import type { RunnerCommandSpawner, RunnerProcess } from "./spawn-runner-command.ts";
import type { CommandRunnerSettings } from "./workflow.ts";

/** Name prefix of each run's scratch dir under the scratch root. */
export const RUN_SCRATCH_PREFIX = "run-";
/** Stdout a turn may write: a chat answer is kilobytes; a megabyte means a runaway loop. */
export const MAX_COMMAND_OUTPUT_BYTES = 1024 * 1024;
/** Stderr kept for the error on the run row: the end of it says what went wrong. */
const STDERR_TAIL_BYTES = 2048;
/**
 * After the command exits or its group is killed, how long its pipes may take to
 * close before we stop reading: a background child it left (or a grandchild that
 * left the group) can hold them open, and output already written drains in far less.
 */
const PIPE_DRAIN_MS = 1000;

/** Collaborators of the command runner. */
export interface CommandRunnerOptions {
  /** The one spawn seam (confinement replaces it). */
  spawn: RunnerCommandSpawner;
  /** The server's environment before sensitive names are stripped. */
  baseEnv: Record<string, string | undefined>;
  /** Where each run gets a private scratch dir, removed when the run ends. */
  scratchRoot: string;
  /** Where each run gets a cgroup its command enters, so the run's end kills everything it started. */
  cgroups: ProcessCgroups;
}

/**
 * The embedded default runner: runs the workflow's command in a scratch dir with
 * the prompt (instruction, earlier turns, delimited untrusted input) on stdin.
 * Plain stdout is one `answer`; JSON lines with a `type` are events. The whole
 * process group is killed at the timeout or on cancel.
 */
export class CommandRunner implements Runner<CommandRunnerSettings> {
  constructor(private readonly options: CommandRunnerOptions) {
    mkdirSync(options.scratchRoot, { recursive: true, mode: 0o700 });
  }

  /** Run one turn (see the class). */
  async run(request: RunnerRequest<CommandRunnerSettings>): Promise<RunnerResult> {
    const scratch = await mkdtemp(join(this.options.scratchRoot, RUN_SCRATCH_PREFIX));
    try {
      // Named as its scratch dir is: unique in the data dir.
      const cgroup = this.options.cgroups.leaf(basename(scratch));
      const env = runnerEnvironment(this.options.baseEnv, { scratch, runId: request.runId, workflowId: request.workflow.id });
      let child: RunnerProcess;
      try {
        child = this.options.spawn({
          command: request.settings.command,
          cwd: scratch,
          env,
          stdin: renderDocument(request.prompt),
          projectId: request.workflow.projectId,
          createdBy: request.workflow.createdBy,
          cgroup,
        });
      } catch (error) {
        await cgroup.end();
        throw error;
      }
      const outcome = await supervise(child, request, cgroup);
      if (outcome.cancelled) return { tokensUsed: 0, stopped: true };
      if (outcome.problem) throw new RunnerFailedError(outcome.problem);
      if (outcome.answer) request.emit([{ type: "answer", text: outcome.answer }]);
      return { tokensUsed: 0, stopped: false };
    } finally {
      // Can take a while (a command that left many files): the turn's outcome was settled above, so a failure is the operator's to hear, not the run's.
      await removeTree(scratch).catch((error: unknown) => console.error(`hatch: could not remove the scratch dir of run ${request.runId}`, (error as Error).message));
    }
  }
}

/**
 * Read a child to its end under the timeout, the output cap and the cancel
 * signal. The run ends when the child exits, not when its pipes close: a
 * background process it left (`cmd &`, `nohup`) can hold them open for as long
 * as it lives, so after the exit the pipes get PIPE_DRAIN_MS, then what was read
 * is the output and whatever is left is killed. For the same reason a cancel
 * (the signal) after the exit stops nothing: the turn is over, and its answer
 * stands; `cancelled` says a cancel stopped the command.
 */
async function supervise(
  child: RunnerProcess,
  request: RunnerRequest<CommandRunnerSettings>,
  cgroup: CgroupLeaf,
): Promise<{ problem?: string; answer?: string; cancelled: boolean }> {
  const seconds = request.settings.timeoutSeconds;
  let problem: string | undefined;
  const stopReading = new AbortController();
  let drain: ReturnType<typeof setTimeout> | undefined;
  const drainThenStop = () => {
    drain ??= setTimeout(() => {
      // Kill first, so nothing writes into a pipe nobody reads any more.
      child.kill("SIGKILL");
      stopReading.abort();
    }, PIPE_DRAIN_MS);
  };
  const stop = (why?: string) => {
    problem ??= why;
    child.kill("SIGKILL");
    drainThenStop();
  };
  const timer = setTimeout(() => stop(`The command timed out after ${seconds} s`), seconds * 1000);
  let exitedFirst = false;
  let cancelled = false;
  const onAbort = () => {
    if (exitedFirst) return;
    cancelled = true;
    stop();
  };
  request.signal.addEventListener("abort", onAbort, { once: true });
  // A cancel that landed before the listener was added would otherwise leave the child to its timeout.
  if (request.signal.aborted) onAbort();
  const exited = child.exited.then((code) => {
    // The command finished in time; only the drain is left, and it is bounded.
    // Unless a cancel killed it: then the turn was stopped, and what it wrote meanwhile is dropped.
    if (!cancelled) {
      exitedFirst = true;
      request.turnEnded?.();
    }
    clearTimeout(timer);
    drainThenStop();
    return code;
  });
  const output = new CommandOutput(request.emit);
  try {
    const [, stderr, code] = await Promise.all([
      readStream(child.stdout, stopReading.signal, (chunk) => {
        output.push(chunk);
        if (output.bytes <= MAX_COMMAND_OUTPUT_BYTES) return;
        stop(`The command wrote more than ${MAX_COMMAND_OUTPUT_BYTES} bytes to stdout`);
        // No drain: nothing past the cap is wanted, and a writer outside the group (setsid) would be read until
        // it stopped, which `cat /dev/zero` never does. The pipes close now; the finally kills the writer.
        stopReading.abort();
      }),
      readTail(child.stderr, stopReading.signal),
      exited,
    ]);
    output.end();
    if (problem || cancelled) return { problem, cancelled };
    if (code !== 0) return { problem: `The command exited with code ${code}${stderr.trim() ? `: ${stderr.trim()}` : ""}`, cancelled };
    return { answer: output.plainText(), cancelled };
  } finally {
    clearTimeout(timer);
    clearTimeout(drain);
    request.signal.removeEventListener("abort", onAbort);
    // Whatever the command left running in the background ends with the run: the pool bounds runs, not leftovers.
    // That includes what left the process group (setsid): everything the run started is in its cgroup, where the
    // host has cgroups, and carries its HATCH_RUN_ID.
    child.kill("SIGKILL");
    await cgroup.end();
    await killMarkedProcesses(new Set([runMark(request.runId)])).catch((error: unknown) => console.error(`hatch: cannot end the processes of run ${request.runId}:`, error));
  }
}

async function readStream(stream: ReadableStream<Uint8Array>, stop: AbortSignal, onChunk: (chunk: Uint8Array) => void): Promise<void> {
  const reader = stream.getReader();
  const cancel = () => void reader.cancel().catch(() => {});
  stop.addEventListener("abort", cancel, { once: true });
  try {
    // Buffered chunks keep coming after a stop: none is handed on once it was asked for.
    while (!stop.aborted) {
      let chunk: Awaited<ReturnType<typeof reader.read>>;
      try {
        chunk = await reader.read();
      } catch {
        // Cancelled after a kill: what was read is all there is.
        return;
      }
      if (chunk.done || stop.aborted) return;
      // Not caught: an event the run cannot store (the database failed) ends the run now with that error,
      // where swallowing it would leave the command writing into a pipe nobody reads until its timeout.
      onChunk(chunk.value);
    }
  } finally {
    stop.removeEventListener("abort", cancel);
  }
}

async function readTail(stream: ReadableStream<Uint8Array>, stop: AbortSignal): Promise<string> {
  let tail = new Uint8Array(0);
  await readStream(stream, stop, (chunk) => {
    const joined = new Uint8Array(tail.byteLength + chunk.byteLength);
    joined.set(tail);
    joined.set(chunk, tail.byteLength);
    tail = joined.slice(Math.max(0, joined.byteLength - STDERR_TAIL_BYTES));
  });
  return new TextDecoder().decode(tail);
}
