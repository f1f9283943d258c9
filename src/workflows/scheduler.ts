import { Cron } from "croner";
import { HatchError } from "../platform/index.ts";
import { MANUAL_SCHEDULE, SCHEDULE_TIMEZONE, type Workflow } from "./workflow.ts";
import type { Workflows } from "./workflows.ts";

/** Collaborators of the scheduler. */
export interface WorkflowSchedulerOptions {
  workflows: Workflows;
  /** Fire a scheduled run (the engine's `fire`); refusals are expected and swallowed. */
  fire(workflow: Workflow): Promise<{ id: string }>;
  /** Whether a run has not finished yet (queued, waiting to retry, or running). */
  unfinished(runId: string): boolean;
  /** The scheduled runs not finished when the scheduler starts, oldest first: those a restart picked up. */
  unfinishedScheduledRuns?(): readonly { workflowId: string; runId: string }[];
  onError?: (error: unknown) => void;
  /** Where a skipped tick is reported (once per streak); console.warn by default. */
  onSkip?: (line: string) => void;
}

/**
 * The in-process scheduler: one croner job per active workflow with a cron
 * schedule. `sync` after every change to a workflow; message triggers are not
 * its business, so schedule edits never touch them.
 *
 * A tick is skipped while the workflow's last scheduled run has not finished:
 * a schedule faster than its runs (every minute, a run of five) would
 * otherwise queue a run per tick until the spend limit, or, in fresh mode,
 * where its runs do not wait for each other, fill every worker slot, holding
 * the pool from every other workflow. A schedule has one run at a time.
 */
export class WorkflowScheduler implements AsyncDisposable {
  readonly #jobs = new Map<string, { schedule: string; cron: Cron }>();
  /** Per workflow, its last accepted scheduled run, and whether the ticks since were skipped. */
  readonly #lastRuns = new Map<string, { runId: string; skipping: boolean }>();
  #stopped = false;

  constructor(private readonly options: WorkflowSchedulerOptions) {}

  /** Schedule every active workflow with a cron schedule. */
  start(): void {
    // A run the last server queued (or left waiting to retry) is still its schedule's one run: the ticks wait for it.
    for (const { workflowId, runId } of this.options.unfinishedScheduledRuns?.() ?? []) this.#lastRuns.set(workflowId, { runId, skipping: false });
    for (const workflow of this.options.workflows.scheduled()) this.sync(workflow.id);
  }

  /** Bring one workflow's job in line with its row (created, edited, paused or deleted). */
  sync(workflowId: string): void {
    if (this.#stopped) return;
    const workflow = this.options.workflows.get(workflowId);
    const wanted = workflow && workflow.status === "active" && workflow.schedule !== MANUAL_SCHEDULE ? workflow.schedule : null;
    const current = this.#jobs.get(workflowId);
    if (current?.schedule === wanted) return;
    current?.cron.stop();
    this.#jobs.delete(workflowId);
    // The last run outlives an edit of the schedule or a pause: the new job must wait for it too.
    if (!workflow) this.#lastRuns.delete(workflowId);
    if (!wanted) return;
    let cron: Cron;
    try {
      cron = new Cron(wanted, { timezone: SCHEDULE_TIMEZONE, mode: "5-or-6-parts", unref: true, catch: (e) => this.#error(e) }, () => this.#fire(workflowId));
    } catch (error) {
      // A row written before a stricter check (or by hand) must not stop the server starting or the other schedules: this one just never ticks.
      return this.#error(new Error(`The schedule "${wanted}" of workflow ${workflowId} cannot be run, so it will not fire: ${(error as Error).message}`));
    }
    this.#jobs.set(workflowId, { schedule: wanted, cron });
  }

  /** Ids of the workflows with a live job. */
  scheduledIds(): string[] {
    return [...this.#jobs.keys()];
  }

  /** Stop every job. */
  async [Symbol.asyncDispose](): Promise<void> {
    this.#stopped = true;
    for (const { cron } of this.#jobs.values()) cron.stop();
    this.#jobs.clear();
    this.#lastRuns.clear();
  }

  #fire(workflowId: string): void {
    const workflow = this.options.workflows.get(workflowId);
    if (!workflow) return this.sync(workflowId);
    const last = this.#lastRuns.get(workflowId);
    if (last && this.options.unfinished(last.runId)) {
      if (!last.skipping) (this.options.onSkip ?? console.warn)(`hatch: skipping the scheduled fires of workflow ${workflowId} until its run ${last.runId}, fired by the schedule, finishes`);
      last.skipping = true;
      return;
    }
    this.options.fire(workflow).then(
      (run) => {
        // Even when a sync replaced or dropped the job meanwhile (edited, paused): whatever job comes next waits for this run.
        if (!this.#stopped && this.options.workflows.get(workflowId)) this.#lastRuns.set(workflowId, { runId: run.id, skipping: false });
      },
      (error: unknown) => {
        // A paused workflow or a spent budget refuses; the engine already audited a spend refusal and logged a run it could not record.
        if (!(error instanceof HatchError)) this.#error(error);
      },
    );
  }

  #error(error: unknown): void {
    (this.options.onError ?? ((e) => console.error("hatch: scheduled fire failed", e)))(error);
  }
}
