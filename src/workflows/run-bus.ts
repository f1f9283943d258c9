import type { Run, StoredRunEvent } from "./runs.ts";
import type { WorkflowStatus } from "./workflow.ts";

/** Which run an update is about. */
export type RunRef = Pick<Run, "id" | "workflowId" | "projectId" | "number" | "trigger">;

/**
 * How a run ended, in the distinctions delivery needs: a failure (a fixed
 * neutral notice), a cancel before start (a waiting retry counts; its notice
 * only says cancelled), a cancel while working (silent), a workflow that was
 * no longer active when the run's turn came, or the agent package switched off
 * for the workflow's creator (each a fixed notice).
 */
export type RunOutcome =
  | { kind: "succeeded" }
  | { kind: "failed"; error: string }
  | { kind: "cancelled-before-start"; wasWaitingRetry: boolean }
  | { kind: "cancelled-while-working" }
  | { kind: "workflow-not-active"; status: WorkflowStatus }
  | { kind: "package-off" };

/** One update of a run, in order: status changes, each event as it is produced, then the outcome. */
export type RunUpdate =
  | { type: "status"; run: RunRef; status: "running" | "waiting-retry" }
  | { type: "event"; run: RunRef; event: StoredRunEvent }
  | { type: "finished"; run: RunRef; outcome: RunOutcome };

/** Which updates a subscriber wants: one run's, one workflow's, or (empty) all. */
export interface RunFilter {
  runId?: string;
  workflowId?: string;
}

/** A subscriber. Called synchronously as the update happens; it must not throw (a throw is logged and ignored). */
export type RunListener = (update: RunUpdate) => void;

/**
 * The in-process stream of run updates a delivery layer subscribes to.
 *
 * @example
 * const stop = bus.subscribe({ runId }, (u) => { if (u.type === "event" && u.event.type === "answer") send(u.event.text); });
 */
export class RunBus {
  readonly #listeners = new Set<{ filter: RunFilter; listener: RunListener }>();

  constructor(private readonly onListenerError: (error: unknown) => void = (e) => console.error("hatch: run listener failed", e)) {}

  /** Subscribe; returns the unsubscribe. */
  subscribe(filter: RunFilter, listener: RunListener): () => void {
    const entry = { filter, listener };
    this.#listeners.add(entry);
    return () => this.#listeners.delete(entry);
  }

  /** Deliver an update to every matching subscriber. */
  publish(update: RunUpdate): void {
    for (const { filter, listener } of this.#listeners) {
      if (filter.runId && filter.runId !== update.run.id) continue;
      if (filter.workflowId && filter.workflowId !== update.run.workflowId) continue;
      try {
        listener(update);
      } catch (error) {
        this.onListenerError(error);
      }
    }
  }
}
