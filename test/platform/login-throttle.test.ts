import { describe, expect, test } from "bun:test";
import { LoginThrottle } from "../../src/platform/index.ts";

describe("the login throttle", () => {
  test("a throttled address's refusals do not touch the per-email counts, so they cannot crowd a victim's window out", () => {
    const now = 1_000_000;
    const throttle = new LoginThrottle({ perAddress: 10, perEmail: 20, windowMs: 15 * 60_000, now: () => now });
    // Twenty guesses at the victim from twenty addresses: the victim's email is throttled everywhere.
    for (let i = 0; i < 20; i++) expect(throttle.attempt(`198.51.100.${i}`, "victim@example.com")).toBe(0);
    expect(throttle.attempt("192.0.2.1", "victim@example.com")).toBeGreaterThan(0);
    // One address spends its ten guesses, then floods cheap refusals with made-up emails (past the trackers' size).
    for (let i = 0; i < 10; i++) throttle.attempt("203.0.113.9", `guess-${i}@example.com`);
    for (let i = 0; i < 110_000; i++) expect(throttle.attempt("203.0.113.9", `made-up-${i}@example.com`)).toBeGreaterThan(0);
    expect(throttle.attempt("192.0.2.2", "victim@example.com")).toBeGreaterThan(0);
  });

  test("an attempt refused for its email does not count against its address", () => {
    const now = 1_000_000;
    const throttle = new LoginThrottle({ perAddress: 10, perEmail: 2, windowMs: 60_000, now: () => now });
    for (let i = 0; i < 2; i++) throttle.attempt(`198.51.100.${i}`, "victim@example.com");
    for (let i = 0; i < 20; i++) expect(throttle.attempt("203.0.113.9", "victim@example.com")).toBe(60_000);
    for (let i = 0; i < 10; i++) expect(throttle.attempt("203.0.113.9", `other-${i}@example.com`)).toBe(0);
  });
});
