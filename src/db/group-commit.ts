import type { Statement } from "bun:sqlite";
import type { Db } from "./database.ts";

/**
 * Most writes one transaction holds. A burst past it commits in several
 * transactions, so no one transaction (and no one wait for a 202) grows
 * without bound; 256 run rows commit in about a millisecond.
 */
export const MAX_GROUP_COMMIT_WRITES = 256;

/** Options of a group commit. */
export interface GroupCommitOptions {
  /** Writes per transaction at most (default MAX_GROUP_COMMIT_WRITES). */
  maxWrites?: number;
  /**
   * Told of each failure before any writer hears of it: a write that failed on
   * its own (`writes` is 1) or a transaction that rolled back (`writes` is how
   * many it held). Every writer concerned is rejected with this error.
   */
  onFailure?: (error: unknown, writes: number) => void;
}

/** What a group commit has done, for operators and tests. */
export interface GroupCommitStats {
  /** Transactions committed. */
  commits: number;
  /** Transactions rolled back whole (every write in them was rejected). */
  rollbacks: number;
  /** Writes committed. */
  writes: number;
  /** Writes rejected, alone or with their transaction. */
  failed: number;
}

interface QueuedWrite {
  apply: () => void;
  undo: (() => void) | undefined;
  resolve: () => void;
  reject: (error: unknown) => void;
  /** Set when this write failed on its own inside a transaction that went on. */
  error?: { cause: unknown };
}

/**
 * Group commit: the writes queued during one turn of the event loop are
 * applied in one SQLite transaction (one commit instead of one per write), and
 * each write's promise settles only once that transaction has committed or
 * rolled back. A caller that answers after `await write(...)` never answers
 * before its row is written. Each write runs in its own savepoint, so one that
 * throws (a constraint, a row whose parent was just deleted) is rejected alone;
 * a transaction that fails as a whole rejects exactly the writes it held.
 *
 * @example
 * const commits = new GroupCommit(db);
 * await commits.write(() => insertRun.run(row)); // committed, with whatever else this turn wrote
 */
export class GroupCommit {
  #queue: QueuedWrite[] = [];
  #scheduled = false;
  readonly #stats: GroupCommitStats = { commits: 0, rollbacks: 0, writes: 0, failed: 0 };
  readonly #maxWrites: number;
  readonly #transaction: (batch: QueuedWrite[]) => void;
  readonly #savepoint: { begin: Statement; undo: Statement; release: Statement };

  constructor(
    db: Db,
    private readonly options: GroupCommitOptions = {},
  ) {
    this.#maxWrites = options.maxWrites ?? MAX_GROUP_COMMIT_WRITES;
    if (!Number.isInteger(this.#maxWrites) || this.#maxWrites < 1) throw new RangeError(`Cannot create a group commit of ${this.#maxWrites} writes: expected a positive integer`);
    const sqlite = db.$client;
    this.#savepoint = { begin: sqlite.prepare("SAVEPOINT group_write"), undo: sqlite.prepare("ROLLBACK TO group_write"), release: sqlite.prepare("RELEASE group_write") };
    // bun:sqlite's transaction keeps BEGIN, COMMIT and ROLLBACK prepared, and rolls back when the body or the COMMIT throws.
    // IMMEDIATE: a deferred transaction whose first write follows a read (a run's number) gets SQLITE_BUSY at once,
    // without the busy timeout, while another process (the CLI) writes; BEGIN IMMEDIATE waits for the lock instead.
    this.#transaction = sqlite.transaction((batch: QueuedWrite[]) => {
      for (const write of batch) this.#applyAlone(write);
    }).immediate;
  }

  /**
   * Queue a synchronous write for the next transaction. Resolves once it has
   * committed; rejects when it failed or its transaction rolled back, after
   * `undo` has run, so in-memory state that anticipated the write is restored
   * before anyone can act on the failure.
   */
  write(apply: () => void, undo?: () => void): Promise<void> {
    const { promise, resolve, reject } = Promise.withResolvers<void>();
    this.#queue.push({ apply, undo, resolve, reject });
    if (this.#queue.length >= this.#maxWrites) {
      this.flush();
    } else if (!this.#scheduled) {
      this.#scheduled = true;
      // setImmediate runs after this turn's I/O callbacks: every request read in this turn joins the batch.
      setImmediate(() => {
        this.#scheduled = false;
        this.flush();
      });
    }
    return promise;
  }

  /** Commit what is queued now, in one transaction (before closing the database, say). */
  flush(): void {
    const batch = this.#queue;
    if (batch.length === 0) return;
    this.#queue = [];
    try {
      this.#transaction(batch);
    } catch (error) {
      this.#stats.rollbacks++;
      this.#fail(batch, error);
      return;
    }
    this.#stats.commits++;
    const failed = batch.filter((write) => write.error);
    for (const write of failed) this.#fail([write], write.error!.cause);
    this.#stats.writes += batch.length - failed.length;
    for (const write of batch) if (!write.error) write.resolve();
  }

  /** Counts so far. */
  stats(): GroupCommitStats {
    return { ...this.#stats };
  }

  /** Apply one write inside its savepoint; a throw undoes only this write. A failure the savepoint cannot undo fails the transaction. */
  #applyAlone(write: QueuedWrite): void {
    const { begin, undo, release } = this.#savepoint;
    begin.run();
    try {
      write.apply();
    } catch (cause) {
      write.error = { cause };
      undo.run();
    }
    release.run();
  }

  #fail(writes: QueuedWrite[], error: unknown): void {
    this.#stats.failed += writes.length;
    for (const write of writes) write.undo?.();
    this.options.onFailure?.(error, writes.length);
    for (const write of writes) write.reject(error);
  }
}
