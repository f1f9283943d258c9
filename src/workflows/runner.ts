import type { Prompt } from "./prompt.ts";
import type { RunnerSettings, Workflow } from "./workflow.ts";

/** The events a run streams, in order. */
export const RUN_EVENT_TYPES = ["note", "answer", "handoff", "background", "error"] as const;

/**
 * One event of a run:
 * - `note`: text between tool calls (delivered only where the binding asks for everything);
 * - `answer`: a finished turn's answer (each is delivered as it ends);
 * - `handoff`: the work went to a background subagent;
 * - `background`: the later result of that subagent;
 * - `error`: the runner reports the turn failed (the run ends `failed` with this text on its row).
 */
export interface RunEvent {
  type: (typeof RUN_EVENT_TYPES)[number];
  text: string;
}

/** What a runner is asked to do: one turn of one workflow. */
export interface RunnerRequest<S extends RunnerSettings = RunnerSettings> {
  runId: string;
  workflow: Workflow;
  settings: S;
  prompt: Prompt;
  /** Aborted when the run is cancelled or the server stops: stop working and return with `stopped`. */
  signal: AbortSignal;
  /**
   * Stream events, in order; they are stored and delivered at once, the events
   * of one call in one transaction (so pass what arrived together together).
   * Past MAX_RUN_EVENTS the rest are dropped, `signal` is aborted and the run fails.
   */
  emit(events: readonly RunEvent[]): void;
  /**
   * Say the turn is over before `run` returns (the command exited; only its
   * output is still being read): from then on `signal` stops nothing, and
   * what the turn wrote is still emitted, so a cancel in that window keeps
   * the answer.
   */
  turnEnded?(): void;
}

/** What a finished turn reports besides its events. */
export interface RunnerResult {
  /** Model tokens spent (0 for runners without a model); counted against the project's spend limit. */
  tokensUsed: number;
  /**
   * Whether `signal` stopped the turn before it was done. A runner that did its
   * turn says false even if the signal came during its cleanup after: its
   * answer was already delivered, and a cancel then is too late to stop it.
   */
  stopped: boolean;
}

/** A way of running a workflow's turn. `command` and `openai` ship. */
export interface Runner<S extends RunnerSettings = RunnerSettings> {
  run(request: RunnerRequest<S>): Promise<RunnerResult>;
}

/** What a turn that failed still tells: the tokens its backend billed, and when the backend asked to be tried again. */
export interface RunnerErrorDetails {
  /** Tokens the backend reported spending on the failed turn; they count against the spend limit all the same. */
  tokensUsed?: number;
  /** The backend's own wait before a retry (Retry-After), in milliseconds. */
  retryAfterMs?: number;
}

/** A turn that failed in a way the runner understood: its message goes on the run row. */
export abstract class RunnerError extends Error {
  constructor(
    message: string,
    readonly details: RunnerErrorDetails = {},
  ) {
    super(message);
  }
}

/** The runner could not reach its backend, or the backend was busy: the run waits and retries. */
export class RunnerUnavailableError extends RunnerError {
  override name = "RunnerUnavailableError";
}

/** The runner's backend said no, or the turn failed: final; the message goes on the run row. */
export class RunnerFailedError extends RunnerError {
  override name = "RunnerFailedError";
}
