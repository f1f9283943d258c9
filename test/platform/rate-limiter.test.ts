import { expect, test } from "bun:test";
import { RateLimiter } from "../../src/platform/index.ts";

/** A limiter of `limit` per minute on a clock the test moves. */
function limiter(limit: number, options: { maxKeys?: number } = {}) {
  const clock = { now: 1_000_000 };
  return { clock, limiter: new RateLimiter({ limit, windowMs: 60_000, now: () => clock.now, ...options }) };
}

test("no more than the limit is admitted in any window, however the requests are timed", () => {
  const { clock, limiter: l } = limiter(3);
  const admitted: number[] = [];
  // One early, a burst just before a minute is up, then one a second: the edges a fixed-window counter gets wrong.
  const times = [0, 59_900, 59_900, 59_900, ...Array.from({ length: 70 }, (_, i) => 60_000 + i * 1000)];
  for (const t of times) {
    clock.now = 1_000_000 + t;
    if (l.take("a").ok) admitted.push(t);
  }
  const mostInAMinute = Math.max(...admitted.map((t) => admitted.filter((u) => u > t - 60_000 && u <= t).length));
  expect(mostInAMinute).toBe(3);
  // And as many as that allows: the one at 0 makes room at 60 s, the burst at 120 s.
  expect(admitted.slice(0, 5)).toEqual([0, 59_900, 59_900, 60_000, 120_000]);
});

test("a refusal says how long until the oldest admitted request leaves the window; keys are counted apart", () => {
  const { clock, limiter: l } = limiter(2);
  expect([l.take("a").ok, (clock.now += 10_000, l.take("a").ok)]).toEqual([true, true]);
  expect(l.take("a")).toEqual({ ok: false, retryAfterMs: 50_000 });
  expect(l.take("b").ok).toBe(true);
  clock.now += 50_000;
  expect(l.take("a").ok).toBe(true);
});

test("a refund gives back the last admitted request, and a clock stepped back never asks for more than a window", () => {
  const { clock, limiter: l } = limiter(2);
  l.take("a");
  l.take("a");
  l.refund("a");
  expect(l.take("a").ok).toBe(true);
  expect(l.take("a").ok).toBe(false);
  // Never below nothing: refunds past what was taken give nothing more.
  for (let i = 0; i < 3; i++) l.refund("a");
  expect([l.take("a").ok, l.take("a").ok, l.take("a").ok]).toEqual([true, true, false]);
  clock.now -= 3_600_000;
  expect(l.take("a")).toEqual({ ok: false, retryAfterMs: 60_000 });
});

test("past maxKeys the least recently used key is forgotten; limit 0 admits everything", () => {
  const { limiter: l } = limiter(1, { maxKeys: 2 });
  l.take("a");
  l.take("b");
  l.take("a");
  l.take("c");
  // "b" was least recently used: forgotten, it starts afresh; "a" is still held.
  expect([l.take("a").ok, l.take("b").ok]).toEqual([false, true]);
  const open = new RateLimiter({ limit: 0, windowMs: 60_000 });
  expect(Array.from({ length: 100 }, () => open.take("x").ok).every(Boolean)).toBe(true);
});
