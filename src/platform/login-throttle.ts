import { RateLimiter } from "./rate-limiter.ts";
import { normalizeEmail } from "./users.ts";

/** How many failed logins are tolerated, and over how long. */
export interface LoginThrottleOptions {
  /** Failed logins per client address (an IPv6 /64) per window. */
  perAddress: number;
  /** Failed logins per email address, from anywhere, per window. */
  perEmail: number;
  windowMs: number;
  now?: () => number;
}

/**
 * Fifteen minutes: long enough that guessing passwords is hopeless, short
 * enough that a user who mistyped, or whose email someone else is hammering,
 * is back soon.
 */
export const DEFAULT_LOGIN_THROTTLE: LoginThrottleOptions = { perAddress: 10, perEmail: 20, windowMs: 15 * 60_000 };

/**
 * Limits password guessing. Only failures count, but each attempt counts as
 * one until it succeeds, so a burst of parallel guesses cannot all pass before
 * the first fails. Past either limit every login for that address or email is
 * refused before the password is checked, the right password included, so a
 * throttled guesser learns nothing. The per-email limit stops guessing from
 * many addresses; its price is that someone hammering a user's email keeps
 * that user out until the window ends (the CLI still works on the server).
 */
export class LoginThrottle {
  readonly #byAddress: RateLimiter;
  readonly #byEmail: RateLimiter;

  constructor(options: LoginThrottleOptions = DEFAULT_LOGIN_THROTTLE) {
    this.#byAddress = new RateLimiter({ limit: options.perAddress, windowMs: options.windowMs, now: options.now });
    this.#byEmail = new RateLimiter({ limit: options.perEmail, windowMs: options.windowMs, now: options.now });
  }

  /**
   * Start a login attempt: the milliseconds to wait when it may not be tried
   * now, else 0, and the attempt is counted until `succeeded` takes it back.
   */
  attempt(addressKey: string, email: string): number {
    const byAddress = this.#byAddress.take(addressKey);
    const byEmail = this.#byEmail.take(normalizeEmail(email));
    if (byAddress.ok && byEmail.ok) return 0;
    // A refused attempt is not a guess: give back what it took.
    if (byAddress.ok) this.#byAddress.refund(addressKey);
    if (byEmail.ok) this.#byEmail.refund(normalizeEmail(email));
    return Math.max(byAddress.ok ? 0 : byAddress.retryAfterMs, byEmail.ok ? 0 : byEmail.retryAfterMs);
  }

  /** The attempt signed in: it does not count. */
  succeeded(addressKey: string, email: string): void {
    this.#byAddress.refund(addressKey);
    this.#byEmail.refund(normalizeEmail(email));
  }
}
