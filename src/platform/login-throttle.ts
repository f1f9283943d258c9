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

/** Addresses and emails tracked at most (about 10 MB at worst). */
const MAX_TRACKED_KEYS = 100_000;

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
    // Many keys: a window still in force is only dropped past this many, and every key costs a guess (a password hash) to make.
    const limiter = (limit: number) => new RateLimiter({ limit, windowMs: options.windowMs, maxKeys: MAX_TRACKED_KEYS, now: options.now });
    this.#byAddress = limiter(options.perAddress);
    this.#byEmail = limiter(options.perEmail);
  }

  /**
   * Start a login attempt: the milliseconds to wait when it may not be tried
   * now, else 0, and the attempt is counted until `succeeded` takes it back.
   */
  attempt(addressKey: string, email: string): number {
    // The address first: a throttled address's attempts are answered without touching the per-email counts,
    // so its cheap refusals cannot crowd other emails' windows out of the email limiter.
    const byAddress = this.#byAddress.take(addressKey);
    if (!byAddress.ok) return byAddress.retryAfterMs;
    const byEmail = this.#byEmail.take(normalizeEmail(email));
    if (byEmail.ok) return 0;
    // A refused attempt is not a guess: give back what it took.
    this.#byAddress.refund(addressKey);
    return byEmail.retryAfterMs;
  }

  /** The attempt signed in: it does not count. */
  succeeded(addressKey: string, email: string): void {
    this.#byAddress.refund(addressKey);
    this.#byEmail.refund(normalizeEmail(email));
  }
}
