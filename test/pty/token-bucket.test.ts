import { describe, expect, test } from "bun:test";
import { TokenBucket } from "../../src/pty/token-bucket.ts";

/** A clock that moves only when the test says so. */
function manualClock(start = 1000) {
  let now = start;
  return { now: () => now, advance: (ms: number) => void (now += ms), set: (ms: number) => void (now = ms) };
}

describe("TokenBucket", () => {
  test("defaults to the WebSocket input limits: 64 KiB burst, 32 KiB/s", () => {
    const clock = manualClock();
    const bucket = new TokenBucket({ now: clock.now });
    expect({ capacity: bucket.capacity, refill: bucket.refillPerSecond, available: bucket.available }).toEqual({
      capacity: 65536,
      refill: 32768,
      available: 65536,
    });
  });

  test("a full burst passes, the next byte waits for the refill", () => {
    const clock = manualClock();
    const bucket = new TokenBucket({ capacity: 64 * 1024, refillPerSecond: 32 * 1024, now: clock.now });
    expect(bucket.take(64 * 1024)).toBe(true);
    expect(bucket.take(1)).toBe(false);
    clock.advance(500);
    expect(bucket.take(16 * 1024)).toBe(true);
    expect(bucket.take(1)).toBe(false);
  });

  test("take is all-or-nothing: a refused request takes nothing", () => {
    const clock = manualClock();
    const bucket = new TokenBucket({ capacity: 10, refillPerSecond: 0, now: clock.now });
    expect(bucket.take(7)).toBe(true);
    expect(bucket.take(4)).toBe(false);
    expect(bucket.take(3)).toBe(true);
    expect(bucket.available).toBe(0);
  });

  test("a request larger than the capacity never succeeds", () => {
    const clock = manualClock();
    const bucket = new TokenBucket({ capacity: 10, refillPerSecond: 100, now: clock.now });
    clock.advance(60_000);
    expect(bucket.take(11)).toBe(false);
    expect(bucket.available).toBe(10);
  });

  test("refill never overfills, and a clock stepping backwards adds nothing", () => {
    const clock = manualClock();
    const bucket = new TokenBucket({ capacity: 100, refillPerSecond: 10, now: clock.now });
    expect(bucket.take(100)).toBe(true);
    clock.advance(1000);
    expect(bucket.available).toBe(10);
    clock.set(0);
    expect(bucket.available).toBe(10);
    clock.set(1000 + 1000 + 100_000);
    expect(bucket.available).toBe(100);
  });

  test("options are checked when the bucket is made", () => {
    expect(() => new TokenBucket({ capacity: 0 })).toThrow("capacity 0");
    expect(() => new TokenBucket({ refillPerSecond: -1 })).toThrow("refilling -1/s");
    expect(() => new TokenBucket({ capacity: Number.NaN })).toThrow(RangeError);
    expect(() => new TokenBucket().take(-1)).toThrow("Cannot take -1 tokens");
  });
});
