import { describe, expect, test } from "bun:test";
import { ScreenMirror } from "../../src/screen/index.ts";
import { encode } from "./mirror-fixture.ts";
import { parser } from "../helpers/parser-thread.ts";

describe("plain text", () => {
  test("readLines returns the last lines of scrollback and screen as plain text", async () => {
    using mirror = new ScreenMirror({ parser, cols: 40, rows: 5, scrollback: 100 });
    for (let i = 1; i <= 30; i++) mirror.write(encode(`\x1b[3${i % 8}mline ${i}\x1b[0m\r\n`));
    mirror.write(encode("$ "));
    expect(await mirror.readLines(4)).toEqual(["line 28", "line 29", "line 30", "$"]);
    expect((await mirror.readLines(1000)).length).toBe(31);
    expect(await mirror.readLines(0)).toEqual([]);
  });

  test("readLines joins wrapped rows into one line and leaves out blank lines at the end", async () => {
    using mirror = new ScreenMirror({ parser, cols: 10, rows: 6, scrollback: 100 });
    const long = "0123456789abcdefghij-tail";
    mirror.write(encode(`first\r\n${long}\r\n   \r\n\r\n`));
    expect(await mirror.readLines(10)).toEqual(["first", long]);
  });

  test("readLines reads the normal buffer while a full-screen app runs", async () => {
    using mirror = new ScreenMirror({ parser, cols: 40, rows: 5, scrollback: 100 });
    mirror.write(encode("$ less notes.txt\r\n\x1b[?1049h\x1b[H\x1b[2Jpage one of the notes"));
    expect(await mirror.readLines(10)).toEqual(["$ less notes.txt"]);
  });

  test("readLines refuses a negative count", async () => {
    using mirror = new ScreenMirror({ parser, cols: 40, rows: 5, scrollback: 100 });
    await expect(mirror.readLines(-1)).rejects.toThrow("Cannot read lines: max must be a non-negative integer, got -1");
  });

  test("currentLine joins the wrapped rows of the line the cursor is on", async () => {
    using mirror = new ScreenMirror({ parser, cols: 20, rows: 5, scrollback: 100 });
    const command = "$ rsync -av --delete ./build/ deploy@example.org:/srv/www/";
    mirror.write(encode(`earlier output\r\n${command}`));
    expect(command.length).toBeGreaterThan(40);
    // No settled() first: the line is read once the output written before is parsed.
    expect(await mirror.currentLine()).toEqual({ line: command, before: [] });
  });

  test("currentLine gives the lines above that reach the edge unwrapped: the start of a line a shell redrew at the wrap", async () => {
    using mirror = new ScreenMirror({ parser, cols: 10, rows: 8, scrollback: 100 });
    // Short output, an output row that reaches the edge, then bash's redraw: "$ cat /etc" to the edge, CR LF, the rest.
    mirror.write(encode("short\r\n0123456789\r\n$ cat /etc\r\n/shadow"));
    expect(await mirror.currentLine()).toEqual({ line: "/shadow", before: ["0123456789", "$ cat /etc"] });
    // A row that stops short ends the look upward; a real wrap stays one line.
    mirror.write(encode("\r\nshort\r\n$ echo 1234567"));
    expect(await mirror.currentLine()).toEqual({ line: "$ echo 1234567", before: [] });
  });

  test("currentLine shows what a recalled history line really contains", async () => {
    using mirror = new ScreenMirror({ parser, cols: 80, rows: 5, scrollback: 100 });
    // Typing "ls", then Up: bash moves back over the line, erases it and prints the history entry.
    mirror.write(encode("$ ls"));
    mirror.write(encode("\b\b\x1b[Krm -rf /srv/data"));
    expect(await mirror.currentLine()).toEqual({ line: "$ rm -rf /srv/data", before: [] });
  });

  test("UTF-8 characters split across chunks at any byte are shown whole", async () => {
    const text = "é€😀 日本";
    const bytes = encode(text);
    for (let split = 0; split <= bytes.length; split++) {
      using mirror = new ScreenMirror({ parser, cols: 40, rows: 5, scrollback: 100 });
      mirror.write(bytes.subarray(0, split));
      mirror.write(bytes.subarray(split));
      expect({ split, lines: await mirror.readLines(5) }).toEqual({ split, lines: [text] });
      expect(mirror.offset).toBe(bytes.length);
    }
  });
});
