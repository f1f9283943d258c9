import { badRequest, conflict, HatchError, notFound } from "../platform/index.ts";
import { creatorFireRefusal } from "./access.ts";
import type { RunListener } from "./run-bus.ts";
import { CreatorAccessLost, creatorRefusal, executeRun, finish, recordOutcome, STOPPED_ERROR, type RunExecutionDeps } from "./run-execution.ts";
import type { RunSource } from "./run-source.ts";
import { FINISHED_STATUSES, type Run, type TriggerKindOfRun } from "./runs.ts";
import type { Triggers } from "./triggers.ts";
import type { WorkerPool } from "./worker-pool.ts";
import type { FireTarget } from "./workflows.ts";

/** Longest fire text, in characters (Unicode code points), as the specification limits it (the fire endpoint; runs by hand too). */
export const MAX_FIRE_TEXT_LENGTH = 4000;
/**
 * Longest text of a channel message fire. The specification limits only the
 * fire endpoint's body; a platform message may be longer (4,096 characters on
 * Telegram) and messages of one peer within 2 seconds coalesce into one fire,
 * so a message gets ten platform messages' worth, a bound on what a prompt holds.
 */
export const MAX_MESSAGE_TEXT_LENGTH = 40_000;

/** A fire: which workflow, what fired it, the untrusted text, and where the text came from. */
export interface FireRequest {
  workflowId: string;
  trigger: { id: string | null; kind: TriggerKindOfRun };
  /** Untrusted; appended after the instruction as delimited context, never interpolated. */
  text?: string | null;
  source: RunSource;
  /** Subscribed before the run is queued (so nothing is missed) and dropped after its outcome. */
  onUpdate?: RunListener;
}

/** A channel message firing the workflow its binding's message trigger points at. */
export interface MessageFire {
  bindingId: string;
  text: string;
  platform: string;
  peer: { id: string; displayName: string };
  linkedUser: { id: string; email: string };
  onUpdate?: RunListener;
}

/** Collaborators of the engine: everything a run's execution needs, plus the pool and triggers. */
export interface WorkflowEngineOptions extends Omit<RunExecutionDeps, "stopping" | "recordLater"> {
  pool: WorkerPool;
  triggers: Triggers;
}

/**
 * Accepts fires and runs them through the bounded pool. One-thread runs of a
 * workflow share a pool key, so they run one at a time in order and each sees
 * the earlier turns; fresh runs are independent. Disposing it stops the pool;
 * runs still queued stay queued in the database and `recover` picks them up.
 */
export class WorkflowEngine implements AsyncDisposable {
  #stopping = false;
  /** Set once the pool has stopped: nothing is put off any more (see `#recordLater`). */
  #stopped = false;
  /** Outcomes the database refused, by run: the next try and its timer. */
  readonly #unrecorded = new Map<string, { timer: ReturnType<typeof setTimeout>; work: () => void }>();
  readonly #deps: RunExecutionDeps;
  /**
   * The last refusal (code or limit, and reason) of each schedule refused and
   * not accepted since: a refusal is audited only when it differs from the one
   * before, since a per-second schedule would otherwise write 86,400 entries a day.
   */
  readonly #refusedSchedules = new Map<string, string>();

  constructor(private readonly options: WorkflowEngineOptions) {
    this.#deps = { ...options, stopping: () => this.#stopping, recordLater: (runId, delayMs, work) => this.#recordLater(runId, delayMs, work) };
  }

  /**
   * Fire a workflow: resolves with the queued run once its row is committed
   * (fires of one event-loop turn share one transaction), and only then is the
   * run handed to the pool. Rejects with 400 `text_too_long` (4,000
   * characters; 40,000 for a channel message), 404
   * `workflow_not_found`, 409 `workflow_not_active`, `creator_not_member` or `creator_not_permitted`
   * (nothing is recorded as a run), 429 `spend_limit_reached` (recorded in the audit log), or 500
   * `run_not_recorded` when the row could not be written (nothing is queued
   * and the run is not counted).
   */
  async fire(request: FireRequest): Promise<Run> {
    const { runs, limits } = this.options;
    const workflow = this.#accept(request);
    const pending = runs.create({ workflow, trigger: request.trigger, text: request.text ?? null, source: request.source });
    // Counted now, before the row commits, so a burst in one turn cannot slip past the limit together; refunded if it never commits.
    limits.recordRuns(pending.projectId, pending.queuedAt, 1);
    let run: Run;
    try {
      run = await pending.recorded;
    } catch (error) {
      limits.recordRuns(pending.projectId, pending.queuedAt, -1);
      throw error;
    }
    if (request.onUpdate) this.#follow(run.id, request.onUpdate);
    this.#submit(run);
    return run;
  }

  /** Fire from a channel message through the binding's message trigger; 404 when the binding has none. */
  async fireMessage(message: MessageFire): Promise<Run> {
    const trigger = this.options.triggers.byBinding(message.bindingId);
    if (!trigger) throw notFound("trigger_not_found", `Cannot fire: binding "${message.bindingId}" has no message trigger`);
    const source: RunSource = { kind: "message", triggerId: trigger.id, platform: message.platform, peer: message.peer, linkedUser: message.linkedUser };
    return this.fire({ workflowId: trigger.workflowId, trigger: { id: trigger.id, kind: "message" }, text: message.text, source, onUpdate: message.onUpdate });
  }

  /**
   * Cancel a run. Before it started (queued, or waiting to retry) it ends
   * `cancelled` / `before-start`; while working its runner is stopped and it
   * ends `cancelled` / `while-working`. Resolves with the finished run; 409 when
   * it had already finished, or finished its turn as the cancel came.
   */
  async cancel(runId: string): Promise<Run> {
    const { runs, pool } = this.options;
    const run = runs.get(runId);
    if (!run) throw notFound("run_not_found", `Cannot find run "${runId}"`);
    if (FINISHED_STATUSES.includes(run.status)) throw conflict("run_finished", `Cannot cancel run "${runId}": it already ${run.status}`);
    // Its turn is over and only its outcome waits to be written (or an earlier cancel's): try that now, not the cancel.
    if (this.#recordNow(runId)) return this.#afterRefusedOutcome(runId);
    const finished = this.#finished(runId);
    if (pool.cancel(runId) !== "aborted") {
      const workflow = this.options.workflows.get(run.workflowId) ?? null;
      recordOutcome(this.#deps, run, workflow, { kind: "cancelled-before-start", wasWaitingRetry: run.status === "waiting-retry" });
      if (this.#unrecorded.has(runId)) throw outcomeNotRecorded(runId);
    }
    await finished;
    const ended = runs.get(runId)!;
    // It finished its turn while the cancel came (its answer already out): the cancel stopped nothing.
    if (ended.status !== "cancelled") throw conflict("run_finished", `Cannot cancel run "${runId}": it already ${ended.status}`);
    return ended;
  }

  /** A cancel's answer once a refused outcome was tried again: the run as recorded, or 503 while the database still refuses it. */
  #afterRefusedOutcome(runId: string): Run {
    const run = this.options.runs.get(runId)!;
    if (this.#unrecorded.has(runId) || !FINISHED_STATUSES.includes(run.status)) throw outcomeNotRecorded(runId);
    // The outcome waiting was this cancel's own, asked for before: it is what the caller asked for.
    if (run.status === "cancelled" && run.cancelled === "before-start") return run;
    throw conflict("run_finished", `Cannot cancel run "${runId}": it already ${run.status}`);
  }

  /**
   * Stop every working run whose creator may no longer run it (removed from the
   * project, their role lost `core.execute`, no longer owner or admin for an
   * `openai` runner, or the agent package switched off for their role): a run
   * executes with its creator's permissions at the time of the run, not only at
   * its start. Each ends as it would have at its start: failed with the reason
   * (which the audit log records too), or cancelled package-off. Resolves with
   * their ids once they have ended. Runs not yet started need nothing: they
   * check the same at their start.
   */
  async stopRunsOfRevokedCreators(): Promise<string[]> {
    const { runs, workflows, pool, platform } = this.options;
    const stopped: Promise<void>[] = [];
    const ids: string[] = [];
    // Only what this pool is running: every 15 s, so never a scan of every run ever kept.
    const running = pool.runningIds();
    if (running.length === 0) return [];
    for (const run of runs.unfinished({ ids: running })) {
      const workflow = run.status === "running" ? workflows.get(run.workflowId) : null;
      const refused = workflow && creatorRefusal(platform, workflow);
      if (!refused) continue;
      if (pool.cancel(run.id, new CreatorAccessLost(refused)) !== "aborted") continue;
      // The run ends on a later turn, once its runner has stopped: subscribing now misses nothing.
      stopped.push(this.#finished(run.id));
      ids.push(run.id);
    }
    await Promise.all(stopped);
    return ids;
  }

  /** Cancel every unfinished run of a workflow (before it is deleted). */
  async cancelAll(workflowId: string): Promise<void> {
    // Fires accepted this turn are not rows yet: commit them so they are cancelled too.
    this.options.runs.flush();
    const open = this.options.runs.unfinished({ workflowId });
    await Promise.all(open.map((r) => this.cancel(r.id).catch(() => undefined)));
  }

  /**
   * Pick up what a previous process left: queued and waiting runs are queued
   * again in order; runs it left `running` failed with the server.
   */
  recover(): void {
    for (const run of this.options.runs.unfinished()) {
      const workflow = this.options.workflows.get(run.workflowId);
      if (run.status === "running") finish(this.#deps, run, workflow, { kind: "failed", error: STOPPED_ERROR });
      // A run waiting to retry keeps its wait: a restart must not hit a struggling endpoint at once.
      else this.#submit(run, run.status === "waiting-retry" && run.retryAt !== null ? run.retryAt - this.#deps.now() : 0);
    }
  }

  /** Stop the pool: running runs end `failed` (the server stopped); queued ones wait for the next start. */
  async [Symbol.asyncDispose](): Promise<void> {
    // Fires already accepted get their rows before the database closes; the closed pool leaves them queued for `recover`.
    this.options.runs.flush();
    this.#stopping = true;
    await this.options.pool[Symbol.asyncDispose]();
    // Outcomes the database refused get one last try while it is open; a run still unrecorded then ends at the next start.
    this.#stopped = true;
    for (const runId of [...this.#unrecorded.keys()]) this.#recordNow(runId);
  }

  #recordLater(runId: string, delayMs: number, work: () => void): void {
    if (this.#stopped) return;
    const timer = setTimeout(() => this.#recordNow(runId), delayMs);
    this.#unrecorded.set(runId, { timer, work });
  }

  /** Try a refused outcome again now; true when it was one (whether or not the database took it this time). */
  #recordNow(runId: string): boolean {
    const pending = this.#unrecorded.get(runId);
    if (!pending) return false;
    clearTimeout(pending.timer);
    this.#unrecorded.delete(runId);
    pending.work();
    return true;
  }

  /** The checks before a run is recorded: text, workflow, status, then the spend limit (a refusal is audited). */
  #accept(request: FireRequest): FireTarget {
    const { workflows, limits, platform } = this.options;
    if (request.text) checkFireText(request.text, request.trigger.kind === "message" ? MAX_MESSAGE_TEXT_LENGTH : MAX_FIRE_TEXT_LENGTH);
    const workflow = workflows.fireTarget(request.workflowId);
    if (!workflow) throw notFound("workflow_not_found", `Cannot find workflow "${request.workflowId}"`);
    if (workflow.status !== "active") {
      throw new HatchError("workflow_not_active", 409, `Workflow "${workflow.name}" is ${workflow.status}: it does not fire until it is active`, { detail: { status: workflow.status } });
    }
    // A run executes as its creator: one who may not run it now could run none of them, and a schedule
    // would fill the project's day with failed runs that spend its budget (the run re-checks at start too).
    const refusal = creatorFireRefusal(platform, workflow, { scheduled: request.trigger.kind === "schedule" });
    if (refusal) {
      // A caller is answered; a schedule has none, so its refusal goes on the record (again only once it changes).
      if (request.trigger.kind === "schedule") this.#auditRefusal(request, workflow, { code: refusal.code, reason: refusal.reason });
      throw new HatchError(refusal.code, 409, `Workflow "${workflow.name}" does not fire: ${refusal.reason}`);
    }
    try {
      limits.check(workflow.projectId, workflow.runnerKind === "openai");
    } catch (error) {
      this.#auditRefusal(request, workflow, error instanceof HatchError ? { code: error.code, ...error.detail } : {});
      throw error;
    }
    if (request.trigger.kind === "schedule") this.#refusedSchedules.delete(workflow.id);
    return workflow;
  }

  /**
   * Audit a refused fire: always, except a schedule refused again for what
   * refused its tick before. The refusal counts as recorded only once its
   * entry is written, so a failed write is tried again at the next tick.
   */
  #auditRefusal(request: FireRequest, workflow: { id: string; projectId: string; createdBy: string }, detail: Record<string, unknown>): void {
    const scheduled = request.trigger.kind === "schedule";
    // One code can have several reasons (creator_not_permitted): a new reason is a new refusal.
    const refusal = `${String(detail.limit ?? detail.code ?? "")}|${String(detail.reason ?? "")}`;
    if (scheduled && this.#refusedSchedules.get(workflow.id) === refusal) return;
    this.options.platform.audit.write({ action: "workflow.fire.refused", userId: workflow.createdBy, projectId: workflow.projectId, target: workflow.id, detail: { ...detail, trigger: request.trigger.kind } });
    if (scheduled) this.#refusedSchedules.set(workflow.id, refusal);
  }

  /** Drop what the engine keeps of a deleted workflow. */
  forget(workflowId: string): void {
    this.#refusedSchedules.delete(workflowId);
    this.options.runs.forget(workflowId);
  }

  /** Resolves when the run has finished: call it before the outcome can be published (before a stop that finishes at once). */
  #finished(runId: string): Promise<void> {
    return new Promise<void>((resolve) => {
      const off = this.options.bus.subscribe({ runId }, (update) => {
        if (update.type !== "finished") return;
        off();
        resolve();
      });
    });
  }

  /** Hand a run's updates to a listener until its outcome; subscribed before the run is queued, so nothing is missed. */
  #follow(runId: string, listener: RunListener): void {
    const off = this.options.bus.subscribe({ runId }, (update) => {
      if (update.type === "finished") off();
      listener(update);
    });
  }

  #submit(run: Run, delayMs = 0): void {
    this.options.pool.submitAfter(
      {
        id: run.id,
        key: run.mode === "one-thread" ? run.workflowId : null,
        run: (signal) => executeRun(this.#deps, run.id, signal),
      },
      delayMs,
    );
  }
}

/** 503: how the run ended (or that it was cancelled) is known, and the database has not taken it yet; it is tried again. */
function outcomeNotRecorded(runId: string): HatchError {
  return new HatchError("outcome_not_recorded", 503, `Cannot cancel run "${runId}" now: how it ended could not be recorded yet (the database refused it); it is tried again`);
}

/**
 * 400 `text_too_long` past `limit` code points (an emoji is one character to
 * the person who typed it, two UTF-16 units to JavaScript).
 */
export function checkFireText(text: string, limit: number = MAX_FIRE_TEXT_LENGTH): void {
  if (text.length > limit && [...text].length > limit) {
    throw badRequest("text_too_long", `Cannot fire: "text" must be at most ${limit} characters`);
  }
  // JSON's \ud83d escape can carry half a character (a sender's slice() cut an emoji); stored, it would become U+FFFD.
  if (!text.isWellFormed()) throw badRequest("invalid_text", 'Cannot fire: "text" holds half a character (a lone UTF-16 surrogate)');
}
