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

/** One key's counts: the current fixed window's and the one before it. */
interface Counter {
  start: number;
  count: number;
  previous: number;
}

/**
 * A sliding-window counter per key (here: per source address): the current
 * window's count plus the previous window's, weighted by how much of it still
 * lies within the last `windowMs`. A fixed window would let a burst at the
 * end of one window and the start of the next through at twice the cap.
 * Cheap enough for every request, and it needs no timer: stale keys are
 * pruned lazily.
 *
 * @example
 * const limiter = new RateLimiter({ limit: 60, windowMs: 60_000 });
 * if (!limiter.take("203.0.113.7").ok) answer429();
 */
export class RateLimiter {
  readonly #counters = new Map<string, Counter>();
  readonly #now: () => number;

  constructor(private readonly options: RateLimiterOptions) {
    if (!Number.isInteger(options.limit) || options.limit < 0) throw new RangeError(`Cannot create a rate limiter with limit ${options.limit}`);
    this.#now = options.now ?? Date.now;
  }

  /** Count one request for `key`; not ok (with the wait until one would be) when the last window is full. */
  take(key: string): { ok: true } | { ok: false; retryAfterMs: number } {
    const { limit, windowMs } = this.options;
    if (limit === 0) return { ok: true };
    const now = this.#now();
    const counter = this.#current(key, now);
    const elapsed = now - counter.start;
    const previousShare = counter.previous * (1 - elapsed / windowMs);
    if (previousShare + counter.count + 1 <= limit) {
      counter.count++;
      return { ok: true };
    }
    // When the weighted count leaves room for one more: later in this window as the previous one slides out,
    // or, with this window full by itself, in the next, as this one does.
    const at =
      counter.count < limit
        ? counter.start + windowMs * (1 - (limit - 1 - counter.count) / counter.previous)
        : counter.start + windowMs + windowMs * (1 - (limit - 1) / counter.count);
    return { ok: false, retryAfterMs: Math.max(1, Math.ceil(at - now)) };
  }

  /** Give back one request `take` counted for `key` in the current window (it turned out not to count). */
  refund(key: string): void {
    const counter = this.#counters.get(key);
    if (counter && this.#now() - counter.start < this.options.windowMs && counter.count > 0) counter.count--;
  }

  /** The key's counter, moved on to the window `now` falls in. */
  #current(key: string, now: number): Counter {
    const { windowMs } = this.options;
    let counter = this.#counters.get(key);
    if (counter && now - counter.start < windowMs) return counter;
    const windows = counter ? Math.floor((now - counter.start) / windowMs) : 0;
    counter = counter
      ? { start: counter.start + windows * windowMs, count: 0, previous: windows === 1 ? counter.count : 0 }
      : { start: now, count: 0, previous: 0 };
    // Re-inserted, so the map's order is the order of last renewal: the prune drops the stalest first.
    this.#counters.delete(key);
    this.#counters.set(key, counter);
    this.#prune(now);
    return counter;
  }

  #prune(now: number): void {
    const max = this.options.maxKeys ?? DEFAULT_MAX_KEYS;
    if (this.#counters.size <= max) return;
    for (const [key, counter] of this.#counters) {
      // A counter two windows old counts nothing any more.
      if (this.#counters.size <= max && now - counter.start < 2 * this.options.windowMs) break;
      this.#counters.delete(key);
    }
  }
}
