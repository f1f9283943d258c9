import { AGENT_PACKAGE, type Audit, type Platform } from "../platform/index.ts";
import { resolveRunAs } from "./access.ts";
import { buildPrompt } from "./prompt.ts";
import type { RunBus, RunOutcome, RunRef } from "./run-bus.ts";
import { RunnerError, RunnerUnavailableError, type Runner, type RunEvent } from "./runner.ts";
import type { CancelPhase, Run, Runs, ThreadLimit } from "./runs.ts";
import type { SpendLimits } from "./spend-limits.ts";
import type { CommandRunnerSettings, OpenAiRunnerSettings, RunnerSettings, Workflow } from "./workflow.ts";
import type { JobOutcome } from "./worker-pool.ts";
import type { Workflows } from "./workflows.ts";

/** The runners, by kind. */
export interface RunnerSet {
  command: Runner<CommandRunnerSettings>;
  openai: Runner<OpenAiRunnerSettings>;
}

/** Collaborators of a run's execution. */
export interface RunExecutionDeps {
  workflows: Workflows;
  runs: Runs;
  limits: SpendLimits;
  bus: RunBus;
  runners: RunnerSet;
  platform: Pick<Platform, "users" | "projects" | "roles"> & { audit: Audit };
  /** Delay before each retry of an unavailable runner; its length is the number of retries. */
  retryDelaysMs: readonly number[];
  /** How much of its past a one-thread run is given. */
  threadLimit: ThreadLimit;
  now(): number;
  /** True while the server shuts down: an abort then means "stopped", not "cancelled". */
  stopping(): boolean;
  /**
   * Try the outcome of run `runId` the database refused again after `delayMs`
   * (`recordOutcome`); at a stop, and at a cancel of the run, at once.
   */
  recordLater(runId: string, delayMs: number, work: () => void): void;
}

/**
 * Waits before trying again to record an outcome the database refused (a lock
 * held past the busy timeout, a full disk), then every 30 s: the run stays
 * `running` meanwhile, and its schedule skips, until the outcome is written.
 */
export const OUTCOME_RETRY_MS: readonly number[] = [1_000, 5_000, 30_000];

/** Longest Retry-After a run waits for; an endpoint asking for more is tried again then. */
export const MAX_RETRY_AFTER_MS = 15 * 60_000;

/** The message on a run the server stopped under. */
export const STOPPED_ERROR = "The server stopped while this run was working";

/**
 * The reason a working run is aborted with when its creator may no longer run
 * it (`creatorRefusal`): the run then ends as a run starting now would (failed
 * with the reason, or cancelled package-off), not as cancelled by someone.
 */
export class CreatorAccessLost {
  constructor(readonly outcome: CreatorRefusal) {}
}

/** Why the workflow's creator may not run it now. */
export type CreatorRefusal = { kind: "failed"; error: string } | { kind: "package-off" };

/**
 * Whether the creator may run the workflow now: still a member whose role may
 * run it (`resolveRunAs`), and the agent package not switched off for that
 * role. Null when they may.
 */
export function creatorRefusal(platform: RunExecutionDeps["platform"], workflow: Workflow): CreatorRefusal | null {
  const runAs = resolveRunAs(platform, workflow);
  if (!runAs.ok) return { kind: "failed", error: runAs.error };
  const { roles } = platform;
  return roles.packageVisible(workflow.projectId, AGENT_PACKAGE, roles.featuresOf(workflow.projectId, runAs.role)) ? null : { kind: "package-off" };
}

/**
 * Events one run may stream. A turn's notes, answers and hand-offs are a few
 * dozen; thousands mean a loop, and each is a row, a bus update and a delivery.
 */
export const MAX_RUN_EVENTS = 1000;

/** The error on a run stopped at MAX_RUN_EVENTS. */
export const TOO_MANY_EVENTS_ERROR = `The run streamed more than ${MAX_RUN_EVENTS} events: it was stopped, and the first ${MAX_RUN_EVENTS} are kept`;

/** The reference bus updates carry. */
export function runRef(run: Run): RunRef {
  return { id: run.id, workflowId: run.workflowId, projectId: run.projectId, number: run.number, trigger: run.trigger };
}

/**
 * Execute one queued run as the pool's job: check the workflow is still active
 * and the creator still may run it, stream the runner's events into the row and
 * the bus, then record the outcome (or ask the pool to retry later).
 */
export async function executeRun(deps: RunExecutionDeps, runId: string, signal: AbortSignal): Promise<JobOutcome> {
  const run = deps.runs.get(runId);
  const workflow = run && deps.workflows.get(run.workflowId);
  if (!run || !workflow || (run.status !== "queued" && run.status !== "waiting-retry")) return;
  const refusal = startRefusal(deps, workflow);
  if (refusal) return void recordOutcome(deps, run, workflow, refusal);
  if (signal.aborted) return void recordOutcome(deps, run, workflow, { kind: "cancelled-before-start", wasWaitingRetry: run.status === "waiting-retry" });
  try {
    if (!deps.runs.markRunning(runId)) return;
  } catch (error) {
    // Nothing ran: the run is still queued, and the pool tries it again.
    console.error(`hatch: cannot start run ${runId} (${(error as Error).message}); trying again in ${OUTCOME_RETRY_MS[0]! / 1000} s`);
    return { retryAfterMs: OUTCOME_RETRY_MS[0]! };
  }
  deps.bus.publish({ type: "status", run: runRef(run), status: "running" });
  const ended = await turnOutcome(deps, run, workflow, signal);
  if ("retryAfterMs" in ended) return ended;
  recordOutcome(deps, run, workflow, ended.outcome, ended.tokensUsed);
}

/** Run the turn and say how it ended, or when to try it again; the outcome is recorded by the caller. */
async function turnOutcome(deps: RunExecutionDeps, run: Run, workflow: Workflow, signal: AbortSignal): Promise<{ outcome: RunOutcome; tokensUsed: number } | { retryAfterMs: number }> {
  // Set once the runner says its turn is over: a cancel after that stopped nothing, whether the turn succeeded or failed.
  const turn = { over: false };
  try {
    const { tokensUsed, errorEvent, stopped } = await runTurn(deps, run, workflow, signal, turn);
    // Not `signal.aborted`: a cancel during the runner's cleanup, after its answer went out, stopped nothing.
    if (stopped) return { outcome: aborted(deps, signal), tokensUsed };
    return { outcome: errorEvent ? { kind: "failed", error: errorEvent } : { kind: "succeeded" }, tokensUsed };
  } catch (error) {
    const details = error instanceof RunnerError ? error.details : {};
    const tokensUsed = details.tokensUsed ?? 0;
    if (signal.aborted && !turn.over) return { outcome: aborted(deps, signal), tokensUsed };
    const attempt = run.attempts + 1;
    if (error instanceof RunnerUnavailableError && attempt <= deps.retryDelaysMs.length) {
      // The endpoint's own Retry-After when it asks for longer (up to a cap): sooner would be refused again.
      const delay = Math.max(deps.retryDelaysMs[attempt - 1]!, Math.min(details.retryAfterMs ?? 0, MAX_RETRY_AFTER_MS));
      try {
        deps.runs.markWaitingRetry(run.id, deps.now() + delay, error.message, tokensUsed);
      } catch (refused) {
        // The wait cannot be recorded: the run fails with the runner's error, recorded once the database takes it.
        console.error(`hatch: cannot record that run ${run.id} waits to retry (${(refused as Error).message})`);
        return { outcome: { kind: "failed", error: describe(error) }, tokensUsed };
      }
      if (tokensUsed > 0) deps.limits.recordTokens(run.projectId, tokensUsed);
      deps.bus.publish({ type: "status", run: runRef(run), status: "waiting-retry" });
      return { retryAfterMs: delay };
    }
    return { outcome: { kind: "failed", error: describe(error) }, tokensUsed };
  }
}

/**
 * Record an outcome; while the database refuses it, try again later
 * (`OUTCOME_RETRY_MS`), with the pool's slot free meanwhile. A run left
 * `running` would otherwise stay so until the next start, and a schedule,
 * which waits for its last run, would not fire until then either.
 */
export function recordOutcome(deps: RunExecutionDeps, run: Run, workflow: Pick<Workflow, "createdBy"> | null, outcome: RunOutcome, tokensUsed = 0, attempt = 0): void {
  try {
    finish(deps, run, workflow, outcome, tokensUsed);
  } catch (error) {
    const delay = OUTCOME_RETRY_MS[Math.min(attempt, OUTCOME_RETRY_MS.length - 1)]!;
    console.error(`hatch: cannot record how run ${run.id} ended (${(error as Error).message}); trying again in ${delay / 1000} s`);
    deps.recordLater(run.id, delay, () => recordOutcome(deps, run, workflow, outcome, tokensUsed, attempt + 1));
  }
}

/**
 * Give the runner its prompt (with the thread's earlier turns in one-thread
 * mode) and stream its events into the row and the bus, up to MAX_RUN_EVENTS:
 * past them the runner is stopped (through its signal, as a cancel stops it)
 * and the turn reports TOO_MANY_EVENTS_ERROR. `turn.over` is set when the
 * runner says its turn ended (`turnEnded`), for the caller too.
 */
async function runTurn(
  deps: RunExecutionDeps,
  run: Run,
  workflow: Workflow,
  signal: AbortSignal,
  turn: { over: boolean },
): Promise<{ tokensUsed: number; errorEvent: string | null; stopped: boolean }> {
  let errorEvent: string | null = null;
  const log = deps.runs.eventLog(run.id);
  const overflow = new AbortController();
  const emit = (events: readonly RunEvent[]) => {
    // Output after a cancel is dropped, as is output past the cap; but not what a turn already over wrote.
    if ((signal.aborted && !turn.over) || overflow.signal.aborted) return;
    const room = MAX_RUN_EVENTS - log.count;
    const kept = events.length > room ? events.slice(0, room) : events;
    for (const event of kept) if (event.type === "error") errorEvent ??= event.text || "The runner reported an error";
    // Published only once committed, each in order: a subscriber (delivery) never sees an event the row lacks.
    for (const event of log.append(kept)) deps.bus.publish({ type: "event", run: runRef(run), event });
    if (events.length > room) {
      errorEvent ??= TOO_MANY_EVENTS_ERROR;
      overflow.abort();
    }
  };
  const history = run.mode === "one-thread" ? deps.runs.thread(workflow.id, run.number, deps.threadLimit) : [];
  const prompt = buildPrompt(workflow.instruction, history, { text: run.input.text ?? "", source: run.input.source });
  const runner = deps.runners[workflow.runner.kind] as Runner<RunnerSettings>;
  const runnerSignal = AbortSignal.any([signal, overflow.signal]);
  try {
    const turnEnded = () => {
      turn.over = true;
    };
    const { tokensUsed, stopped } = await runner.run({ runId: run.id, workflow, settings: workflow.runner, prompt, signal: runnerSignal, emit, turnEnded });
    // Stopped at the cap alone, the turn failed with the cap's error; stopped by a cancel (or a stop), it was stopped.
    return { tokensUsed, errorEvent, stopped: stopped && signal.aborted };
  } catch (error) {
    const cancelled = signal.aborted && !turn.over;
    // Stopped at the cap: whatever the runner made of being stopped, the cap is why the turn failed.
    if (overflow.signal.aborted && !cancelled) return { tokensUsed: 0, errorEvent, stopped: false };
    // The runner said why it failed (an error event) before it ended badly (a non-zero exit, a timeout): its words are
    // the real error, not the exit's.
    if (errorEvent !== null && !cancelled) return { tokensUsed: error instanceof RunnerError ? (error.details.tokensUsed ?? 0) : 0, errorEvent, stopped: false };
    throw error;
  }
}

/**
 * Why a run must not start now, or null: the workflow stopped being active, the
 * creator lost access, the agent package is switched off for the creator's
 * role, the token budget is spent.
 */
function startRefusal(deps: RunExecutionDeps, workflow: Workflow): RunOutcome | null {
  if (workflow.status !== "active") return { kind: "workflow-not-active", status: workflow.status };
  const refused = creatorRefusal(deps.platform, workflow);
  if (refused) return refused;
  try {
    // Runs were counted at fire time; tokens are checked again because queued runs spend meanwhile.
    if (workflow.runner.kind === "openai") deps.limits.checkTokens(workflow.projectId);
  } catch (error) {
    return { kind: "failed", error: (error as Error).message };
  }
  return null;
}

function aborted(deps: RunExecutionDeps, signal: AbortSignal): RunOutcome {
  if (deps.stopping()) return { kind: "failed", error: STOPPED_ERROR };
  if (signal.reason instanceof CreatorAccessLost) {
    const { outcome } = signal.reason;
    return outcome.kind === "failed" ? { kind: "failed", error: `${outcome.error}: the run was stopped while it worked` } : outcome;
  }
  return { kind: "cancelled-while-working" };
}

function describe(error: unknown): string {
  if (error instanceof RunnerError) return error.message;
  return `The runner failed unexpectedly: ${(error as Error)?.message ?? String(error)}`;
}

/**
 * Record an outcome on the row, with a failure's audit entry in the same
 * transaction (refused, neither is kept, and both are tried again), then
 * publish it.
 */
export function finish(deps: Pick<RunExecutionDeps, "runs" | "bus" | "platform" | "limits">, run: Run, workflow: Pick<Workflow, "createdBy"> | null, outcome: RunOutcome, tokensUsed = 0): void {
  const finished = deps.platform.audit.recorded(
    () => deps.runs.finish(run.id, { ...rowEnd(outcome), tokensUsed }),
    (row) =>
      row && outcome.kind === "failed"
        ? { action: "workflow.run.failed", userId: workflow?.createdBy ?? null, projectId: run.projectId, target: run.id, detail: { workflowId: run.workflowId, error: outcome.error } }
        : null,
  );
  if (!finished) return;
  if (tokensUsed > 0) deps.limits.recordTokens(run.projectId, tokensUsed);
  deps.bus.publish({ type: "finished", run: runRef(run), outcome });
}

/** How an outcome is stored on the run row. */
function rowEnd(outcome: RunOutcome): { status: "succeeded" | "failed" | "cancelled"; error?: string; cancelled?: CancelPhase } {
  switch (outcome.kind) {
    case "succeeded":
      return { status: "succeeded" };
    case "failed":
      return { status: "failed", error: outcome.error };
    case "workflow-not-active":
      return { status: "cancelled", cancelled: "workflow-not-active", error: `The workflow was ${outcome.status} when this run's turn came` };
    case "package-off":
      return { status: "cancelled", cancelled: "package-off", error: `The ${AGENT_PACKAGE} package was switched off for the creator's role when this run's turn came` };
    case "cancelled-before-start":
      return { status: "cancelled", cancelled: "before-start" };
    case "cancelled-while-working":
      return { status: "cancelled", cancelled: "while-working" };
  }
}
