import { describe, expect, test } from "bun:test";
import { ScreenMirror } from "../../src/screen/index.ts";
import { MirrorUnderTest, attach, encode, expectSnapshotReproduces, feed, replay, seededRandom } from "./mirror-fixture.ts";
import { Terminal } from "@xterm/headless";
import { parser } from "../helpers/parser-thread.ts";

const ALPHABET = "abcdefghijklmnopqrstuvwxyz";

/** The visible rows of a terminal as trimmed text. */
function rowsOf(terminal: Terminal): string[] {
  const buffer = terminal.buffer.active;
  const rows: string[] = [];
  for (let y = 0; y < terminal.rows; y++) rows.push(buffer.getLine(buffer.baseY + y)?.translateToString(true) ?? "");
  return rows;
}

describe("resize", () => {
  test("widening does not reflow earlier text: a wrapped line keeps its line break", async () => {
    using mirror = new ScreenMirror({ parser, cols: 20, rows: 4, scrollback: 100 });
    mirror.write(encode(`${ALPHABET}\r\n$ `));
    mirror.resize(40, 4);
    const { client } = await attach(mirror);
    expect(rowsOf(client)).toEqual(["abcdefghijklmnopqrst", "uvwxyz", "$ ", ""]);

    // What the option prevents: plain xterm.js joins the two rows.
    const reflowing = new Terminal({ cols: 20, rows: 4, allowProposedApi: true });
    await feed(reflowing, `${ALPHABET}\r\n$ `);
    reflowing.resize(40, 4);
    expect(rowsOf(reflowing)[0]).toBe(ALPHABET);
  });

  test("narrowing does not reflow earlier text: long lines are cut at the edge, not wrapped onto new rows", async () => {
    using mirror = new ScreenMirror({ parser, cols: 40, rows: 4, scrollback: 100 });
    mirror.write(encode(`${ALPHABET.repeat(2).slice(0, 30)}\r\nnext\r\n`));
    mirror.resize(20, 4);
    const { client } = await attach(mirror);
    expect(rowsOf(client)).toEqual(["abcdefghijklmnopqrst", "next", "", ""]);
    expect(await mirror.readLines(10)).toEqual(["abcdefghijklmnopqrst", "next"]);

    // The cut text is kept, as on the terminal that printed it, and shows again when wide enough.
    mirror.resize(40, 4);
    expect(await mirror.readLines(10)).toEqual([ALPHABET.repeat(2).slice(0, 30), "next"]);
  });

  test("output written before a resize is laid out at the old width even if not yet parsed", async () => {
    using mirror = new ScreenMirror({ parser, cols: 20, rows: 4, scrollback: 100 });
    mirror.write(encode(ALPHABET));
    mirror.resize(40, 4); // before xterm.js has parsed the write
    mirror.write(encode(`\r\n${ALPHABET}`));
    const { snapshot, client } = await attach(mirror);
    expect([snapshot.cols, snapshot.rows]).toEqual([40, 4]);
    expect(rowsOf(client)).toEqual(["abcdefghijklmnopqrst", "uvwxyz", ALPHABET, ""]);
  });

  test("a snapshot that resolves after a resize shows the new size, even if it was asked for before", async () => {
    using mirror = new ScreenMirror({ parser, cols: 20, rows: 4, scrollback: 100 });
    mirror.write(encode(`${ALPHABET}\r\n$ `));
    await mirror.settled();
    const asked = mirror.snapshot();
    mirror.resize(40, 6);
    const snapshot = await asked;
    expect([snapshot.cols, snapshot.rows]).toEqual([40, 6]);
    const client = await replay(snapshot, 100);
    await feed(client, mirror.bytesSince(snapshot.offset)!);
    expect(rowsOf(client)).toEqual(["abcdefghijklmnopqrst", "uvwxyz", "$ ", "", "", ""]);
  });

  test("a wrapped line whose row ends in the orphaned right half of a wide character, bared by a widen, keeps its text in place", async () => {
    using subject = new MirrorUnderTest({ cols: 20, rows: 5, scrollback: 100 });
    // CJK text ending exactly at the edge, then a shrink: 日 straddles the new edge (no reflow keeps it).
    subject.write(`${"a".repeat(18)}日\r\n$ `);
    await subject.resize(19, 5);
    // A dashboard loop redraws from the top without clearing: its first line wraps, overprinting 日's left half.
    subject.write(`\x1b[H${"b".repeat(19)}continued\r\n$ `);
    await subject.resize(20, 5);
    const { client } = await expectSnapshotReproduces(subject, expect);
    // The continuation is not shifted by the orphaned cell (only its wrap flag is lost).
    expect(rowsOf(client).slice(0, 2)).toEqual(["b".repeat(19), "continued"]);
  });

  test("a full-screen app stays whole when the terminal grows after it scrolled", async () => {
    // With xterm.js's ConPTY row logic this leaves the alternate buffer a row
    // short, and the app's redraw lands on the wrong rows.
    using subject = new MirrorUnderTest({ cols: 20, rows: 4, scrollback: 100 });
    await subject.resize(20, 3);
    subject.write(`$ top\r\n\x1b[?1049h${"scrolling\r\n".repeat(8)}`);
    await subject.resize(20, 11);
    let redraw = "\x1b[H\x1b[2J";
    for (let y = 1; y <= 11; y++) redraw += `\x1b[${y};1H\x1b[3${y % 8}mrow ${y}\x1b[0m`;
    subject.write(redraw);
    const { client } = await expectSnapshotReproduces(subject, expect);
    expect(rowsOf(client)).toEqual([...Array(10).keys()].map((y) => `row ${y + 1}`).concat("row 11Z"));
  });

  test("a long session with resizes, full-screen apps and wide characters snapshots exactly at every step", async () => {
    const words = ["alpha ", "日本語", "😀", "x", "-rw-r--r-- 1 root ", " ", "\t", "é"];
    for (let seed = 1; seed <= 8; seed++) {
      const random = seededRandom(seed * 7919);
      const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
      let cols = 10 + Math.floor(random() * 60);
      let rows = 2 + Math.floor(random() * 11);
      using subject = new MirrorUnderTest({ cols, rows, scrollback: 50 + Math.floor(random() * 300) });
      for (let step = 0; step < 6; step++) {
        const r = random();
        if (r < 0.2) {
          cols = 10 + Math.floor(random() * 60);
          rows = 2 + Math.floor(random() * 11);
          await subject.resize(cols, rows);
        } else if (r < 0.3) {
          subject.write(`\x1b[?1049h\x1b[H\x1b[4${Math.floor(random() * 8)}m\x1b[2Jfull screen\x1b[0m`);
        } else if (r < 0.4) {
          subject.write("\x1b[?1049l");
        }
        let output = "";
        for (let line = Math.floor(random() * 120); line > 0; line--) {
          for (let part = 1 + Math.floor(random() * 5); part > 0; part--) {
            const kind = random();
            if (kind < 0.3) output += `\x1b[${pick(["31", "1;32", "44", "48;5;202", "0", "7", "4;9", "38;2;1;2;3"])}m`;
            else if (kind < 0.35) output += "\x1b[K";
            else if (kind < 0.4) output += "y".repeat(Math.floor(random() * cols * 2));
            else if (kind < 0.43) output += `\x1b[${1 + Math.floor(random() * 4)}X`;
            else if (kind < 0.45) output += "\x1b[A";
            else output += pick(words);
          }
          output += random() < 0.6 ? "\x1b[0m\r\n" : "\r\n";
        }
        subject.write(output);
        await expectSnapshotReproduces(subject, expect);
      }
    }
  });
});
