import { expect, test } from "bun:test";
import { ByteLine } from "../../src/pty/byte-line.ts";

/** Feed `text` one UTF-16 code unit at a time, as the input guard does; \x7f is Backspace. */
function typed(text: string): string | null {
  const line = new ByteLine();
  for (const unit of text.split("")) {
    if (unit === "\x7f") line.eraseByte();
    else line.append(unit);
  }
  return line.reading();
}

test("an ASCII line has no second reading", () => {
  expect(typed("rm -rf /tmp\x7f")).toBeNull();
});

test("Backspace takes one byte of a character: what is left of it reads as U+FFFD, and a second Backspace clears it", () => {
  expect([typed("a\u00e9\x7f"), typed("a\u00e9\x7f\x7f"), typed("a\u00e9\x7f\x7f\x7f")]).toEqual(["a\ufffd", "a", ""]);
});

test("a surrogate pair is one four-byte character; a lone surrogate is U+FFFD, as it reaches the PTY", () => {
  expect(typed("x\u{1f600}")).toBe("x\u{1f600}");
  expect(typed("x\u{1f600}\x7f\x7f\x7f")).toBe("x\ufffd");
  expect([typed("\ud83dx"), typed("\ude00x"), typed("\ud83d\x7f")]).toEqual(["\ufffdx", "\ufffdx", "\ufffd"]);
});

test("Ctrl+U and Ctrl+W edit the bytes as they edit the characters", () => {
  const line = new ByteLine();
  for (const unit of "caf\u00e9 cr\u00e8me") line.append(unit);
  line.replaceWith((bytes) => bytes.slice(0, bytes.lastIndexOf(" ") + 1));
  expect(line.reading()).toBe("caf\u00e9 ");
  line.clear();
  expect(line.reading()).toBeNull();
});
