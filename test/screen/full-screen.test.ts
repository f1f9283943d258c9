import { describe, expect, test } from "bun:test";
import { ScreenMirror } from "../../src/screen/index.ts";
import type { Terminal } from "@xterm/headless";
import { MirrorUnderTest, attach, concat, encode, expectSnapshotReproduces, feed, freshTerminal, replay, screenState } from "./mirror-fixture.ts";
import { parser } from "../helpers/parser-thread.ts";

/** What a full-screen app such as htop draws: modes (cursor keys, mouse), clear, a coloured title bar, rows of text, the cursor parked. */
const DRAW_APP = [
  "\x1b[?1049h\x1b[?1h\x1b[?1002h\x1b[H\x1b[2J",
  "\x1b[1;1H\x1b[7;1m  top - 10:00:00 up 1 day \x1b[K\x1b[0m",
  "\x1b[3;1H  PID USER      \x1b[32mCPU%\x1b[0m",
  "\x1b[4;1H    1 root      \x1b[31;1m99.0\x1b[0m",
  "\x1b[24;1H\x1b[44;97m F1Help  F10Quit \x1b[K\x1b[0m",
  "\x1b[2;5H",
].join("");

/** The bytes a terminal sends the program for a left click on column 5, row 3. */
function click(terminal: Terminal): string {
  let sent = "";
  // X10-style reports (the default encoding) go out as binary.
  const listeners = [terminal.onData((data) => (sent += data)), terminal.onBinary((data) => (sent += data))];
  const core = (terminal as unknown as { _core: { coreMouseService: { triggerMouseEvent(e: object): boolean } } })._core;
  core.coreMouseService.triggerMouseEvent({ col: 4, row: 2, x: 0, y: 0, button: 0, action: 1, ctrl: false, alt: false, shift: false });
  for (const listener of listeners) listener.dispose();
  return sent;
}

describe("full-screen apps", () => {
  for (const [encoding, mode, report] of [["SGR", "1006", "\x1b[<0;5;3M"], ["X10 (the default)", "", "\x1b[M %#"]] as const) {
    test(`a click in an app that asked for ${encoding} mouse reports is reported the same way after a snapshot`, async () => {
      using subject = new MirrorUnderTest({ cols: 40, rows: 10, scrollback: 100 });
      // ncurses' XM for xterm-256color: CSI ? 1006 ; 1000 h, and it then reads clicks as CSI < ... M.
      subject.write(`${DRAW_APP}${mode ? `\x1b[?${mode};1000h` : "\x1b[?1000h"}`);
      await subject.settled();
      const { client } = await attach(subject.mirror, 100);
      expect(click(subject.reference)).toBe(report);
      expect(click(client)).toBe(report);
    });
  }


  test("while a full-screen app runs, missed output is not replayed and the snapshot shows the app", async () => {
    using subject = new MirrorUnderTest({ cols: 40, rows: 24, scrollback: 1000 });
    subject.write("$ echo before\r\nbefore\r\n$ htop\r\n");
    const beforeApp = subject.mirror.offset;
    subject.write(DRAW_APP);
    const insideApp = subject.mirror.offset;
    subject.write("\x1b[4;17H\x1b[31;1m12.5\x1b[0m");

    expect(subject.mirror.fullScreen).toBe(true);
    expect(subject.mirror.missedSince(beforeApp)).toBeNull();
    expect(subject.mirror.missedSince(insideApp)).toBeNull();

    const { snapshot, client } = await expectSnapshotReproduces(subject, expect);
    expect(snapshot.fullScreen).toBe(true);
    expect([client.modes.applicationCursorKeysMode, client.modes.mouseTrackingMode]).toEqual([true, "drag"]);
    expect(client.buffer.active.type).toBe("alternate");
    // The reproduction check ends by typing "Z" at the cursor into both.
    expect(client.buffer.active.getLine(3)?.translateToString(true)).toBe("    1 root      12.5Z");

    // When the app quits, the client (fed the live bytes from now on) comes
    // back to the shell exactly where the mirror does.
    const quit = "\x1b[?1049l$ ";
    subject.write(quit);
    await Promise.all([feed(client, quit), subject.settled()]);
    expect(screenState(client, subject.reference)).toEqual(screenState(subject.reference));
  });

  test("output from a full-screen app that started and ended after the offset is not replayed", () => {
    using mirror = new ScreenMirror({ parser, cols: 80, rows: 24, scrollback: 1000 });
    mirror.write(encode("$ vim notes\r\n"));
    const clientOffset = mirror.offset;
    mirror.write(encode(`${DRAW_APP}\x1b[?1049l`));
    const afterApp = mirror.offset;
    mirror.write(encode("$ ls\r\n"));

    expect(mirror.fullScreen).toBe(false);
    expect(mirror.missedSince(clientOffset)).toBeNull();
    expect(mirror.missedSince(afterApp)).toEqual(encode("$ ls\r\n"));
  });

  test("replay resumes exactly at the end of the sequence that left the alternate screen, even mid-chunk", () => {
    using mirror = new ScreenMirror({ parser, cols: 80, rows: 24, scrollback: 1000 });
    const chunk = encode("\x1b[?1049hdrawing\x1b[?1049l$ after");
    mirror.write(chunk);
    const exitEnd = chunk.length - "$ after".length;
    expect(mirror.missedSince(exitEnd - 1)).toBeNull();
    expect(mirror.missedSince(exitEnd)).toEqual(encode("$ after"));
  });

  test("output arriving while a snapshot of a full-screen app is taken is caught up with bytesSince, never missedSince", async () => {
    using subject = new MirrorUnderTest({ cols: 40, rows: 24, scrollback: 1000 });
    subject.write(DRAW_APP);
    const taking = subject.mirror.snapshot();
    const redraw = "\x1b[4;17H\x1b[31;1m42.0\x1b[0m\x1b[2;5H";
    subject.write(redraw);
    const snapshot = await taking;

    expect(snapshot.offset).toBe(encode(DRAW_APP).length);
    expect(subject.mirror.missedSince(snapshot.offset)).toBeNull();
    expect(subject.mirror.bytesSince(snapshot.offset)).toEqual(encode(redraw));
    const client = await replay(snapshot, subject.scrollback);
    await Promise.all([feed(client, subject.mirror.bytesSince(snapshot.offset)!), subject.settled()]);
    expect(screenState(client, subject.reference)).toEqual(screenState(subject.reference));
  });

  test("the alternate screen is detected as soon as its sequence is complete, however the chunks split it", async () => {
    const cases: [string, boolean][] = [
      ["\x1b[?1049h", true],
      ["\x1b[?1047h", true],
      ["\x1b[?47h", true],
      ["\x1b[?1;1049h", true],
      ["\x1b[?01049h", true],
      ["\x1b[?1049:1h", true],
      ["\x1b[?10\n49h", true], // a C0 control inside a sequence is executed, not an end
      ["\u009b?1049h", true], // 8-bit CSI (U+009B, sent as C2 9B)
      ["\x1b]0;title\x1b[?1049h", true], // ESC ends the OSC and starts the CSI
      ["\x1b[?1049h\x1b[?1049l", false],
      ["\x1b[?1049h\x1bc", false], // RIS resets to the normal screen
      ["\x1b[1049h", false], // ANSI mode 1049, not DECSET
      ["\x1b[?1049$p", false], // DECRQM asks about the mode, it does not set it
      ["\x1b[??1049h", false],
      ["\x1b]0;[?1049h\x07", false], // inside an OSC string
      ["\x1bP[?1049h\x1b\\", false], // inside a DCS string
      ["\x1b[?1049\x18h", false], // CAN cancels the sequence
      ["\x1b[?104ä9h", false], // a printable non-ASCII character breaks the sequence
      ["\x1b[?104\ufeff9h", true], // xterm.js's decoder drops a BOM, so it does not
      ["\x1b\ufeff[?1049h", true],
      ["\x1b(c", false], // ESC ( c designates a charset; it is not RIS
    ];
    for (const [sequence, fullScreen] of cases) {
      const bytes = encode(sequence);
      for (let split = 0; split <= bytes.length; split++) {
        using subject = new MirrorUnderTest({ cols: 40, rows: 10, scrollback: 100 });
        subject.write(bytes.subarray(0, split));
        if (split < bytes.length) {
          // Not complete yet: whatever came before decides.
          const decidedBefore = sequence.startsWith("\x1b[?1049h") && split >= 8;
          expect({ sequence, split, fullScreen: subject.mirror.fullScreen }).toEqual({ sequence, split, fullScreen: decidedBefore });
        }
        subject.write(bytes.subarray(split));
        expect({ sequence, split, fullScreen: subject.mirror.fullScreen }).toEqual({ sequence, split, fullScreen });
        // The byte scan agrees with xterm.js once it has parsed the bytes.
        await subject.settled();
        expect({ sequence, xterm: subject.reference.buffer.active.type === "alternate" }).toEqual({ sequence, xterm: fullScreen });
      }
    }
  });

  test("bytes xterm.js's decoder drops (overlong forms, surrogates, past U+10FFFF) leave a sequence going, as in xterm.js", async () => {
    const dropped = [[0xe0, 0x80, 0x9b], [0xed, 0xa0, 0x80], [0xf0, 0x80, 0x80, 0x9b], [0xf4, 0x90, 0x80, 0x80]];
    for (const bytes of dropped) {
      using subject = new MirrorUnderTest({ cols: 40, rows: 10, scrollback: 100 });
      subject.write(concat(encode("\x1b[?10"), Uint8Array.from(bytes), encode("49h")));
      await subject.settled();
      expect({ bytes, fullScreen: subject.mirror.fullScreen, xterm: subject.reference.buffer.active.type }).toEqual({ bytes, fullScreen: true, xterm: "alternate" });
    }
  });

  test("a hidden cursor stays hidden in the snapshot", async () => {
    using subject = new MirrorUnderTest({ cols: 40, rows: 10, scrollback: 100 });
    subject.write(`${DRAW_APP}\x1b[?25l`);
    await subject.settled();
    const snapshot = await subject.mirror.snapshot();
    expect(snapshot.data.endsWith("\x1b[?25l")).toBe(true);
    const shown = new MirrorUnderTest({ cols: 40, rows: 10, scrollback: 100 });
    shown.write(DRAW_APP);
    expect((await shown.mirror.snapshot()).data).not.toContain("\x1b[?25l");
    shown[Symbol.dispose]();
  });

  test("a fresh mirror starts on the normal screen and its snapshot says so", async () => {
    using mirror = new ScreenMirror({ parser, cols: 80, rows: 24, scrollback: 1000 });
    const snapshot = await mirror.snapshot();
    expect({ ...snapshot, data: undefined }).toEqual({ data: undefined, cols: 80, rows: 24, offset: 0, fullScreen: false });
    const client = freshTerminal(80, 24);
    await feed(client, snapshot.data);
    expect(client.buffer.active.type).toBe("normal");
  });
});
