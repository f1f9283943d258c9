import { eq, max, sql } from "drizzle-orm";
import { workflowRunEvents, type Db } from "../db/index.ts";
import { storableText } from "./storable-text.ts";
import type { RunEvent } from "./runner.ts";

/** An event as stored: numbered from 1 within its run. */
export interface StoredRunEvent extends RunEvent {
  seq: number;
  at: number;
}

/**
 * One run's events as its runner streams them. The run's last number is read
 * once, then counted here, and each batch (a chunk of a command's stdout) is
 * written in one transaction: a command printing thousands of event lines costs
 * one commit per chunk, not a read and a commit per line.
 *
 * @example
 * const log = runs.eventLog(runId);
 * log.append([{ type: "note", text: "looking" }, { type: "answer", text: "42" }]); // seq 1 and 2
 */
export class RunEventLog {
  #last: number;
  readonly #insert;

  constructor(
    private readonly db: Db,
    readonly runId: string,
    private readonly now: () => number,
  ) {
    // A run already holding events (a retried turn) is numbered after them.
    this.#last = db.select({ n: max(workflowRunEvents.seq) }).from(workflowRunEvents).where(eq(workflowRunEvents.runId, runId)).get()?.n ?? 0;
    this.#insert = db
      .insert(workflowRunEvents)
      .values({ runId, seq: sql.placeholder("seq"), type: sql.placeholder("type"), text: sql.placeholder("text"), at: sql.placeholder("at") })
      .prepare();
  }

  /** Events the run holds. */
  get count(): number {
    return this.#last;
  }

  /** Store events after the run's last, in one transaction; returns them as stored, in order. */
  append(events: readonly RunEvent[]): StoredRunEvent[] {
    if (events.length === 0) return [];
    const at = this.now();
    const stored = events.map((event, i) => ({ type: event.type, text: storableText(event.text), seq: this.#last + 1 + i, at }));
    this.db.$client.transaction(() => {
      for (const event of stored) this.#insert.run(event);
    })();
    // Counted only once committed: a batch that rolled back leaves no gap in the numbering.
    this.#last += stored.length;
    return stored;
  }
}
