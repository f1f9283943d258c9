/**
 * Runs a connection's messages that need authority (input, resize, take
 * control) only after its access was decided again, in arrival order. Messages
 * arriving while a decision is under way share it, so a fast typist costs one
 * decision at a time, not one per key.
 */
export class AccessGate {
  #pending: Promise<boolean> | null = null;
  #queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly decide: () => Promise<boolean>) {}

  /** Run `action` once access is confirmed; dropped if it was lost (the connection is being closed). */
  run(action: () => void): void {
    const decision = (this.#pending ??= this.#decide());
    this.#queue = this.#queue.then(() => decision).then((allowed) => allowed && action());
  }

  /**
   * Decide again, now or once a decision under way is done (it may have read
   * the state from before a change), whether or not anything waits on it.
   */
  recheck(): void {
    const underWay = this.#pending;
    if (underWay) void underWay.finally(() => this.run(() => {}));
    else this.run(() => {});
  }

  #decide(): Promise<boolean> {
    return this.decide()
      // A decision that failed is a denial: fail closed, and keep the queue usable.
      .catch(() => false)
      .finally(() => {
        this.#pending = null;
      });
  }
}
