/** Options of a rate limiter. */
export interface RateLimiterOptions {
  /** Requests allowed per key per window; 0 disables the limiter. */
  limit: number;
  windowMs: number;
  /** Keys tracked at most; beyond it the oldest are dropped, so a flood of addresses cannot grow memory without bound. */
  maxKeys?: number;
  now?: () => number;
}

/** Keys tracked by default: far more distinct senders than one server sees in a minute. */
const DEFAULT_MAX_KEYS = 10_000;

/**
 * A fixed-window counter per key (here: per source address). Cheap enough for
 * every request, and it needs no timer: expired windows are pruned lazily.
 *
 * @example
 * const limiter = new RateLimiter({ limit: 60, windowMs: 60_000 });
 * if (!limiter.take("203.0.113.7").ok) answer429();
 */
export class RateLimiter {
  readonly #windows = new Map<string, { start: number; count: number }>();
  readonly #now: () => number;

  constructor(private readonly options: RateLimiterOptions) {
    if (!Number.isInteger(options.limit) || options.limit < 0) throw new RangeError(`Cannot create a rate limiter with limit ${options.limit}`);
    this.#now = options.now ?? Date.now;
  }

  /** Count one request for `key`; not ok (with the wait) when the window is full. */
  take(key: string): { ok: true } | { ok: false; retryAfterMs: number } {
    if (this.options.limit === 0) return { ok: true };
    const now = this.#now();
    let window = this.#windows.get(key);
    if (!window || now - window.start >= this.options.windowMs) {
      this.#windows.delete(key);
      window = { start: now, count: 0 };
      this.#windows.set(key, window);
      this.#prune(now);
    }
    if (window.count >= this.options.limit) return { ok: false, retryAfterMs: window.start + this.options.windowMs - now };
    window.count++;
    return { ok: true };
  }

  /** Give back one request `take` counted for `key` in the current window (it turned out not to count). */
  refund(key: string): void {
    const window = this.#windows.get(key);
    if (window && this.#now() - window.start < this.options.windowMs && window.count > 0) window.count--;
  }

  #prune(now: number): void {
    const max = this.options.maxKeys ?? DEFAULT_MAX_KEYS;
    if (this.#windows.size <= max) return;
    // Map order is insertion order, and a renewed window is re-inserted: the oldest come first.
    for (const [key, window] of this.#windows) {
      if (this.#windows.size <= max && now - window.start < this.options.windowMs) break;
      this.#windows.delete(key);
    }
  }
}
