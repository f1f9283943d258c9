import { describe, expect, test } from "bun:test";
import { Terminal } from "@xterm/headless";
import { MirrorUnderTest, attach, concat, encode, expectSameAcrossSnapshot, expectSameAfter, expectSnapshotReproduces, feed, replay, screenState, seededRandom } from "./mirror-fixture.ts";

// No SGR 2 (dim): addon-serialize 0.14 ends bold with it (see row-serializer.ts).
const SGR = ["31", "1;32", "44", "48;5;202", "38;2;10;20;30", "7", "4", "3;9", "0", "49", "53", "97;41", "5", "8"];
const WORDS = ["alpha ", "βeta ", "日本語", "😀", "x", "-rw-r--r-- 1 root ", " ", "\t", "path/to/file.ts"];

/** Shell-like output: words, colour changes, erases with a background, lines long enough to wrap. */
function shellOutput(random: () => number, lines: number, cols: number): string {
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
  let out = "";
  for (let i = 0; i < lines; i++) {
    let line = "";
    const parts = 1 + Math.floor(random() * 6);
    for (let p = 0; p < parts; p++) {
      const r = random();
      if (r < 0.3) line += `\x1b[${pick(SGR)}m`;
      else if (r < 0.36) line += "\x1b[K";
      else if (r < 0.42) line += "y".repeat(Math.floor(random() * cols * 2.5));
      else if (r < 0.45) line += "日".repeat(Math.floor(random() * cols));
      else line += pick(WORDS);
    }
    // Some lines leave their colours on across the line break, as prompts do.
    if (random() < 0.6) line += "\x1b[0m";
    out += `${line}\r\n`;
  }
  return out;
}

/** A full-screen app's frame: a title row and a status row around the rows it scrolls. */
const DRAW_TOP = "\x1b[?1049h\x1b[H\x1b[2J\x1b[7mtitle\x1b[K\x1b[0m\x1b[10;1Hstatus";

describe("snapshots", () => {
  test("a snapshot carries size, cursor position, colours and the attributes left active", async () => {
    using subject = new MirrorUnderTest({ cols: 60, rows: 8, scrollback: 100 });
    subject.write("\x1b[1;31mred bold\x1b[0m \x1b[38;2;1;2;3;48;5;17mtruecolor on 256\x1b[0m\r\n");
    subject.write("\x1b[3;4;9;53mstyled\x1b[0m \x1b[7minverse\x1b[0m \x1b[2mdim\x1b[0m 日本 😀\r\n");
    subject.write("\x1b[42m   \x1b[0m   \x1b[43m\x1b[K\x1b[0m\r\n");
    subject.write("$ typed comm\x1b[5D\x1b[35;1m");
    await subject.settled();
    const written = subject.mirror.offset;

    const { snapshot } = await expectSnapshotReproduces(subject, expect);
    expect({ ...snapshot, data: "" }).toEqual({ data: "", cols: 60, rows: 8, offset: written, fullScreen: false });
  });

  test("a snapshot with a long scrollback reproduces every line, colour and wrap", async () => {
    const random = seededRandom(1);
    using subject = new MirrorUnderTest({ cols: 50, rows: 12, scrollback: 2000 });
    subject.write(shellOutput(random, 600, 50));
    await expectSnapshotReproduces(subject, expect);
  });

  test("snapshots stay exact as output grows, the scrollback is trimmed, cleared and reset", async () => {
    const random = seededRandom(2);
    using subject = new MirrorUnderTest({ cols: 40, rows: 10, scrollback: 300 });
    const steps: [string, string][] = [
      ["first output", shellOutput(random, 120, 40)],
      ["more output, cached history reused", shellOutput(random, 50, 40)],
      ["history trimmed off the top", shellOutput(random, 400, 40)],
      ["a few more lines", shellOutput(random, 3, 40)],
      ["scrollback cleared (ED 3)", "\x1b[3J"],
      ["output after the clear", shellOutput(random, 40, 40)],
      ["full reset (RIS)", `\x1bc${shellOutput(random, 25, 40)}`],
    ];
    for (const [, output] of steps) {
      subject.write(output);
      await expectSnapshotReproduces(subject, expect);
    }
  });

  test("a line that wraps from the scrollback onto the screen looks the same", async () => {
    using subject = new MirrorUnderTest({ cols: 20, rows: 4, scrollback: 100 });
    subject.write(`\x1b[44m${"w".repeat(95)}\x1b[0m`);
    await expectSnapshotReproduces(subject, expect);
  });

  test("a scrollback of exactly one blank row is carried, so the client's history stays in line with the mirror's", async () => {
    using subject = new MirrorUnderTest({ cols: 30, rows: 3, scrollback: 100 });
    // `clear` (history emptied too), then a prompt that starts with a blank line (starship's add_newline), a command, its output.
    subject.write("\x1b[H\x1b[2J\x1b[3J\r\n~/src\r\n\u276f make\r\nbuild ok");
    await subject.settled();
    expect(subject.reference.buffer.normal.baseY).toBe(1);
    const { client } = await expectSnapshotReproduces(subject, expect);
    expect(client.buffer.normal.baseY).toBe(1);
  });

  test("automatic newline mode (LNM, CSI 20 h) stays in force after a snapshot: a bare LF still returns to the first column", async () => {
    using subject = new MirrorUnderTest({ cols: 30, rows: 5, scrollback: 100 });
    subject.write("\x1b[20hfirst\n");
    const { client } = await expectSnapshotReproduces(subject, expect);
    await expectSameAfter(subject, client, "second\nthird", expect);
  });

  test("a one-row terminal still gets its scrollback", async () => {
    const random = seededRandom(3);
    using subject = new MirrorUnderTest({ cols: 30, rows: 1, scrollback: 100 });
    subject.write(shellOutput(random, 30, 30));
    await expectSnapshotReproduces(subject, expect);
  });

  test("scrollback under a running full-screen app is reproduced, and so is the shell after it quits", async () => {
    const random = seededRandom(4);
    using subject = new MirrorUnderTest({ cols: 40, rows: 10, scrollback: 500 });
    subject.write(shellOutput(random, 80, 40));
    await subject.mirror.snapshot(); // warms the history cache before the app starts
    subject.write(`${shellOutput(random, 20, 40)}\x1b[?1049h\x1b[H\x1b[2J\x1b[44m\x1b[2J\x1b[5;5Hediting\x1b[0m`);
    const { client } = await expectSnapshotReproduces(subject, expect);

    subject.write("\x1b[?1049l");
    await Promise.all([feed(client, "\x1b[?1049l"), subject.settled()]);
    expect(screenState(client, subject.reference)).toEqual(screenState(subject.reference));
  });

  test("a scroll region stays in force after a snapshot: apt's progress line, a full-screen app's panes with origin mode, the shell's under an app", async () => {
    const cases: Record<string, [setup: string, after: string]> = {
      // apt reserves the last row for its progress bar and scrolls the output above it.
      apt: ["\x1b7\x1b[1;9r\x1b8\x1b[9;1HSetting up a\x1b7\x1b[10;1H\x1b[42mProgress: [ 40%]\x1b[0m\x1b8", "\r\nSetting up b\r\nSetting up c"],
      // tmux sets a pane's region once and keeps scrolling inside it.
      pane: [`${DRAW_TOP}\x1b[3;8r\x1b[?6h\x1b[6;1Hin the pane`, "\r\nscrolled\r\nagain\r\nand again"],
      // The normal screen keeps its region under a full-screen app, for when it quits.
      under: ["\x1b[1;9r\x1b[9;1HSetting up a\x1b[?1049h\x1b[Hpager", "\x1b[?1049l\r\nSetting up b\r\nSetting up c"],
    };
    for (const [setup, after] of Object.values(cases)) {
      using subject = new MirrorUnderTest({ cols: 30, rows: 10, scrollback: 100 });
      subject.write(setup);
      const { client } = await expectSnapshotReproduces(subject, expect);
      await expectSameAfter(subject, client, after, expect);
    }
  });

  test("a snapshot is taken even while output keeps arriving faster than it is parsed", async () => {
    // A ring far smaller than the parse backlog: the unparsed bytes are kept anyway.
    using subject = new MirrorUnderTest({ cols: 80, rows: 24, scrollback: 1000, ringBytes: 4096 });
    const random = seededRandom(5);
    const chunks = Array.from({ length: 8 }, () => encode(shellOutput(random, 400, 80)));
    let produced = 0;
    let taken = false;
    const produce = (): void => {
      if (taken || produced >= 2000) return;
      // Two chunks a turn: more than xterm.js parses in one, so it never drains.
      subject.write(chunks[produced++ % chunks.length]!);
      subject.write(chunks[produced++ % chunks.length]!);
      setImmediate(produce);
    };
    produce();
    const snapshot = await subject.mirror.snapshot();
    taken = true;
    expect(produced).toBeLessThan(2000);
    expect(snapshot.offset).toBeLessThan(subject.mirror.offset);

    const client = await replay(snapshot, subject.scrollback);
    await Promise.all([feed(client, subject.mirror.bytesSince(snapshot.offset)!), subject.settled()]);
    // The row where scrollback met screen at the snapshot point has scrolled
    // on by now, so its wrap flag (sent as a line break) is not compared.
    const unwrapped = (rows: string[]): string[] => rows.map((row) => row.replace(/^↩/, ""));
    const [actual, expected] = [screenState(client, subject.reference), screenState(subject.reference)];
    expect({ ...actual, normal: unwrapped(actual.normal) }).toEqual({ ...expected, normal: unwrapped(expected.normal) });
  });

  test("a snapshot taken while an escape sequence is split across reads ends with its start", async () => {
    using subject = new MirrorUnderTest({ cols: 40, rows: 5, scrollback: 100 });
    subject.write("plain \x1b[3");
    await subject.settled();
    const snapshot = await subject.mirror.snapshot();
    expect(snapshot.offset).toBe(subject.mirror.offset);
    expect(snapshot.data.endsWith("\x1b[3")).toBe(true);

    const client = await replay(snapshot, 100);
    subject.write("1mred");
    await Promise.all([feed(client, encode("1mred")), subject.settled()]);
    expect(screenState(client, subject.reference)).toEqual(screenState(subject.reference));
  });

  test("control characters inside a split sequence, already executed by the mirror, are not executed again by the client", async () => {
    const cases: Record<string, [setup: string, rest: string]> = {
      csi: ["plain\x1b[3\n", "1mred"],
      escape: ["plain\x1b\r\n\b", "[32mgreen"],
      designation: ["plain\x1b(\n", "0qqq"],
      csiParams: ["a\r\nb\r\nc\x1b[1;\x0b\r3", "1mred"],
      escapeThenCsi: ["plain\x1b\n[\n3", "1mred"],
    };
    for (const [name, [setup, rest]] of Object.entries(cases)) {
      using subject = new MirrorUnderTest({ cols: 40, rows: 5, scrollback: 100 });
      subject.write(setup);
      await subject.settled();
      const client = await replay(await subject.mirror.snapshot(), 100);
      await expectSameAfter(subject, client, rest, expect, name);
    }
  });

  test("a snapshot taken while a UTF-8 character is split across reads waits for the rest", async () => {
    using subject = new MirrorUnderTest({ cols: 40, rows: 5, scrollback: 100 });
    const euro = encode("€");
    subject.write(encode("price: "));
    subject.write(euro.subarray(0, 1));
    await subject.settled();
    const pending = subject.mirror.snapshot();
    subject.write(euro.subarray(1));
    const snapshot = await pending;
    expect(snapshot.offset).toBe(encode("price: €").length);

    const client = await replay(snapshot, 100);
    expect(client.buffer.active.getLine(0)?.translateToString(true)).toBe("price: €");
  });

  test("a snapshot taken while the program stalls inside a UTF-8 character leaves nothing out: the client gets all its bytes after it", async () => {
    using subject = new MirrorUnderTest({ cols: 40, rows: 5, scrollback: 100 });
    const han = encode("日");
    // A PTY paused by flow control can stop mid-character for as long as a view lags.
    subject.write(concat(encode("text: "), han.subarray(0, 2)));
    await subject.settled();
    const { client } = await attach(subject.mirror, 100);
    subject.write(concat(han.subarray(2), encode("本")));
    await Promise.all([feed(client, concat(han.subarray(2), encode("本"))), subject.settled()]);
    expect(client.buffer.active.getLine(0)?.translateToString(true)).toBe("text: 日本");
    expect(screenState(client, subject.reference)).toEqual(screenState(subject.reference));
  });

  test("hyperlinks (OSC 8: ls --hyperlink, gcc, systemd) stay links after a snapshot, in the history and on both screens, and a link left open goes on", async () => {
    const link = (uri: string, text: string, id = "") => `\x1b]8;${id && `id=${id}`};${uri}\x1b\\${text}\x1b]8;;\x1b\\`;
    const cases: Record<string, [setup: string, after: string]> = {
      lsHyperlink: [`${link("file:///tmp/a", "a")}  ${link("file:///tmp/b%20c", "b c.txt")}\r\n$ `, "ls\r\n"],
      belTerminated: ["\x1b]8;;https://example.com/bel\x07bel\x1b]8;;\x07 after\r\n", "x"],
      adjacent: [`${link("https://a.example", "A")}${link("https://b.example", "B")}C\r\n`, "x"],
      wrappedWithId: [`${link("https://example.com/long", "x".repeat(25), "w")} end\r\n`, "x"],
      coloured: [`\x1b[34;4m${link("https://c.example", "blue")}\x1b[0m plain\r\n`, "x"],
      wide: [`${link("https://wide.example", "日本語")}\r\n`, "x"],
      inHistory: [Array.from({ length: 12 }, (_, i) => `line ${link(`https://example.com/${i}`, `page ${i}`)}\r\n`).join(""), "x"],
      pendingWrapAtTheEdge: [`${link("https://edge.example", "0123456789")}`.replace("\x1b]8;;\x1b\\", ""), "next\x1b]8;;\x1b\\ plain"],
      leftOpen: ["\x1b]8;id=o;https://open.example\x1b\\still ", "linked\x1b]8;;\x1b\\ plain"],
      fullScreenApp: [`shell ${link("https://shell.example", "link")}\x1b[?1049h\x1b[H\x1b[2J${link("https://app.example", "in the app")}`, "\x1b[?1049lback"],
    };
    for (const [name, [setup, after]] of Object.entries(cases)) {
      using subject = new MirrorUnderTest({ cols: 10, rows: 4, scrollback: 100 });
      subject.write(setup);
      const { client } = await expectSnapshotReproduces(subject, expect);
      await expectSameAfter(subject, client, after, expect, name);
    }
  });

  test("the window title a program set (OSC 0 or 2) is carried, and none when it set none", async () => {
    const cases: Record<string, [output: string, title: string | null]> = {
      none: ["$ ", null],
      osc2: ["\x1b]2;user@host: ~/src\x07$ ", "user@host: ~/src"],
      osc0: ["\x1b]0;vim — notes.md\x1b\\\x1b[?1049hediting", "vim — notes.md"],
      setTwice: ["\x1b]2;first\x07\x1b]2;second\x07", "second"],
    };
    for (const [name, [output, title]] of Object.entries(cases)) {
      using subject = new MirrorUnderTest({ cols: 40, rows: 5, scrollback: 100 });
      subject.write(output);
      await subject.settled();
      const snapshot = await subject.mirror.snapshot();
      const client = new Terminal({ cols: snapshot.cols, rows: snapshot.rows, allowProposedApi: true });
      let seen = null as string | null;
      client.onTitleChange((t) => (seen = t));
      await feed(client, snapshot.data);
      expect({ name, title: seen }).toEqual({ name, title });
      client.dispose();
    }
  });

  test("an OSC title split across reads is continued by the client", async () => {
    using subject = new MirrorUnderTest({ cols: 40, rows: 5, scrollback: 100 });
    subject.write("\x1b]0;my ti");
    await subject.settled();
    const snapshot = await subject.mirror.snapshot();
    const client = await replay(snapshot, 100);
    let title = "";
    client.onTitleChange((t) => (title = t));
    subject.write("tle\x07after");
    await Promise.all([feed(client, "tle\x07after"), subject.settled()]);
    expect(title).toBe("my title");
    expect(screenState(client, subject.reference)).toEqual(screenState(subject.reference));
  });
});

describe("long sequences", () => {
  test("a snapshot taken while the program is stalled inside a long sequence (an OSC 52 copy or an inline image paused by flow control) does not print the rest of it as text", async () => {
    using subject = new MirrorUnderTest({ cols: 40, rows: 6, scrollback: 100 });
    subject.write("$ printf '\\e]52;c;%s\\a' \"$(base64 big.txt)\"\r\n");
    subject.write("\x1b]52;c;");
    // 80 KiB of base64 in 4 KiB reads, then the PTY is paused (a lagging holder) or the program stalls.
    for (let i = 0; i < 20; i++) subject.write("QUFB".repeat(1024));
    await subject.settled();
    const { client } = await attach(subject.mirror, 100);
    // The program goes on: the rest of the sequence, then the prompt.
    const rest = `${"QUFB".repeat(10)}\x07\r\n$ `;
    subject.write(rest);
    await Promise.all([feed(client, rest), subject.settled()]);
    expect(screenState(client, subject.reference)).toEqual(screenState(subject.reference));
  });

  test("a snapshot taken inside a long DCS (an inline image) takes in the rest of it too, and the program's text after it shows", async () => {
    using subject = new MirrorUnderTest({ cols: 40, rows: 6, scrollback: 100 });
    subject.write("$ img2sixel photo.png\r\n\x1bPq#0;2;0;0;0");
    for (let i = 0; i < 20; i++) subject.write("~-".repeat(2048));
    await subject.settled();
    const { client } = await attach(subject.mirror, 100);
    const rest = `${"~-".repeat(10)}\x1b\\\r\ndone\r\n$ `;
    subject.write(rest);
    await Promise.all([feed(client, rest), subject.settled()]);
    expect(screenState(client, subject.reference)).toEqual(screenState(subject.reference));
  });
});

describe("hyperlinks", () => {
  test("a hyperlink left open whose line was cleared: once the program closes it, a reconnected client underlines nothing more", async () => {
    using subject = new MirrorUnderTest({ cols: 40, rows: 6, scrollback: 100 });
    // `ls --hyperlink` interrupted inside a link, then `clear`: xterm.js drops the link's data with the line, and
    // the text printed after it still carries the link, which no snapshot can open again (it has no target).
    subject.write("$ ls --hyperlink=always\r\n\x1b]8;;file:///srv/a.txt\x1b\\a.t^C\r\n$ clear\r\n");
    subject.write("\x1b[H\x1b[2J\x1b[3J$ ");
    await subject.settled();
    const { client } = await attach(subject.mirror, 100);
    // The program's next output closes the link: from there nothing is underlined, on the client as on the reference.
    await expectSameAfter(subject, client, "\x1b]8;;\x1b\\echo done\r\ndone\r\n$ ", expect, "the link closed after the snapshot");
  });
});

describe("protected text (DECSCA)", () => {
  test("text a program protected survives a selective erase (DECSED) after a snapshot, as on the reference", async () => {
    using subject = new MirrorUnderTest({ cols: 40, rows: 6, scrollback: 100 });
    // A form: protected labels, unprotected fields.
    subject.write('\x1b[1"qName:\x1b[0"q alice\r\n\x1b[1"qMail:\x1b[0"q a@x\r\n');
    const { client } = await expectSnapshotReproduces(subject, expect);
    // Clear the fields, keep the labels.
    await expectSameAfter(subject, client, "\x1b[?2J", expect, "DECSED after the snapshot");
  });

  test("protection across an attribute change mid-run, and protection still on at the snapshot, are carried too", async () => {
    using subject = new MirrorUnderTest({ cols: 40, rows: 6, scrollback: 100 });
    // Bold then plain inside one protected run, then protection left on for what the program prints next.
    subject.write('\x1b[1"q\x1b[1mKEY\x1b[22m:val\x1b[0"q free\r\n\x1b[31m\x1b[1"q');
    const { client } = await expectSnapshotReproduces(subject, expect);
    await expectSameAfter(subject, client, "kept\r\n\x1b[?2J", expect, "printed protected after the snapshot, then DECSED");
  });
});

describe("counts past the screen", () => {
  test("scrolls, line inserts and deletes and tab steps with xterm's largest count leave the mirror as the screen's worth of them does", async () => {
    // The bounded count is the screen's height (width for tabs): a reference given it is the mirror's model.
    for (const [final, bounded] of [["S", 8], ["T", 8], ["L", 8], ["M", 8], ["I", 30], ["Z", 30]] as const) {
      using subject = new MirrorUnderTest({ cols: 30, rows: 8, scrollback: 100 });
      // Text on every row, a scroll region of rows 3-6 with the cursor inside it, tab stops every 8 columns.
      subject.write(Array.from({ length: 8 }, (_, row) => `row ${row + 1} text`).join("\r\n") + "\x1b[3;6r\x1b[4;12H");
      await subject.settled();
      subject.mirror.write(encode(`\x1b[2147483647${final}x`));
      await feed(subject.reference, `\x1b[${bounded}${final}x`);
      await subject.mirror.settled();
      const { client } = await attach(subject.mirror, 100);
      expect({ final, state: screenState(client, subject.reference) }).toEqual({ final, state: screenState(subject.reference) });
    }
  });
});

describe("protected text (DECSCA) at the right edge", () => {
  test("a protected character filling the row's last cell (cursor waiting to wrap) stays protected after a snapshot", async () => {
    // A form's protected label reaching the right edge; the program turns protection off, the cursor waits to wrap.
    // DECSED: erase everything not protected.
    await expectSameAcrossSnapshot({ cols: 10, rows: 4, scrollback: 100 }, 'ab\r\n\x1b[1"qPROTECTED!\x1b[0"q', "\x1b[?2J", expect, "DECSED after the snapshot");
  });
});

describe("saved cursor state", () => {
  test("text printed after DECRC is protected when the cursor was saved (DECSC) with protection on", async () => {
    // A form program: save the cursor while printing protected labels, turn protection off, restore later.
    await expectSameAcrossSnapshot({ cols: 20, rows: 4, scrollback: 100 }, '\x1b[1"qName:\x1b7\x1b[0"q alice\r\n', "\x1b8 KEEP\x1b[?2J", expect, "DECRC, print, then DECSED after the snapshot");
  });
});

describe("the character before the cursor", () => {
  test("REP (CSI b) right after a snapshot repeats the character printed before it, as ncurses draws lines (terminfo rep)", async () => {
    // htop/mc with TERM=xterm-256color: one line-drawing character, then "repeat it 9 times"; a PTY read ends between them.
    await expectSameAcrossSnapshot({ cols: 20, rows: 4, scrollback: 100 }, "\x1b[2;1H\x1b(0q", "\x1b[9b\x1b(B", expect, "REP after the snapshot");
  });

  test("REP right after a snapshot in insert mode (IRM) inserts the repeats, and the row before them is as it was", async () => {
    // An editor inserting in the middle of a line, the last cell of the row full, a wide character in it.
    await expectSameAcrossSnapshot({ cols: 20, rows: 4, scrollback: 100 }, "hello 日本 world!!!!\x1b[1;4H\x1b[4hx", "\x1b[3b", expect, "REP in insert mode after the snapshot");
  });

  test("a combining mark that arrives right after a snapshot joins the character before it instead of taking a cell", async () => {
    // NFD text (macOS file names, `ls` on such a volume): "cafe" then U+0301, cut by a PTY read.
    await expectSameAcrossSnapshot({ cols: 20, rows: 4, scrollback: 100 }, "$ ls\r\ncafe", "\u0301.txt\r\n$ ", expect, "combining mark after the snapshot");
  });
});

describe("saved character set", () => {
  test("the character set DECRC restored (not the one designated) is the one in use after a snapshot", async () => {
    // A status-line painter: save the cursor, draw a rule in DEC line drawing at the top, restore the cursor
    // (DECRC restores the character set saved with it, US ASCII), and the shell goes on printing letters.
    await expectSameAcrossSnapshot({ cols: 30, rows: 4, scrollback: 100 }, "line\r\n$ \x1b7\x1b[1;20H\x1b(0qqqqq\x1b8", "ls -l\r\n", expect, "letters printed after the snapshot");
  });
});

describe("underline styles and colours", () => {
  /** Each printed cell's underline as xterm.js keeps it: style (1 single, 2 double, 3 curly, 4 dotted, 5 dashed) and colour (SGR 58). */
  function underlines(terminal: Terminal, row: number): string[] {
    const line = terminal.buffer.active.getLine(terminal.buffer.active.baseY + row)!;
    const out: string[] = [];
    for (let x = 0; x < terminal.cols; x++) {
      const cell = line.getCell(x)!;
      if (cell.getChars() === "" || !cell.isUnderline()) continue;
      const internal = ((cell as unknown as { _cell?: object })._cell ?? cell) as { extended?: { underlineStyle?: number; underlineColor?: number } };
      out.push(`${x}:${cell.getChars()} style ${internal.extended?.underlineStyle} colour ${internal.extended?.underlineColor}`);
    }
    return out;
  }

  /** The underlines of every row, the scrollback's included. */
  function allUnderlines(terminal: Terminal): string[][] {
    const rows: string[][] = [];
    for (let row = -terminal.buffer.active.baseY; row < terminal.rows; row++) rows.push(underlines(terminal, row));
    return rows;
  }

  test("curly, double and dotted underlines with their colours (nvim's diagnostics, SGR 4:3 and 58) stay so after a snapshot, and so does what the program prints next", async () => {
    using subject = new MirrorUnderTest({ cols: 30, rows: 3, scrollback: 10 });
    // nvim marking an LSP error with a red undercurl, a spelling mistake dotted; the last style left on.
    subject.write("\x1b[4:3;58:2::255:0:0merror\x1b[0m \x1b[21mdbl\x1b[0m \x1b[4:4;58;5;3mtypo");
    await subject.settled();
    const { client } = await attach(subject.mirror, 10);
    expect(underlines(client, 0)).toEqual(underlines(subject.reference, 0));
    subject.write("X");
    await Promise.all([feed(client, "X"), subject.settled()]);
    expect(underlines(client, 0)).toEqual(underlines(subject.reference, 0));
  });

  test("a styled underline that runs through colour changes and across wrapped rows into the scrollback stays styled, and a plain one after it stays plain", async () => {
    using subject = new MirrorUnderTest({ cols: 12, rows: 3, scrollback: 50 });
    // A curly run whose text changes colour twice (addon-serialize writes SGRs of its own there), long enough to
    // wrap twice; then plain underlines, and a row that starts plain after a row that ended curly.
    subject.write("\x1b[4:3;58;5;1mab\x1b[31mcd\x1b[39mefghijklmnopqrstuvwxyz\x1b[0m\r\n");
    subject.write("\x1b[4:5mdashed-to-end\x1b[24m\r\n\x1b[4mplain\x1b[0m \x1b[4:2;58:2::1:2:3mdbl\x1b[0m\r\n\r\n\r\n");
    await subject.settled();
    const { client } = await attach(subject.mirror, 50);
    expect(allUnderlines(client)).toEqual(allUnderlines(subject.reference));
  });
});

describe("colour palette", () => {
  /** The palette changes (OSC 4, 10, 11, 12 and their resets) a terminal has applied, as a browser xterm.js applies them to its theme. */
  function paletteOf(terminal: Terminal): () => Record<string, string> {
    const palette: Record<string, string> = {};
    type Request = { type: number; index: number; color?: [number, number, number] };
    const handler = (terminal as unknown as { _core: { _inputHandler: { onColor(listener: (requests: Request[]) => void): void } } })._core._inputHandler;
    handler.onColor((requests) => {
      for (const request of requests) {
        // ColorRequestType: 0 report, 1 set, 2 restore.
        if (request.type === 1) palette[request.index] = request.color!.join(",");
        // A restore without an index is OSC 104 alone: xterm.js's theme puts back the 256 palette entries only.
        if (request.type === 2 && request.index === undefined) for (const index of Object.keys(palette)) if (Number(index) < 256) delete palette[index];
        if (request.type === 2) delete palette[request.index];
      }
    });
    return () => ({ ...palette });
  }

  test("colours a program set in the palette (OSC 4 as base16-shell does, OSC 11 background) are still set after a reconnect", async () => {
    using subject = new MirrorUnderTest({ cols: 40, rows: 5, scrollback: 100 });
    const reference = paletteOf(subject.reference);
    // base16-shell at login: palette entry 1 (red) becomes green, the default background dark blue.
    subject.write("\x1b]4;1;rgb:00/ff/00\x1b\\\x1b]11;rgb:10/20/30\x07\x1b[31mred is green here\x1b[0m\r\n$ ");
    await subject.settled();
    const snapshot = await subject.mirror.snapshot();
    const client = new Terminal({ cols: snapshot.cols, rows: snapshot.rows, allowProposedApi: true });
    const seen = paletteOf(client);
    await feed(client, snapshot.data);
    expect(seen()).toEqual(reference());
    client.dispose();
  });

  test("colours a program put back (OSC 104, 110 to 112) are back on the client too, and one set again after a reset stays set", async () => {
    using subject = new MirrorUnderTest({ cols: 40, rows: 5, scrollback: 100 });
    const reference = paletteOf(subject.reference);
    subject.write("\x1b]4;1;rgb:00/ff/00;2;#102030;200;rgb:ff/ff/ff\x07\x1b]10;rgb:ee/ee/ee\x07\x1b]12;rgb:01/02/03\x07");
    // One entry put back, then the whole palette (which leaves the special colours), then the cursor colour.
    subject.write("\x1b]104;2\x07\x1b]104\x07\x1b]4;7;rgb:aa/bb/cc\x07\x1b]112\x07$ ");
    await subject.settled();
    const snapshot = await subject.mirror.snapshot();
    const client = new Terminal({ cols: snapshot.cols, rows: snapshot.rows, allowProposedApi: true });
    const seen = paletteOf(client);
    await feed(client, snapshot.data);
    expect(reference()).toEqual({ 7: "170,187,204", 256: "238,238,238" });
    expect(seen()).toEqual(reference());
    client.dispose();
  });
});

describe("underline colours, links and character sets after a snapshot", () => {
  /** Each underlined cell's style and colour as a renderer reads them (mode and palette index or RGB; xterm.js keeps other bits). */
  function underlineColours(terminal: Terminal, row: number): string[] {
    const line = terminal.buffer.active.getLine(terminal.buffer.active.baseY + row)!;
    const out: string[] = [];
    for (let x = 0; x < terminal.cols; x++) {
      const cell = line.getCell(x)!;
      if (cell.getChars() === "" || !cell.isUnderline()) continue;
      const internal = ((cell as unknown as { _cell?: object })._cell ?? cell) as { extended?: { underlineStyle?: number; underlineColor?: number } };
      const colour = internal.extended?.underlineColor ?? 0;
      const mode = colour & 0x3000000;
      const shown = mode === 0 ? "text colour" : mode === 0x3000000 ? `rgb ${(colour & 0xffffff).toString(16)}` : `palette ${colour & 0xff}`;
      out.push(`${x}:${cell.getChars()} style ${internal.extended?.underlineStyle} ${shown}`);
    }
    return out;
  }

  test("an underline colour set while no underline is on (SGR 58 before SGR 4, or kept through SGR 24) colours the underline the program turns on after the snapshot", async () => {
    using subject = new MirrorUnderTest({ cols: 30, rows: 3, scrollback: 10 });
    // SGR 24 ends the underline and keeps its colour; SGR 58 alone sets a colour for the next underline.
    subject.write("\x1b[4:3;58:2::255:0:0merror\x1b[24m \x1b[0m\x1b[58:5:3mnext ");
    await subject.settled();
    const { client } = await attach(subject.mirror, 10);
    const after = "\x1b[4mwarn";
    subject.write(after);
    await Promise.all([feed(client, after), subject.settled()]);
    expect(underlineColours(client, 0)).toEqual(underlineColours(subject.reference, 0));
  });

  test("link text after a run with a coloured underline keeps the text's colour for the link's underline", async () => {
    using subject = new MirrorUnderTest({ cols: 30, rows: 3, scrollback: 10 });
    // xterm.js underlines OSC 8 links (dashed), in the underline colour in force: none after the SGR 0.
    subject.write("\x1b]8;;http://example.com/\x1b\\\x1b[4;58:2::9:8:7mab\x1b[0mcdef\x1b]8;;\x1b\\ $ ");
    await subject.settled();
    const { client } = await attach(subject.mirror, 10);
    expect(underlineColours(client, 0)).toEqual(underlineColours(subject.reference, 0));
  });

  test("the character printed last in the Dutch set (ESC ( 4, where ] prints | and | prints f) is reprinted as itself", async () => {
    using subject = new MirrorUnderTest({ cols: 20, rows: 3, scrollback: 10 });
    subject.write("$ \x1b(4a]");
    await subject.settled();
    await expectSnapshotReproduces(subject, expect);
  });
});
