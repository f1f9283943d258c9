import { and, eq, gt, gte, lt, sql } from "drizzle-orm";
import { workflowRuns, workflowSpendCarried, workflowSpendLimits, type Db } from "../db/index.ts";
import { badRequest, HatchError } from "../platform/index.ts";

/** A project's spend limit over a rolling day. */
export interface SpendLimit {
  /** Fires accepted per day, every runner. */
  runsPerDay: number;
  /** Model tokens per day (the `openai` runner). */
  tokensPerDay: number;
}

/** What a project may spend until an owner or admin says otherwise: plenty for a team's bots, not a runaway loop. */
export const DEFAULT_SPEND_LIMIT: SpendLimit = { runsPerDay: 1000, tokensPerDay: 1_000_000 };
/** The upper bound of either limit: past this a limit is not a limit. */
export const MAX_SPEND_LIMIT = 100_000_000;
/**
 * Usage is counted per hour: a run in the hour of its fire, tokens in the
 * hour they were spent (after a restart, the hour their run last started);
 * "a day" is the last 24 whole hours plus the current one.
 */
const HOUR_MS = 3600_000;
const WINDOW_HOURS = 24;

/** When a run's tokens were spent, as far as the row tells: when it last started (a run that never started spent none). */
const TOKENS_SPENT_AT = sql<number>`coalesce(${workflowRuns.startedAt}, ${workflowRuns.queuedAt})`;

/** The code of a fire refused by a spend limit (HTTP 429). */
export const SPEND_LIMIT_REACHED = "spend_limit_reached";

/**
 * Spend limits per project and the check every fire passes. Usage is kept in
 * hourly buckets in memory, loaded on first use from the runs table (and from
 * what deleted workflows' runs spent, see `deleteKeepingUsage`) and updated as runs
 * are accepted and spend tokens: the check costs no query however many runs a
 * day holds (this process is the only one that fires; the CLI never does).
 */
export class SpendLimits {
  readonly #usage = new Map<string, Map<number, { runs: number; tokens: number }>>();
  #loaded = false;
  readonly #limitOf;

  constructor(
    private readonly db: Db,
    private readonly now: () => number = Date.now,
  ) {
    this.#limitOf = db.select().from(workflowSpendLimits).where(eq(workflowSpendLimits.projectId, sql.placeholder("projectId"))).prepare();
  }

  /** The project's limit (stored, else the default). */
  get(projectId: string): SpendLimit {
    const row = this.#limitOf.get({ projectId });
    return row ? { runsPerDay: row.runsPerDay, tokensPerDay: row.tokensPerDay } : { ...DEFAULT_SPEND_LIMIT };
  }

  /** Validate then store; 0 stops every fire (a kill switch). */
  set(projectId: string, limit: SpendLimit): SpendLimit {
    for (const [name, value] of Object.entries(limit)) {
      if (!Number.isInteger(value) || value < 0 || value > MAX_SPEND_LIMIT) {
        throw badRequest("invalid_spend_limit", `Cannot set the spend limit: "${name}" must be an integer from 0 to ${MAX_SPEND_LIMIT}`);
      }
    }
    const values = { runsPerDay: limit.runsPerDay, tokensPerDay: limit.tokensPerDay, updatedAt: this.now() };
    this.db.insert(workflowSpendLimits).values({ projectId, ...values }).onConflictDoUpdate({ target: workflowSpendLimits.projectId, set: values }).run();
    return this.get(projectId);
  }

  /** What the project spent in the current window. */
  usage(projectId: string): { runs: number; tokens: number } {
    const buckets = this.#buckets(projectId);
    const oldest = this.#hour(this.now()) - WINDOW_HOURS;
    const total = { runs: 0, tokens: 0 };
    for (const [hour, bucket] of buckets) {
      if (hour < oldest) buckets.delete(hour);
      else (total.runs += bucket.runs), (total.tokens += bucket.tokens);
    }
    return total;
  }

  /**
   * Throw 429 `spend_limit_reached` when one more run would pass the limit.
   * Tokens only count for runners that spend them.
   */
  check(projectId: string, spendsTokens: boolean): void {
    const limit = this.get(projectId);
    const used = this.usage(projectId);
    if (used.runs >= limit.runsPerDay) {
      const wait = this.#waitUntilBelow(projectId, "runs", used.runs, limit.runsPerDay);
      throw new HatchError(SPEND_LIMIT_REACHED, 429, `The project's spend limit of ${limit.runsPerDay} runs per day is reached`, { detail: { limit: "runs" }, retryAfterMs: wait });
    }
    if (spendsTokens) this.#checkTokens(projectId, limit, used);
  }

  /**
   * Throw 429 `spend_limit_reached` when the token budget is spent: what an
   * accepted run checks again as it starts. Its own run was counted when it
   * fired, so the runs limit is not checked again (the run that reached it
   * would refuse itself).
   */
  checkTokens(projectId: string): void {
    this.#checkTokens(projectId, this.get(projectId), this.usage(projectId));
  }

  #checkTokens(projectId: string, limit: SpendLimit, used: { tokens: number }): void {
    if (used.tokens >= limit.tokensPerDay) {
      const wait = this.#waitUntilBelow(projectId, "tokens", used.tokens, limit.tokensPerDay);
      throw new HatchError(SPEND_LIMIT_REACHED, 429, `The project's spend limit of ${limit.tokensPerDay} tokens per day is reached`, { detail: { limit: "tokens" }, retryAfterMs: wait });
    }
  }

  /**
   * How long until enough of the window's `kind` (`used` of it now) has left
   * it to be under `limit` again (a sender's Retry-After); undefined when
   * nothing leaving would do (a limit of 0, the kill switch).
   */
  #waitUntilBelow(projectId: string, kind: "runs" | "tokens", used: number, limit: number): number | undefined {
    const now = this.now();
    // `usage` just dropped the hours that left the window: every bucket left counts.
    const hours = [...this.#buckets(projectId)].sort(([a], [b]) => a - b);
    let left = used;
    for (const [hour, bucket] of hours) {
      left -= bucket[kind];
      // An hour's usage counts while it is among the last 24 whole hours: it leaves as the 25th begins.
      if (left < limit) return (hour + WINDOW_HOURS + 1) * HOUR_MS - now;
    }
    return undefined;
  }

  /**
   * Delete a workflow, and its runs with it, through `remove`, keeping what
   * the runs spent in the window on record in the same transaction: after a
   * restart the day's usage still counts them (deleting a workflow must not
   * reset the project's limit), and a delete that fails keeps nothing, so
   * nothing is counted twice. The in-memory count already holds them.
   */
  deleteKeepingUsage<T>(workflowId: string, remove: () => T): T {
    return this.db.$client.transaction(() => {
      this.#keepUsageOf(workflowId);
      return remove();
    })();
  }

  #keepUsageOf(workflowId: string): void {
    const since = (this.#hour(this.now()) - WINDOW_HOURS) * HOUR_MS;
    const carry = sql`ON CONFLICT (project_id, hour) DO UPDATE SET runs = runs + excluded.runs, tokens = tokens + excluded.tokens`;
    // Runs by the hour of their fire, tokens by the hour they were spent: as `#load` counts them.
    this.db.run(sql`
      INSERT INTO workflow_spend_carried (project_id, hour, runs, tokens)
      SELECT project_id, queued_at / ${HOUR_MS} AS fired_hour, count(*), 0
      FROM workflow_runs WHERE workflow_id = ${workflowId} AND queued_at >= ${since} GROUP BY project_id, fired_hour ${carry}`);
    this.db.run(sql`
      INSERT INTO workflow_spend_carried (project_id, hour, runs, tokens)
      SELECT project_id, ${TOKENS_SPENT_AT} / ${HOUR_MS} AS spent_hour, 0, sum(tokens_used)
      FROM workflow_runs WHERE workflow_id = ${workflowId} AND ${TOKENS_SPENT_AT} >= ${since} AND tokens_used > 0 GROUP BY project_id, spent_hour ${carry}`);
  }

  /** Count accepted runs in the hour they were fired (`queuedAt`); a negative count takes back one not kept. */
  recordRuns(projectId: string, queuedAt: number, runs: number): void {
    this.#record(projectId, queuedAt, { runs });
  }

  /** Count tokens a run just spent, in the current hour: a run may start a day after its fire. */
  recordTokens(projectId: string, tokens: number): void {
    this.#record(projectId, this.now(), { tokens });
  }

  #record(projectId: string, at: number, spent: { runs?: number; tokens?: number }): void {
    const buckets = this.#buckets(projectId);
    const hour = this.#hour(at);
    const bucket = buckets.get(hour) ?? { runs: 0, tokens: 0 };
    bucket.runs += spent.runs ?? 0;
    bucket.tokens += spent.tokens ?? 0;
    buckets.set(hour, bucket);
  }

  #hour(at: number): number {
    return Math.floor(at / HOUR_MS);
  }

  #buckets(projectId: string): Map<number, { runs: number; tokens: number }> {
    if (!this.#loaded) this.#load();
    let buckets = this.#usage.get(projectId);
    if (!buckets) this.#usage.set(projectId, (buckets = new Map()));
    return buckets;
  }

  /** Read the window's usage of every project in one pass over the runs and the deleted workflows' spend (once per process). */
  #load(): void {
    this.#loaded = true;
    const oldest = this.#hour(this.now()) - WINDOW_HOURS;
    const firedHour = sql<number>`${workflowRuns.queuedAt} / ${sql.raw(String(HOUR_MS))}`;
    const fired = this.db
      .select({ projectId: workflowRuns.projectId, hour: firedHour, runs: sql<number>`count(*)`, tokens: sql<number>`0` })
      .from(workflowRuns)
      .where(gte(workflowRuns.queuedAt, oldest * HOUR_MS))
      .groupBy(workflowRuns.projectId, firedHour)
      .all();
    const spentHour = sql<number>`${TOKENS_SPENT_AT} / ${sql.raw(String(HOUR_MS))}`;
    const spent = this.db
      .select({ projectId: workflowRuns.projectId, hour: spentHour, runs: sql<number>`0`, tokens: sql<number>`sum(${workflowRuns.tokensUsed})` })
      .from(workflowRuns)
      .where(and(gte(TOKENS_SPENT_AT, oldest * HOUR_MS), gt(workflowRuns.tokensUsed, 0)))
      .groupBy(workflowRuns.projectId, spentHour)
      .all();
    this.db.delete(workflowSpendCarried).where(lt(workflowSpendCarried.hour, oldest)).run();
    const carried = this.db.select().from(workflowSpendCarried).all();
    for (const row of [...fired, ...spent, ...carried]) this.#record(row.projectId, Number(row.hour) * HOUR_MS, { runs: Number(row.runs), tokens: Number(row.tokens) });
  }
}
