import { describe, expect, test } from "bun:test";
import { CommandOutput } from "../../src/workflows/command-output.ts";
import type { RunEvent } from "../../src/workflows/index.ts";

/** Feed `text` to a fresh CommandOutput in chunks of `size` bytes (cutting characters and lines anywhere). */
function feed(text: string, size: number): { events: RunEvent[]; plain: string; bytes: number } {
  const events: RunEvent[] = [];
  const output = new CommandOutput((batch) => events.push(...batch));
  const bytes = new TextEncoder().encode(text);
  for (let at = 0; at < bytes.byteLength; at += size) output.push(bytes.subarray(at, at + size));
  output.end();
  return { events, plain: output.plainText(), bytes: output.bytes };
}

describe("reading a command's stdout", () => {
  const text = `première ligne\n{"type":"note","text":"à moitié"}\n${"long ".repeat(5000)}fin\n{"type":"answer","text":"réponse"}\ndernière`;

  test("lines, events and characters cut across chunks anywhere read the same as in one piece", () => {
    const whole = feed(text, 1 << 20);
    expect(whole.events).toEqual([
      { type: "note", text: "à moitié" },
      { type: "answer", text: "réponse" },
    ]);
    expect(whole.plain).toBe(`première ligne\n${"long ".repeat(5000)}fin\ndernière`);
    for (const size of [1, 2, 3, 7, 64, 4096]) expect({ size, ...feed(text, size) }).toEqual({ size, ...whole });
  });
});
