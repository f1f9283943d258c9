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
 * One key's admitted requests: their times, in order until `limit` are held,
 * then a ring where `oldest` indexes the earliest of the last `limit`.
 */
interface Log {
  times: number[];
  oldest: number;
}

/**
 * An exact sliding window per key (here: per source address): a request is
 * admitted when fewer than `limit` were admitted in the last `windowMs`.
 * Each key keeps the times of its last `limit` admitted requests (a ring, so
 * a check is one comparison with the oldest), at most `limit` numbers. A
 * counter of fixed windows, even weighted, lets a burst timed at a window's
 * edge through at up to twice the cap in one minute. It needs no timer: the
 * least recently used keys are dropped past `maxKeys`.
 *
 * @example
 * const limiter = new RateLimiter({ limit: 60, windowMs: 60_000 });
 * if (!limiter.take("203.0.113.7").ok) answer429();
 */
export class RateLimiter {
  readonly #logs = new Map<string, Log>();
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
    const log = this.#log(key);
    if (log.times.length < limit) {
      log.times.push(now);
      return { ok: true };
    }
    const oldest = log.times[log.oldest]!;
    if (now - oldest >= windowMs) {
      log.times[log.oldest] = now;
      log.oldest = (log.oldest + 1) % limit;
      return { ok: true };
    }
    // Once the oldest of the last `limit` leaves the window; never more than a window, should the clock step back.
    return { ok: false, retryAfterMs: Math.max(1, Math.min(windowMs, Math.ceil(oldest + windowMs - now))) };
  }

  /** Give back the last request `take` admitted for `key` (it turned out not to count). */
  refund(key: string): void {
    const log = this.#logs.get(key);
    if (!log || log.times.length === 0) return;
    // Back into order, oldest first, without the latest.
    log.times = [...log.times.slice(log.oldest), ...log.times.slice(0, log.oldest)];
    log.times.pop();
    log.oldest = 0;
  }

  /** The key's log, moved to the end of the map so the least recently used keys are the first dropped. */
  #log(key: string): Log {
    let log = this.#logs.get(key);
    if (log) this.#logs.delete(key);
    else log = { times: [], oldest: 0 };
    this.#logs.set(key, log);
    const max = this.options.maxKeys ?? DEFAULT_MAX_KEYS;
    if (this.#logs.size > max) this.#logs.delete(this.#logs.keys().next().value!);
    return log;
  }
}
