/** Time source passed to services so tests can move time instead of sleeping. */
export interface Clock {
  now(): number;
}

/** The wall clock. */
export const systemClock: Clock = { now: () => Date.now() };
