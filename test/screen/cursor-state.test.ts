import { describe, expect, test } from "bun:test";
import { MirrorUnderTest, expectSnapshotReproduces, feed, screenState } from "./mirror-fixture.ts";

/** Write `after` to mirror, reference and client alike, and expect the client to show what the reference shows. */
async function expectSameAfter(subject: MirrorUnderTest, client: Parameters<typeof feed>[0], after: string): Promise<void> {
  subject.write(after);
  await Promise.all([feed(client, after), subject.settled()]);
  expect(screenState(client, subject.reference)).toEqual(screenState(subject.reference));
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
      await expectSameAfter(subject, client, "\x1b[32mnext\r\n");
    }
  });
});
