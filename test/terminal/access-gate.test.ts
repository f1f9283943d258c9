import { expect, test } from "bun:test";
import { AccessGate, MAX_GATED_BYTES, MAX_GATED_MESSAGES } from "../../src/terminal/access-gate.ts";

/** A gate whose decisions wait until `allow()` or `deny()` is called. */
function slowGate() {
  let decisions = 0;
  let settle: (allowed: boolean) => void = () => {};
  const gate = new AccessGate(() => {
    decisions++;
    return new Promise<boolean>((resolve) => (settle = resolve));
  });
  return { gate, allow: () => settle(true), deny: () => settle(false), decisions: () => decisions };
}

test("messages waiting on one slow decision are capped in number; the ones taken run in order once it allows", async () => {
  const { gate, allow, decisions } = slowGate();
  const ran: number[] = [];
  const taken = Array.from({ length: MAX_GATED_MESSAGES + 10 }, (_, i) => gate.run(() => ran.push(i)));
  expect(taken.filter(Boolean).length).toBe(MAX_GATED_MESSAGES);
  expect(taken.slice(MAX_GATED_MESSAGES)).toEqual(Array(10).fill(false));
  expect(decisions()).toBe(1);
  allow();
  await Bun.sleep(0);
  expect(ran).toEqual(Array.from({ length: MAX_GATED_MESSAGES }, (_, i) => i));
  // Once they ran, the gate takes messages again.
  expect(gate.run(() => ran.push(-1))).toBe(true);
});

test("input bytes waiting on a decision are capped too, whatever the message count; one message alone is always taken", async () => {
  const { gate, allow } = slowGate();
  const half = MAX_GATED_BYTES / 2;
  expect([gate.run(() => {}, half), gate.run(() => {}, half), gate.run(() => {}, 1)]).toEqual([true, true, false]);
  allow();
  await Bun.sleep(0);
  // The session answers an oversized message with why it was dropped; the gate lets it get there.
  expect([gate.run(() => {}, 2 * MAX_GATED_BYTES), gate.run(() => {}, 1)]).toEqual([true, false]);
});

test("a recheck is never refused, so a revoke is decided on while a flood waits", async () => {
  const { gate, deny, allow, decisions } = slowGate();
  for (let i = 0; i < MAX_GATED_MESSAGES; i++) gate.run(() => {});
  gate.recheck();
  allow();
  await Bun.sleep(0);
  // The recheck waited for the decision under way, then asked for a new one.
  expect(decisions()).toBe(2);
  let ran = false;
  gate.run(() => (ran = true));
  deny();
  await Bun.sleep(0);
  expect(ran).toBe(false);
});

test("a message that throws does not stop the ones behind it", async () => {
  const gate = new AccessGate(async () => true);
  const ran: string[] = [];
  const logged: unknown[] = [];
  const error = console.error;
  console.error = (...args: unknown[]) => void logged.push(args[0]);
  try {
    gate.run(() => {
      throw new Error("boom");
    });
    gate.run(() => ran.push("after"));
    await Bun.sleep(0);
  } finally {
    console.error = error;
  }
  expect(ran).toEqual(["after"]);
  expect(logged).toEqual(["hatch: a terminal message could not be handled"]);
});
