import { describe, expect, test } from "bun:test";
import { BUSY_RETRY_MS, LoginThrottle } from "../../src/platform/index.ts";
import { startWorld, TEST_PASSWORD } from "../helpers/world.ts";

/** One wrong password: the attempt begins and fails; resolves with what `attempt` answered. */
async function guess(throttle: LoginThrottle, address: string, email: string): Promise<number> {
  const wait = await throttle.attempt(address, email);
  if (wait === 0) throttle.failed(address, email);
  return wait;
}

describe("the login throttle", () => {
  test("a throttled address's refusals do not touch the per-email counts, so they cannot crowd a victim's window out", async () => {
    const now = 1_000_000;
    const throttle = new LoginThrottle({ perAddress: 10, perEmail: 20, windowMs: 15 * 60_000, now: () => now });
    // Twenty guesses at the victim from twenty addresses: the victim's email is throttled everywhere.
    for (let i = 0; i < 20; i++) expect(await guess(throttle, `198.51.100.${i}`, "victim@example.com")).toBe(0);
    expect(await throttle.attempt("192.0.2.1", "victim@example.com")).toBeGreaterThan(0);
    // One address spends its ten guesses, then floods cheap refusals with made-up emails (past the trackers' size).
    for (let i = 0; i < 10; i++) await guess(throttle, "203.0.113.9", `guess-${i}@example.com`);
    for (let i = 0; i < 110_000; i++) expect(await throttle.attempt("203.0.113.9", `made-up-${i}@example.com`)).toBeGreaterThan(0);
    expect(await throttle.attempt("192.0.2.2", "victim@example.com")).toBeGreaterThan(0);
  });

  test("an attempt refused for its email does not count against its address", async () => {
    const now = 1_000_000;
    const throttle = new LoginThrottle({ perAddress: 10, perEmail: 2, windowMs: 60_000, now: () => now });
    for (let i = 0; i < 2; i++) await guess(throttle, `198.51.100.${i}`, "victim@example.com");
    for (let i = 0; i < 20; i++) expect(await throttle.attempt("203.0.113.9", "victim@example.com")).toBe(60_000);
    for (let i = 0; i < 10; i++) expect(await guess(throttle, "203.0.113.9", `other-${i}@example.com`)).toBe(0);
  });

  test("a login that finds the window full of attempts still being checked waits for them: let in when one succeeds, refused for the window when they all fail", async () => {
    const now = 1_000_000;
    const throttle = new LoginThrottle({ perAddress: 2, perEmail: 20, windowMs: 60_000, now: () => now });
    for (const email of ["a@example.com", "b@example.com"]) expect(await throttle.attempt("192.0.2.1", email)).toBe(0);
    let third: number | null = null;
    const waiting = throttle.attempt("192.0.2.1", "c@example.com").then((wait) => (third = wait));
    await Bun.sleep(10);
    expect(third).toBeNull();
    throttle.succeeded("192.0.2.1", "a@example.com");
    expect(await waiting).toBe(0);

    // Now b and c are being checked, and a fourth waits; both fail: the window holds two failures, and it is refused.
    const fourth = throttle.attempt("192.0.2.1", "d@example.com");
    throttle.failed("192.0.2.1", "b@example.com");
    throttle.failed("192.0.2.1", "c@example.com");
    expect(await fourth).toBe(60_000);
  });

  test("a login that waits past its limit for attempts that never end is told to try again in a second", async () => {
    const throttle = new LoginThrottle({ perAddress: 1, perEmail: 20, windowMs: 60_000, queueWaitMs: 50 });
    expect(await throttle.attempt("192.0.2.1", "a@example.com")).toBe(0);
    // The first is never ended (its password check hangs): the second gives up after its wait.
    expect(await throttle.attempt("192.0.2.1", "b@example.com")).toBe(BUSY_RETRY_MS);
  });

  test("people signing in at once from one address (an office NAT) are all let in: no login failed, so none is told to wait", async () => {
    await using world = await startWorld();
    const people = await Promise.all(Array.from({ length: 12 }, (_, i) => world.platform.users.create(`colleague-${i}@example.com`, TEST_PASSWORD)));
    const answers = await Promise.all(people.map((p) => world.anonymous().post("/api/auth/login", { email: p.email, password: TEST_PASSWORD })));
    expect(answers.map((a) => ({ status: a.status, retryAfter: a.headers.get("retry-after") }))).toEqual(people.map(() => ({ status: 200, retryAfter: null })));
  });

  test("a burst of parallel wrong passwords from one address still gets no more than its ten guesses checked", async () => {
    await using world = await startWorld();
    const victim = await world.platform.users.create("victim@example.com", TEST_PASSWORD);
    const answers = await Promise.all(Array.from({ length: 16 }, (_, i) => world.anonymous().post("/api/auth/login", { email: victim.email, password: `wrong-${i}-${TEST_PASSWORD}` })));
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses).toEqual([...Array(10).fill(401), ...Array(6).fill(429)]);
    // Refused for the window the ten failures fill, and the right password with them.
    const right = await world.anonymous().post("/api/auth/login", { email: victim.email, password: TEST_PASSWORD });
    expect({ status: right.status, retryAfter: Number(right.headers.get("retry-after")) > 800 }).toEqual({ status: 429, retryAfter: true });
  });
});
