import { describe, expect, test } from "bun:test";
import { MirrorUnderTest, expectSameAfter, expectSnapshotReproduces } from "./mirror-fixture.ts";

/** For each case: its setup, a snapshot the client reproduces, then its `after` output shown alike on both. */
async function expectEachCarried(size: { cols: number; rows: number }, cases: Record<string, [setup: string, after: string]>): Promise<void> {
  for (const [name, [setup, after]] of Object.entries(cases)) {
    using subject = new MirrorUnderTest({ ...size, scrollback: 100 });
    subject.write(setup);
    const { client } = await expectSnapshotReproduces(subject, expect);
    await expectSameAfter(subject, client, after, expect, name);
  }
}

describe("cursor state in snapshots", () => {
  test("output that exactly fills a line leaves the next character for the next row, as on the reference", async () => {
    const cases = {
      plain: "0123456789",
      coloured: "\x1b[31m012345678\x1b[44m9\x1b[0;1m",
      wide: "01234567日",
      scrolling: "a\r\nb\r\nc\r\nd\r\n0123456789",
      alternate: "\x1b[?1049h\x1b[H\x1b[3;1H\x1b[7m0123456789",
      insertMode: "\x1b[4h0123456789",
      originMode: "\x1b[2;3r\x1b[?6h\x1b[2;1H0123456789",
      noAutowrap: "\x1b[?7l0123456789",
    };
    for (const [name, setup] of Object.entries(cases)) {
      using subject = new MirrorUnderTest({ cols: 10, rows: 4, scrollback: 100 });
      subject.write(setup);
      await subject.settled();
      expect({ name, pendingWrap: subject.reference.buffer.active.cursorX }).toEqual({ name, pendingWrap: 10 });
      const { client } = await expectSnapshotReproduces(subject, expect);
      await expectSameAfter(subject, client, "\x1b[32mnext\r\n", expect, name);
    }
  });

  test("a cursor shape a program set (DECSCUSR: vim's bar in insert mode, a blinking underline) is carried; a reset one is left to the user", async () => {
    await expectEachCarried({ cols: 20, rows: 4 }, {
      steadyBar: ["\x1b[6 qinsert", "\x1b[2 q"],
      blinkingUnderline: ["\x1b[3 q", "x"],
      blinkingBlock: ["\x1b[1 q", "\x1b[0 q"],
      reset: ["\x1b[6 q\x1b[0 q", "\x1b[5 q"],
    });
  });

  test("a saved cursor (DECSC, or DECSET 1049 when a full-screen app started) is restored to the same place and colours", async () => {
    const cases: Record<string, [setup: string, after: string]> = {
      decsc: ["\x1b[2;4H\x1b[1;31m\x1b7\x1b[0m\x1b[4;1Hprompt$ ", "\x1b8saved"],
      scrolledAway: ["\x1b[2;4H\x1b[44m\x1b7\x1b[0m\x1b[6;1H\r\n\r\n\r\n\r\nprompt$ ", "\x1b8saved\r\n\r\n\x1b8again"],
      // vim started from a coloured prompt; it quits with 1049l, which restores the prompt's colours.
      appQuits: ["\x1b[1;33mprompt$ \x1b[?1049h\x1b[0m\x1b[H\x1b[2Jediting\x1b[5;3H", "\x1b[?1049lback"],
      // The app saved the normal cursor with DECSC and switched with 1047, which saves nothing.
      appWithout1049: ["\x1b[2;3H\x1b[35m\x1b7\x1b[0m\x1b[5;1Hshell\x1b[?1047h\x1b[Happ", "\x1b[?1047l\x1b8back"],
      insideApp: ["\x1b[?1049h\x1b[5;5H\x1b[42m\x1b7\x1b[H\x1b[0mtitle", "\x1b8saved"],
      originMode: ["\x1b[?1049h\x1b[3;6r\x1b[?6h\x1b[2;2H\x1b[7m\x1b7\x1b[0m\x1b[H", "\x1b8saved"],
      originModeInApp: ["\x1b[2;5r\x1b[4;3H\x1b[36mshell\x1b[?1049h\x1b[0m\x1b[?6h\x1b[2;2Happ", "\x1b[?6l\x1b[?1049lback"],
    };
    await expectEachCarried({ cols: 20, rows: 6 }, cases);
  });

  test("DEC line drawing in use when the snapshot is taken goes on drawing lines", async () => {
    const cases: Record<string, [setup: string, after: string]> = {
      g0: ["\x1b(0lqqk\r\n", "x\x1b(Bx"],
      shiftedOut: ["\x1b)0\x0elqk\x0f \x0e", "qq\x0fqq"],
      inApp: ["\x1b[?1049h\x1b(0\x1b[Hlqqk", "\x1b[2;1Hxqqx"],
      // The last character is a literal q, printed again for the pending wrap before the sets are switched.
      pendingWrap: ["012345678q\x1b(0", "qq"],
      saved: ["\x1b(0\x1b7\x1b(Btext", "\x1b8qq"],
      savedUnderApp: ["\x1b(0\x1b[?1049h\x1b(B\x1b[Happ", "\x1b[?1049lqq"],
    };
    await expectEachCarried({ cols: 10, rows: 4 }, cases);
  });

  test("tab stops a program set or cleared stay where it put them", async () => {
    const cases: Record<string, [setup: string, after: string]> = {
      set: ["\x1b[3g\x1b[5G\x1bH\x1b[12G\x1bH\r", "\ta\tb\tc"],
      cleared: ["\x1b[9G\x1b[g\r", "\tx"],
      inApp: ["\x1b[?1049h\x1b[3g\x1b[3G\x1bH\x1b[H", "\tx"],
      underApp: ["\x1b[3g\x1b[4G\x1bH\r\x1b[?1049h\x1b[Happ", "\x1b[?1049l\r\n\tx"],
    };
    await expectEachCarried({ cols: 20, rows: 4 }, cases);
  });
});
