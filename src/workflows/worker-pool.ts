/** What a job asks for when it ends: nothing (done), or to run again after a delay. */
export type JobOutcome = { retryAfterMs: number } | void;

/** One unit of work. Jobs sharing a `key` run one at a time, in submission order. */
export interface PoolJob {
  id: string;
  /** Serialization key (a one-thread workflow's id), or null for an independent job. */
  key: string | null;
  run(signal: AbortSignal): Promise<JobOutcome>;
}

/** Options of a worker pool. */
export interface WorkerPoolOptions {
  /** Most jobs running at once. */
  size: number;
  /** Where a job's unexpected throw goes (jobs record their own failures). */
  onError?: (error: unknown, jobId: string) => void;
}

/** What `cancel` found. */
export type CancelResult = "removed" | "aborted" | "absent";

/**
 * A bounded pool: at most `size` jobs run; the rest queue in order, so a burst
 * of fires waits instead of forking without limit. A job retrying after a delay
 * frees its slot but keeps its key, so a thread's later turns cannot overtake it.
 *
 * @example
 * await using pool = new WorkerPool({ size: 4 });
 * pool.submit({ id: "a", key: null, run: async () => {} });
 */
export class WorkerPool implements AsyncDisposable {
  #queue: PoolJob[] = [];
  readonly #running = new Map<string, { controller: AbortController; done: Promise<void> }>();
  readonly #delayed = new Map<string, { job: PoolJob; timer: Timer }>();
  readonly #holders = new Map<string, string>();
  #dispatchPending = false;
  #closed = false;
  #peak = 0;

  constructor(private readonly options: WorkerPoolOptions) {
    if (!Number.isInteger(options.size) || options.size < 1) throw new RangeError(`Cannot create a worker pool of size ${options.size}: expected a positive integer`);
  }

  /** Queue a job; it starts on a later tick, so the submitter answers first. */
  submit(job: PoolJob): void {
    if (this.#closed) return;
    this.#queue.push(job);
    this.#scheduleDispatch();
  }

  /**
   * Queue a job once `delayMs` has passed: a retry a previous process had
   * scheduled. Meanwhile it holds its key, as a retry in this process does, so
   * later jobs of the key wait for it.
   */
  submitAfter(job: PoolJob, delayMs: number): void {
    if (this.#closed) return;
    if (delayMs <= 0) return this.submit(job);
    if (job.key !== null && !this.#holders.has(job.key)) this.#holders.set(job.key, job.id);
    this.#delay(job, delayMs);
  }

  /** Drop a job that has not started (queued or waiting to retry), or abort a running one (its signal carries `reason`). */
  cancel(id: string, reason?: unknown): CancelResult {
    const index = this.#queue.findIndex((j) => j.id === id);
    if (index >= 0) {
      const [job] = this.#queue.splice(index, 1);
      this.#release(job!);
      return "removed";
    }
    const delayed = this.#delayed.get(id);
    if (delayed) {
      clearTimeout(delayed.timer);
      this.#delayed.delete(id);
      this.#release(delayed.job);
      return "removed";
    }
    const running = this.#running.get(id);
    if (!running) return "absent";
    running.controller.abort(reason);
    return "aborted";
  }

  /** The ids of the jobs running now. */
  runningIds(): string[] {
    return [...this.#running.keys()];
  }

  /** Counts for operators and tests; `peakRunning` proves the bound. */
  stats(): { size: number; running: number; queued: number; delayed: number; peakRunning: number } {
    return { size: this.options.size, running: this.#running.size, queued: this.#queue.length, delayed: this.#delayed.size, peakRunning: this.#peak };
  }

  /** Stop: drop what waits, abort what runs, and wait for it to wind down. */
  async [Symbol.asyncDispose](): Promise<void> {
    this.#closed = true;
    this.#queue = [];
    for (const { timer } of this.#delayed.values()) clearTimeout(timer);
    this.#delayed.clear();
    for (const { controller } of this.#running.values()) controller.abort();
    await Promise.all([...this.#running.values()].map((r) => r.done));
  }

  #scheduleDispatch(): void {
    if (this.#dispatchPending) return;
    this.#dispatchPending = true;
    setImmediate(() => {
      this.#dispatchPending = false;
      this.#dispatch();
    });
  }

  #dispatch(): void {
    for (let i = 0; i < this.#queue.length && this.#running.size < this.options.size && !this.#closed; ) {
      const job = this.#queue[i]!;
      const holder = job.key === null ? undefined : this.#holders.get(job.key);
      if (holder !== undefined && holder !== job.id) {
        i++;
        continue;
      }
      this.#queue.splice(i, 1);
      this.#start(job);
    }
  }

  #start(job: PoolJob): void {
    if (job.key !== null) this.#holders.set(job.key, job.id);
    const controller = new AbortController();
    const done = this.#execute(job, controller.signal);
    this.#running.set(job.id, { controller, done });
    this.#peak = Math.max(this.#peak, this.#running.size);
  }

  async #execute(job: PoolJob, signal: AbortSignal): Promise<void> {
    let outcome: JobOutcome = undefined;
    try {
      outcome = await job.run(signal);
    } catch (error) {
      this.options.onError?.(error, job.id);
    }
    this.#running.delete(job.id);
    if (outcome && !signal.aborted && !this.#closed) this.#delay(job, outcome.retryAfterMs);
    else this.#release(job);
    this.#scheduleDispatch();
  }

  /** Put a job aside for `ms`, then at the head of the queue. */
  #delay(job: PoolJob, ms: number): void {
    const timer = setTimeout(() => {
      this.#delayed.delete(job.id);
      this.#queue.unshift(job);
      this.#scheduleDispatch();
    }, ms);
    this.#delayed.set(job.id, { job, timer });
  }

  #release(job: PoolJob): void {
    if (job.key !== null && this.#holders.get(job.key) === job.id) this.#holders.delete(job.key);
    this.#scheduleDispatch();
  }
}
