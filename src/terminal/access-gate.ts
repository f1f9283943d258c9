/** Messages one connection may have waiting on a decision; a client flooding a slow decision gets the rest refused. */
export const MAX_GATED_MESSAGES = 256;
/** Input bytes one connection may have waiting on a decision (16 bursts of the input bucket). */
export const MAX_GATED_BYTES = 1024 * 1024;

/**
 * Runs a connection's messages that need authority (input, resize, take
 * control) only after its access was decided again, in arrival order. Messages
 * arriving while a decision is under way share it, so a fast typist costs one
 * decision at a time, not one per key.
 */
export class AccessGate {
  #pending: Promise<boolean> | null = null;
  #queue: Promise<unknown> = Promise.resolve();
  #waiting = 0;
  #waitingBytes = 0;

  constructor(private readonly decide: () => Promise<boolean>) {}

  /**
   * Run `action` once access is confirmed; dropped if it was lost (the
   * connection is being closed). False, and nothing queued, when the
   * connection already has `MAX_GATED_MESSAGES` messages waiting, or input
   * waiting that `bytes` more would take past `MAX_GATED_BYTES` (a message
   * alone is always taken, so the session can say why it is too big).
   */
  run(action: () => void, bytes = 0): boolean {
    if (this.#waiting >= MAX_GATED_MESSAGES) return false;
    if (this.#waitingBytes > 0 && this.#waitingBytes + bytes > MAX_GATED_BYTES) return false;
    this.#enqueue(action, bytes);
    return true;
  }

  /**
   * Decide again, now or once a decision under way is done (it may have read
   * the state from before a change), whether or not anything waits on it.
   * Never refused: a revoke must be decided on even while a flood waits.
   */
  recheck(): void {
    const underWay = this.#pending;
    if (underWay) void underWay.finally(() => this.#enqueue(() => {}, 0));
    else this.#enqueue(() => {}, 0);
  }

  #enqueue(action: () => void, bytes: number): void {
    this.#waiting++;
    this.#waitingBytes += bytes;
    const decision = (this.#pending ??= this.#decide());
    this.#queue = this.#queue
      .then(() => decision)
      .then((allowed) => {
        this.#waiting--;
        this.#waitingBytes -= bytes;
        if (allowed) action();
      })
      // One message that failed must not stop the ones behind it.
      .catch((error: unknown) => console.error("hatch: a terminal message could not be handled", error));
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
