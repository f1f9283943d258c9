import { and, asc, desc, eq, getTableColumns, inArray, lt, sql, type SQL } from "drizzle-orm";
import { GroupCommit, workflowRunEvents, workflowRuns, type Db, type GroupCommitStats } from "../db/index.ts";
import { HatchError, notFound } from "../platform/index.ts";
import type { ThreadTurn } from "./prompt.ts";
import { RunEventLog, type StoredRunEvent } from "./run-event-log.ts";
import { uuidv7 } from "./run-id.ts";
import type { RunSource } from "./run-source.ts";
import type { Workflow, WorkflowMode } from "./workflow.ts";
import { storableText } from "./storable-text.ts";

/** A run's status. `waiting-retry`: the runner's backend was unreachable or busy; it runs again later. */
export type RunStatus = "queued" | "waiting-retry" | "running" | "succeeded" | "failed" | "cancelled";
/**
 * How a cancelled run ended: before it started (a waiting retry counts), while
 * working, because its workflow stopped being active, or because the agent
 * package was switched off for its creator.
 */
export type CancelPhase = "before-start" | "while-working" | "workflow-not-active" | "package-off";
/** What fired a run. */
export type TriggerKindOfRun = "webhook" | "message" | "schedule" | "manual";

/** Runs carry their events as stored (see run-event-log.ts). */
export type { StoredRunEvent };

/** A run as every API shows it. */
export interface Run {
  id: string;
  workflowId: string;
  projectId: string;
  number: number;
  trigger: { id: string | null; kind: TriggerKindOfRun };
  mode: WorkflowMode;
  status: RunStatus;
  input: { text: string | null; source: RunSource };
  /** The real error (kept here and in the audit log, never sent to a chat). */
  error: string | null;
  cancelled: CancelPhase | null;
  attempts: number;
  tokensUsed: number;
  queuedAt: number;
  startedAt: number | null;
  finishedAt: number | null;
  retryAt: number | null;
  events: StoredRunEvent[];
}

/**
 * A run as a list shows it: its last LISTED_EVENTS_PER_RUN events, each text
 * cut at LISTED_EVENT_TEXT_CHARS (marked `truncated`), and how many it holds;
 * its error is cut likewise (`errorTruncated`). A run may hold 1,000 events
 * and 1 MiB of answer or error, and a page 200 runs: whole, one page could
 * cost the server hundreds of megabytes. `get` has the rest.
 */
export interface ListedRun extends Omit<Run, "events"> {
  events: (StoredRunEvent & { truncated?: true })[];
  eventCount: number;
  errorTruncated?: true;
}

/** Events each run of a list carries: the last ones, where its answers are. */
export const LISTED_EVENTS_PER_RUN = 5;
/** Characters of each event's text a list carries. */
export const LISTED_EVENT_TEXT_CHARS = 1000;

/** What a new run records. */
export interface NewRun {
  workflow: Pick<Workflow, "id" | "projectId" | "mode">;
  trigger: { id: string | null; kind: TriggerKindOfRun };
  text: string | null;
  source: RunSource;
}

/**
 * A run accepted but not yet written. Its number is given when its row is
 * written, so a row that fails to write leaves no gap in the numbering.
 */
export interface PendingRun {
  projectId: string;
  queuedAt: number;
  /** The queued run once its row is committed; rejects with 500 `run_not_recorded` when it could not be written. */
  recorded: Promise<Run>;
}

/** The code of a fire whose run row could not be written (HTTP 500; nothing was queued). */
export const RUN_NOT_RECORDED = "run_not_recorded";

/** Statuses a run never leaves. */
export const FINISHED_STATUSES: readonly RunStatus[] = ["succeeded", "failed", "cancelled"];
const UNFINISHED: RunStatus[] = ["queued", "waiting-retry", "running"];

/** How much of a one-thread workflow's past a run is given. */
export interface ThreadLimit {
  /** The latest turns at most. */
  turns: number;
  /** Characters of their inputs and answers at most. */
  chars: number;
}

/** The events of an earlier turn that its prompt repeats: what the run answered. */
const THREAD_EVENT_TYPES = ["answer", "background"] as const;

type Row = typeof workflowRuns.$inferSelect;

/** The run store: rows, their events, and the counts spend limits need. */
export class Runs {
  // Prepared once: creating a run is on the fire endpoint's path.
  readonly #lastNumber;
  readonly #insert;
  /** New run rows are written in group commits: one transaction per turn of the event loop, not one per fire. */
  readonly #commits: GroupCommit;
  /**
   * The last number written per workflow (committed, or applied in the
   * transaction being written), so a burst does not read the same index end
   * once per row. Runs are only ever created by this process (the CLI never
   * fires), and the unique (workflow, number) index refuses a stale number
   * rather than storing it twice.
   */
  readonly #lastNumbers = new Map<string, number>();

  constructor(
    private readonly db: Db,
    private readonly now: () => number = Date.now,
    onFailure: (error: unknown, writes: number) => void = (error, writes) => console.error(`hatch: ${writes} run(s) could not be recorded`, error),
  ) {
    this.#commits = new GroupCommit(db, { onFailure });
    // ORDER BY ... LIMIT 1 walks the (workflow_id, number) index from its end; max() would scan every run of the workflow.
    this.#lastNumber = db
      .select({ n: workflowRuns.number })
      .from(workflowRuns)
      .where(eq(workflowRuns.workflowId, sql.placeholder("workflowId")))
      .orderBy(desc(workflowRuns.number))
      .limit(1)
      .prepare();
    const placeholders = Object.fromEntries(Object.keys(getTableColumns(workflowRuns)).map((c) => [c, sql.placeholder(c)]));
    this.#insert = db.insert(workflowRuns).values(placeholders as never).prepare();
  }

  /**
   * Record an accepted fire as a queued run, numbered after the workflow's
   * last one. The row joins this turn's group commit; `recorded` resolves with
   * the run once it is committed, and only then may anyone act on the run.
   */
  create(input: NewRun): PendingRun {
    const workflowId = input.workflow.id;
    const queuedAt = this.now();
    const row: Row = {
      id: `run-${uuidv7(queuedAt)}`,
      workflowId,
      projectId: input.workflow.projectId,
      number: 0,
      triggerId: input.trigger.id,
      triggerKind: input.trigger.kind,
      mode: input.workflow.mode,
      status: "queued",
      inputText: input.text === null ? null : storableText(input.text),
      source: JSON.stringify(input.source),
      error: null,
      cancelled: null,
      attempts: 0,
      tokensUsed: 0,
      queuedAt,
      startedAt: null,
      finishedAt: null,
      retryAt: null,
    };
    const write = () => {
      // Inside the transaction the index end includes the rows written before this one.
      row.number = (this.#lastNumbers.get(workflowId) ?? this.#lastNumber.get({ workflowId })?.n ?? 0) + 1;
      this.#insert.run(row);
      this.#lastNumbers.set(workflowId, row.number);
    };
    // Not written after all (its transaction rolled back): read the last number from the table next time.
    const forget = () => this.#lastNumbers.delete(workflowId);
    const recorded = this.#commits.write(write, forget).then(
      // The source as given, not parsed back from the JSON just made of it.
      () => toRun(row, [], input.source),
      notRecorded,
    );
    return { projectId: row.projectId, queuedAt, recorded };
  }

  /** Drop the last run number kept for a deleted workflow. */
  forget(workflowId: string): void {
    this.#lastNumbers.delete(workflowId);
  }

  /** Commit the rows still queued now (before the database closes). */
  flush(): void {
    this.#commits.flush();
  }

  /** What the group commit of new runs has done: transactions committed and rolled back, rows written and refused. */
  commitStats(): GroupCommitStats {
    return this.#commits.stats();
  }

  /** The run with its events, or null. */
  get(id: string): Run | null {
    const row = this.db.select().from(workflowRuns).where(eq(workflowRuns.id, id)).get();
    return row ? toRun(row, this.#events([id]).get(id) ?? []) : null;
  }

  /** The run of this workflow, or 404. */
  require(workflowId: string, id: string): Run {
    const run = this.get(id);
    if (!run || run.workflowId !== workflowId) throw notFound("run_not_found", `Cannot find run "${id}"`);
    return run;
  }

  /**
   * A workflow's runs, newest first, each with the end of its events (see
   * ListedRun). `before`: only runs numbered below it, the next page after a
   * page whose last run had that number.
   */
  list(workflowId: string, options: { limit?: number; status?: RunStatus; before?: number } = {}): ListedRun[] {
    const where: SQL[] = [eq(workflowRuns.workflowId, workflowId)];
    if (options.status) where.push(eq(workflowRuns.status, options.status));
    if (options.before !== undefined) where.push(lt(workflowRuns.number, options.before));
    // The error cut in SQL, as the events are: an error event's text can be as long as a command's output.
    const columns = {
      ...getTableColumns(workflowRuns),
      error: sql<string | null>`substr(${workflowRuns.error}, 1, ${LISTED_EVENT_TEXT_CHARS})`,
      errorLength: sql<number | null>`length(${workflowRuns.error})`,
    };
    const rows = this.db.select(columns).from(workflowRuns).where(and(...where)).orderBy(desc(workflowRuns.number)).limit(options.limit ?? 50).all();
    const previews = this.#eventPreviews(rows.map((r) => r.id));
    return rows.map(({ errorLength, ...row }) => {
      const preview = previews.get(row.id);
      const listed: ListedRun = { ...toRun(row, preview?.events ?? []), eventCount: preview?.count ?? 0 };
      return (errorLength ?? 0) > LISTED_EVENT_TEXT_CHARS ? { ...listed, errorTruncated: true } : listed;
    });
  }

  /**
   * Runs not finished, oldest first, without their events: of one workflow
   * (read through its index), of the given ids, or of every workflow, which
   * scans the table and is for a start (what a restarted server picks up).
   */
  unfinished(among: { workflowId?: string; ids?: readonly string[] } = {}): Run[] {
    return this.unfinishedQuery(among).all().map((r) => toRun(r, []));
  }

  /** The query `unfinished` runs (its plan is tested: the sweeps must not scan every run ever kept). */
  unfinishedQuery(among: { workflowId?: string; ids?: readonly string[] } = {}) {
    const where: SQL[] = [inArray(workflowRuns.status, UNFINISHED)];
    if (among.workflowId !== undefined) where.push(eq(workflowRuns.workflowId, among.workflowId));
    if (among.ids !== undefined) where.push(inArray(workflowRuns.id, [...among.ids]));
    return this.db.select().from(workflowRuns).where(and(...where)).orderBy(asc(workflowRuns.queuedAt), asc(workflowRuns.number));
  }

  /** Where a working run's events are written: numbered after the run's last, a batch per transaction. */
  eventLog(runId: string): RunEventLog {
    return new RunEventLog(this.db, runId, this.now);
  }

  /** Move a queued or waiting run to running; false when it is no longer waiting (cancelled meanwhile). */
  markRunning(runId: string): boolean {
    const run = this.get(runId);
    if (!run || (run.status !== "queued" && run.status !== "waiting-retry")) return false;
    // A retry starts clean: the error of the attempt before no longer describes the run.
    this.#set(runId, { status: "running", startedAt: this.now(), attempts: run.attempts + 1, retryAt: null, error: null });
    return true;
  }

  /** The runner was unavailable: wait, then run again. `tokensUsed`: what the failed attempt still cost. */
  markWaitingRetry(runId: string, retryAt: number, error: string, tokensUsed = 0): void {
    const run = this.get(runId);
    this.#set(runId, { status: "waiting-retry", retryAt, error: storableText(error), tokensUsed: (run?.tokensUsed ?? 0) + tokensUsed });
  }

  /** Finish a run unless it already finished; returns the finished run, or null when it had. */
  finish(runId: string, end: { status: "succeeded" | "failed" | "cancelled"; error?: string | null; cancelled?: CancelPhase; tokensUsed?: number }): Run | null {
    const run = this.get(runId);
    if (!run || FINISHED_STATUSES.includes(run.status)) return null;
    this.#set(runId, {
      status: end.status,
      error: end.status === "succeeded" ? null : end.error === undefined || end.error === null ? run.error : storableText(end.error),
      cancelled: end.cancelled ?? null,
      tokensUsed: run.tokensUsed + (end.tokensUsed ?? 0),
      finishedAt: this.now(),
      retryAt: null,
    });
    return this.get(runId);
  }

  /**
   * The earlier turns of a one-thread workflow before run number `before`:
   * succeeded one-thread runs, oldest first, the latest of them up to
   * `limit.turns` turns and `limit.chars` characters of inputs and answers.
   * The turns are the unbroken end of the thread: past the budget, older turns
   * are left out, so one long answer cannot make every later prompt too big.
   */
  thread(workflowId: string, before: number, limit: ThreadLimit): ThreadTurn[] {
    // Sizes first, counted in SQL: the texts of turns left out never reach this process.
    const sizes = this.db
      .select({
        id: workflowRuns.id,
        chars: sql<number>`length(coalesce(${workflowRuns.inputText}, '')) + coalesce((SELECT sum(length(e.text)) FROM ${workflowRunEvents} e WHERE e.run_id = ${workflowRuns.id} AND e.type IN ${THREAD_EVENT_TYPES}), 0)`,
      })
      .from(workflowRuns)
      .where(and(eq(workflowRuns.workflowId, workflowId), eq(workflowRuns.mode, "one-thread"), eq(workflowRuns.status, "succeeded"), lt(workflowRuns.number, before)))
      .orderBy(desc(workflowRuns.number))
      .limit(limit.turns)
      .all();
    const kept: string[] = [];
    let chars = 0;
    for (const turn of sizes) {
      chars += Number(turn.chars);
      if (chars > limit.chars) break;
      kept.push(turn.id);
    }
    if (kept.length === 0) return [];
    const rows = this.db.select().from(workflowRuns).where(inArray(workflowRuns.id, kept)).orderBy(asc(workflowRuns.number)).all();
    const events = this.#events(kept);
    return rows.map((row) => ({
      input: { text: row.inputText ?? "", source: JSON.parse(row.source) as RunSource },
      answers: (events.get(row.id) ?? []).filter((e) => (THREAD_EVENT_TYPES as readonly string[]).includes(e.type)).map((e) => e.text),
    }));
  }

  #set(runId: string, set: Partial<Row>): void {
    this.db.update(workflowRuns).set(set).where(eq(workflowRuns.id, runId)).run();
  }

  /** Per run, its last events with their texts cut short, read in SQL so the whole texts never reach this process. */
  #eventPreviews(runIds: string[]): Map<string, { events: ListedRun["events"]; count: number }> {
    const byRun = new Map<string, { events: ListedRun["events"]; count: number }>();
    if (runIds.length === 0) return byRun;
    const ids = sql.join(runIds.map((id) => sql`${id}`), sql`, `);
    // The window runs over (run_id, seq) alone: sorting whole rows would hold every text in SQLite's sorter.
    const rows = this.db.all<{ runId: string; seq: number; type: StoredRunEvent["type"]; text: string; length: number; at: number; count: number }>(sql`
      SELECT e.run_id AS runId, e.seq, e.type, substr(e.text, 1, ${LISTED_EVENT_TEXT_CHARS}) AS text, length(e.text) AS length, e.at, last.count
      FROM workflow_run_events e
      JOIN (
        SELECT run_id, seq, count FROM (
          SELECT run_id, seq, count(*) OVER (PARTITION BY run_id) AS count, row_number() OVER (PARTITION BY run_id ORDER BY seq DESC) AS fromEnd
          FROM workflow_run_events WHERE run_id IN (${ids})
        ) WHERE fromEnd <= ${LISTED_EVENTS_PER_RUN}
      ) last ON last.run_id = e.run_id AND last.seq = e.seq
      ORDER BY e.run_id, e.seq`);
    for (const { runId, length, count, ...event } of rows) {
      const preview = byRun.get(runId) ?? { events: [], count };
      preview.events.push(length > LISTED_EVENT_TEXT_CHARS ? { ...event, truncated: true } : event);
      byRun.set(runId, preview);
    }
    return byRun;
  }

  #events(runIds: string[]): Map<string, StoredRunEvent[]> {
    const byRun = new Map<string, StoredRunEvent[]>();
    if (runIds.length === 0) return byRun;
    const rows = this.db.select().from(workflowRunEvents).where(inArray(workflowRunEvents.runId, runIds)).orderBy(asc(workflowRunEvents.seq)).all();
    for (const { runId, ...event } of rows) {
      const list = byRun.get(runId) ?? [];
      list.push(event);
      byRun.set(runId, list);
    }
    return byRun;
  }
}

function notRecorded(): never {
  throw new HatchError(RUN_NOT_RECORDED, 500, "Cannot fire: the run could not be recorded, so nothing was queued");
}

function toRun(row: Row, events: StoredRunEvent[], source: RunSource = JSON.parse(row.source) as RunSource): Run {
  return {
    id: row.id,
    workflowId: row.workflowId,
    projectId: row.projectId,
    number: row.number,
    trigger: { id: row.triggerId, kind: row.triggerKind },
    mode: row.mode,
    status: row.status,
    input: { text: row.inputText, source },
    error: row.error,
    cancelled: row.cancelled,
    attempts: row.attempts,
    tokensUsed: row.tokensUsed,
    queuedAt: row.queuedAt,
    startedAt: row.startedAt,
    finishedAt: row.finishedAt,
    retryAt: row.retryAt,
    events,
  };
}
