/**
 * A token bucket: a burst of `capacity`, refilled continuously at
 * `refillPerSecond`. hatch caps each WebSocket's terminal input with one, so
 * a client cannot flood a PTY faster than a person (or a large paste) could.
 */

/** Input burst per connection: a large paste goes through at once. */
export const DEFAULT_INPUT_BURST_BYTES = 64 * 1024;
/** Sustained input per connection: far above typing, far below a flood. */
export const DEFAULT_INPUT_REFILL_BYTES_PER_SECOND = 32 * 1024;

/** Shape of a bucket; every field has the WebSocket-input default. */
export interface TokenBucketOptions {
  /** Most tokens held at once; the bucket starts full. */
  capacity?: number;
  /** Tokens added per second of elapsed time. */
  refillPerSecond?: number;
  /** Monotonic milliseconds; injected by tests. Defaults to `performance.now`. */
  now?: () => number;
}

/**
 * All-or-nothing rate limiter.
 *
 * @example
 * const bucket = new TokenBucket(); // 64 KiB burst, 32 KiB/s
 * if (!bucket.take(new TextEncoder().encode(data).length)) return dropInput();
 */
export class TokenBucket {
  /** Most tokens held at once. */
  readonly capacity: number;
  /** Tokens added per second. */
  readonly refillPerSecond: number;
  readonly #now: () => number;
  #tokens: number;
  #updatedAt: number;

  constructor(options: TokenBucketOptions = {}) {
    this.capacity = options.capacity ?? DEFAULT_INPUT_BURST_BYTES;
    this.refillPerSecond = options.refillPerSecond ?? DEFAULT_INPUT_REFILL_BYTES_PER_SECOND;
    if (!Number.isFinite(this.capacity) || this.capacity <= 0) {
      throw new RangeError(`Cannot create a token bucket with capacity ${this.capacity}: expected a positive number`);
    }
    if (!Number.isFinite(this.refillPerSecond) || this.refillPerSecond < 0) {
      throw new RangeError(`Cannot create a token bucket refilling ${this.refillPerSecond}/s: expected zero or more`);
    }
    this.#now = options.now ?? (() => performance.now());
    this.#tokens = this.capacity;
    this.#updatedAt = this.#now();
  }

  /** Tokens available right now. */
  get available(): number {
    this.#refill();
    return this.#tokens;
  }

  /**
   * Take `n` tokens if all of them are available; otherwise take none and
   * return false. A request larger than `capacity` can never succeed, so
   * callers must split input they want to pass in pieces.
   */
  take(n: number): boolean {
    if (!Number.isFinite(n) || n < 0) throw new RangeError(`Cannot take ${n} tokens: expected a non-negative number`);
    this.#refill();
    if (n > this.#tokens) return false;
    this.#tokens -= n;
    return true;
  }

  #refill(): void {
    const now = this.#now();
    // A clock that steps backwards adds nothing rather than draining the bucket.
    const elapsed = Math.max(0, now - this.#updatedAt);
    this.#updatedAt = Math.max(now, this.#updatedAt);
    this.#tokens = Math.min(this.capacity, this.#tokens + (elapsed * this.refillPerSecond) / 1000);
  }
}
