import { RateLimiter } from "./rate-limiter.ts";
import { normalizeEmail } from "./users.ts";

/** How many failed logins are tolerated, and over how long. */
export interface LoginThrottleOptions {
  /** Failed logins per client address (an IPv6 /64) per window. */
  perAddress: number;
  /** Failed logins per email address, from anywhere, per window. */
  perEmail: number;
  windowMs: number;
  /** Longest a login waits for attempts ahead of it to be checked (default 5 s). */
  queueWaitMs?: number;
  now?: () => number;
}

/** Addresses and emails tracked at most (about 10 MB at worst). */
const MAX_TRACKED_KEYS = 100_000;

/**
 * Fifteen minutes: long enough that guessing passwords is hopeless, short
 * enough that a user who mistyped, or whose email someone else is hammering,
 * is back soon.
 */
export const DEFAULT_LOGIN_THROTTLE: LoginThrottleOptions = { perAddress: 10, perEmail: 20, windowMs: 15 * 60_000 };

/** Longest a login waits by default for attempts ahead of it to be checked before it is told to try again. */
const QUEUE_WAIT_MS = 5_000;
/** Logins waiting per address or email at most; past it, and past the wait, the answer is to try again in a second. */
const MAX_WAITING = 64;
/** The wait a login is told to take when the attempts ahead of it were still being checked. */
export const BUSY_RETRY_MS = 1_000;

/**
 * Limits password guessing. Only failures count, but each attempt counts as
 * one until it ends, so a burst of parallel guesses cannot all pass before
 * the first fails. A login that finds the window full only of attempts still
 * being checked waits for them (people signing in at once behind one office
 * address all get in, as their logins succeed and give their places back);
 * one that finds it full of failures is refused for as long as they stay in
 * the window. Past either limit every login for that address or email is
 * refused before the password is checked, the right password included, so a
 * throttled guesser learns nothing. The per-email limit stops guessing from
 * many addresses; its price is that someone hammering a user's email keeps
 * that user out until the window ends (the CLI still works on the server).
 */
export class LoginThrottle {
  readonly #byAddress: RateLimiter;
  readonly #byEmail: RateLimiter;
  /** Attempts begun and not yet ended, by `a:<address>` and `e:<email>`. */
  readonly #inFlight = new Map<string, number>();
  /** Logins waiting for an attempt to end, by the same keys. */
  readonly #waiting = new Map<string, Set<() => void>>();
  readonly #queueWaitMs: number;

  constructor(options: LoginThrottleOptions = DEFAULT_LOGIN_THROTTLE) {
    this.#queueWaitMs = options.queueWaitMs ?? QUEUE_WAIT_MS;
    // Many keys: a window still in force is only dropped past this many, and every key costs a guess (a password hash) to make.
    const limiter = (limit: number) => new RateLimiter({ limit, windowMs: options.windowMs, maxKeys: MAX_TRACKED_KEYS, now: options.now });
    this.#byAddress = limiter(options.perAddress);
    this.#byEmail = limiter(options.perEmail);
  }

  /**
   * Begin a login attempt: resolves with the milliseconds to wait when it may
   * not be tried now, else 0, and then the attempt counts until `succeeded`
   * takes it back; `failed` (or any other end) must follow otherwise.
   */
  async attempt(addressKey: string, email: string): Promise<number> {
    const emailKey = normalizeEmail(email);
    const deadline = performance.now() + this.#queueWaitMs;
    for (;;) {
      const refusal = this.#take(addressKey, emailKey);
      if (!refusal) {
        this.#count(`a:${addressKey}`, 1);
        this.#count(`e:${emailKey}`, 1);
        return 0;
      }
      // Failures fill the window: refused until they leave it.
      if (!this.#inFlight.has(refusal.key)) return refusal.retryAfterMs;
      // Attempts still being checked fill it: each that succeeds gives its place back.
      if (!(await this.#nextEnd(refusal.key, deadline))) return BUSY_RETRY_MS;
    }
  }

  /** The attempt signed in: it does not count. */
  succeeded(addressKey: string, email: string): void {
    this.#byAddress.refund(addressKey);
    this.#byEmail.refund(normalizeEmail(email));
    this.#ended(addressKey, email);
  }

  /** The attempt did not sign in (a wrong password, an unknown email, an error): it keeps counting as a failure. */
  failed(addressKey: string, email: string): void {
    this.#ended(addressKey, email);
  }

  #take(addressKey: string, emailKey: string): { key: string; retryAfterMs: number } | null {
    // The address first: a throttled address's attempts are answered without touching the per-email counts,
    // so its cheap refusals cannot crowd other emails' windows out of the email limiter.
    const byAddress = this.#byAddress.take(addressKey);
    if (!byAddress.ok) return { key: `a:${addressKey}`, retryAfterMs: byAddress.retryAfterMs };
    const byEmail = this.#byEmail.take(emailKey);
    if (byEmail.ok) return null;
    // A refused attempt is not a guess: give back what it took.
    this.#byAddress.refund(addressKey);
    return { key: `e:${emailKey}`, retryAfterMs: byEmail.retryAfterMs };
  }

  #ended(addressKey: string, email: string): void {
    for (const key of [`a:${addressKey}`, `e:${normalizeEmail(email)}`]) {
      this.#count(key, -1);
      const waiting = this.#waiting.get(key);
      this.#waiting.delete(key);
      for (const wake of waiting ?? []) wake();
    }
  }

  #count(key: string, delta: number): void {
    const count = (this.#inFlight.get(key) ?? 0) + delta;
    if (count > 0) this.#inFlight.set(key, count);
    else this.#inFlight.delete(key);
  }

  /** Wait until an attempt on `key` ends; false at the deadline, or when too many already wait. */
  #nextEnd(key: string, deadline: number): Promise<boolean> {
    const waiting = this.#waiting.get(key) ?? new Set<() => void>();
    const left = deadline - performance.now();
    if (waiting.size >= MAX_WAITING || left <= 0) return Promise.resolve(false);
    this.#waiting.set(key, waiting);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        waiting.delete(wake);
        if (waiting.size === 0 && this.#waiting.get(key) === waiting) this.#waiting.delete(key);
        resolve(false);
      }, left);
      const wake = () => {
        clearTimeout(timer);
        resolve(true);
      };
      waiting.add(wake);
    });
  }
}
