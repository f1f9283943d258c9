import { describe, expect, test } from "bun:test";
import { ScreenMirror, type ParserThread } from "../../src/screen/index.ts";
import type { MirrorTerminalOptions } from "../../src/screen/mirror-terminal.ts";
import { ParserHost } from "../../src/screen/parser-host.ts";
import type { FromParser } from "../../src/screen/parser-protocol.ts";
import type { ParsedTerminal } from "../../src/screen/parser-thread.ts";
import { parser } from "../helpers/parser-thread.ts";
import { concat, encode, seededRandom } from "./mirror-fixture.ts";

describe("missed output", () => {
  test("a reconnect after missed output gets exactly the missed bytes", () => {
    using mirror = new ScreenMirror({ parser, cols: 80, rows: 24, scrollback: 1000 });
    const before = encode("$ echo hi\r\nhi\r\n");
    const missed = [encode("$ ls\r\n"), encode("a.txt  \x1b[34mb\x1b[0m\r\n"), encode("$ ")];
    mirror.write(before);
    const clientOffset = mirror.offset;
    for (const chunk of missed) mirror.write(chunk);

    expect(mirror.missedSince(clientOffset)).toEqual(concat(...missed));
    expect(mirror.missedSince(0)).toEqual(concat(before, ...missed));
  });

  test("a chunk that is a view into a larger buffer, as a PTY read can be, is mirrored whole and left intact", async () => {
    using mirror = new ScreenMirror({ parser, cols: 80, rows: 24, scrollback: 1000 });
    const pool = Buffer.from("xxxx$ echo hi\r\nhi\r\nyyyy");
    const chunk = pool.subarray(4, pool.length - 4);
    mirror.write(chunk);
    expect(chunk.toString()).toBe("$ echo hi\r\nhi\r\n");
    expect(mirror.offset).toBe(chunk.length);
    expect(mirror.missedSince(0)).toEqual(encode("$ echo hi\r\nhi\r\n"));
    expect(await mirror.readLines(5)).toEqual(["$ echo hi", "hi"]);
  });

  test("the offset counts raw bytes, so multi-byte characters count as their UTF-8 length", () => {
    using mirror = new ScreenMirror({ parser, cols: 80, rows: 24, scrollback: 1000 });
    mirror.write(encode("é€😀"));
    expect(mirror.offset).toBe(2 + 3 + 4);
    mirror.write(encode("x"));
    expect(mirror.missedSince(9)).toEqual(encode("x"));
  });

  test("a client that is up to date gets an empty replay", () => {
    using mirror = new ScreenMirror({ parser, cols: 80, rows: 24, scrollback: 1000 });
    expect(mirror.missedSince(0)).toEqual(new Uint8Array(0));
    mirror.write(encode("hello"));
    expect(mirror.missedSince(5)).toEqual(new Uint8Array(0));
  });

  test("an offset in the future, negative or not a whole number gets null", () => {
    using mirror = new ScreenMirror({ parser, cols: 80, rows: 24, scrollback: 1000 });
    mirror.write(encode("hello"));
    for (const offset of [6, 1e12, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(mirror.missedSince(offset)).toBeNull();
    }
  });

  test("output the ring has dropped gets null, so the client needs a snapshot; what is held stays exact", async () => {
    using mirror = new ScreenMirror({ parser, cols: 80, rows: 24, scrollback: 1000, ringBytes: 10_000 });
    const chunks = [0, 1, 2].map((n) => encode(String(n).repeat(6000)));
    for (const chunk of chunks) {
      mirror.write(chunk);
      await mirror.settled();
    }

    expect(mirror.missedSince(0)).toBeNull();
    expect(mirror.missedSince(6000)).toBeNull();
    expect(mirror.missedSince(12_000)).toEqual(chunks[2]!);
    expect(mirror.missedSince(15_000)).toEqual(chunks[2]!.subarray(3000));
  });

  test("a flood of tiny chunks (echoed keystrokes) is replayed exactly or refused, never truncated", async () => {
    const ringBytes = 5000;
    using mirror = new ScreenMirror({ parser, cols: 80, rows: 24, scrollback: 1000, ringBytes });
    const random = seededRandom(7);
    const all: number[] = [];
    for (let i = 0; i < 3000; i++) {
      // Mostly keystroke echoes, now and then a burst of command output.
      const length = random() < 0.95 ? 1 + Math.floor(random() * 3) : 500 + Math.floor(random() * 5000);
      const chunk = new Uint8Array(length).map((_, j) => 0x61 + ((i + j) % 26));
      mirror.write(chunk);
      all.push(...chunk);
      // Parsed now and then, as a live session is; unparsed output is always kept.
      if (i % 50 === 49) await mirror.settled();
    }
    mirror.write(encode("$ "));
    all.push(...encode("$ "));
    const stream = Uint8Array.from(all);
    expect(mirror.offset).toBe(stream.length);

    let replayable = 0;
    for (let offset = 0; offset <= stream.length; offset += 97) {
      const missed = mirror.missedSince(offset);
      if (missed === null) continue;
      replayable++;
      expect(missed).toEqual(stream.subarray(offset));
    }
    expect(replayable).toBeGreaterThan(0);
    // Dropping whole chunks may hold a little less than the cap, never more.
    expect(mirror.missedSince(stream.length - ringBytes - 1)).toBeNull();
  });

  test("output from before a resize is not replayed, because it was laid out at the old size", () => {
    using mirror = new ScreenMirror({ parser, cols: 80, rows: 24, scrollback: 1000 });
    mirror.write(encode("before\r\n"));
    const beforeResize = mirror.offset;
    mirror.resize(100, 30);
    mirror.write(encode("after\r\n"));

    expect(mirror.missedSince(0)).toBeNull();
    expect(mirror.missedSince(beforeResize)).toEqual(encode("after\r\n"));
    expect([mirror.cols, mirror.rows]).toEqual([100, 30]);
  });

  test("a resize to the same size changes nothing", () => {
    using mirror = new ScreenMirror({ parser, cols: 80, rows: 24, scrollback: 1000 });
    mirror.write(encode("abc"));
    mirror.resize(80, 24);
    expect(mirror.missedSince(0)).toEqual(encode("abc"));
  });

  test("output not yet parsed is always held, however small the ring", () => {
    using mirror = new ScreenMirror({ parser, cols: 80, rows: 24, scrollback: 1000, ringBytes: 10 });
    const chunks = [0, 1, 2].map((n) => encode(String(n).repeat(6000)));
    for (const chunk of chunks) mirror.write(chunk);
    expect(mirror.backlog).toBe(18_000);
    expect(mirror.missedSince(0)).toEqual(concat(...chunks));
  });

  test("after a snapshot, bytesSince catches up whatever the screen mode, but not across a resize", () => {
    using mirror = new ScreenMirror({ parser, cols: 80, rows: 24, scrollback: 1000 });
    mirror.write(encode("\x1b[?1049hvim"));
    mirror.write(encode(" redraw"));
    expect(mirror.missedSince(3)).toBeNull();
    expect(mirror.bytesSince(8 + 3)).toEqual(encode(" redraw"));
    const beforeResize = mirror.offset;
    mirror.resize(100, 30);
    mirror.write(encode("after"));
    expect(mirror.bytesSince(beforeResize - 1)).toBeNull();
    expect(mirror.bytesSince(beforeResize)).toEqual(encode("after"));
    expect(mirror.bytesSince(mirror.offset + 1)).toBeNull();
  });

  test("invalid sizes and bounds are refused with a clear error", () => {
    expect(() => new ScreenMirror({ parser, cols: 1, rows: 24, scrollback: 10 })).toThrow(
      "Cannot create screen mirror: size must be at least 2x1 whole cells, got 1x24",
    );
    expect(() => new ScreenMirror({ parser, cols: 80, rows: 24, scrollback: -1 })).toThrow(
      "Cannot create screen mirror: scrollback must be a non-negative integer, got -1",
    );
    using mirror = new ScreenMirror({ parser, cols: 80, rows: 24, scrollback: 10 });
    expect(() => mirror.resize(80.5, 24)).toThrow("Cannot resize screen mirror");
  });

  test("after dispose, writes are ignored, settled resolves and a snapshot is refused", async () => {
    const mirror = new ScreenMirror({ parser, cols: 80, rows: 24, scrollback: 1000 });
    mirror.write(encode("abc"));
    const settling = mirror.settled();
    mirror.dispose();
    await settling;
    mirror.write(encode("more"));
    expect(mirror.offset).toBe(3);
    await mirror.settled();
    await expect(mirror.snapshot()).rejects.toThrow("Cannot snapshot screen: screen mirror is disposed");
  });
});

describe("catching up after a snapshot", () => {
  /**
   * The parser thread's protocol in-process, each message to the main thread
   * delivered in its own turn as a Worker's are, with `between` run after each
   * "parsed" message, where a PTY read can land.
   */
  function inProcessParser(between: () => void): ParserThread {
    return {
      available: true,
      open(options: MirrorTerminalOptions, listener: { parsed(bytes: number): void }): ParsedTerminal {
        const pending = new Map<number, (value: unknown) => void>();
        const host = new ParserHost((message: FromParser) => {
          setTimeout(() => {
            if (message.op === "parsed") {
              for (const [, bytes] of message.counts) listener.parsed(bytes);
              between();
            } else if (message.op === "answer") pending.get(message.request)?.(message.value);
          });
        });
        host.handle({ op: "open", id: 1, ...options });
        let request = 0;
        return {
          write: (chunk, state) => host.handle({ op: "write", id: 1, chunk: new Uint8Array(chunk), state }),
          resize: (cols, rows) => host.handle({ op: "resize", id: 1, cols, rows }),
          ask: (question) =>
            new Promise((resolve) => {
              pending.set(++request, resolve as (value: unknown) => void);
              host.handle({ op: "ask", id: 1, request, question });
            }),
          close: () => host.handle({ op: "close", id: 1 }),
        };
      },
    } as unknown as ParserThread;
  }

  test("the bytes after a snapshot are still held when it resolves, though the parser reported parsing past it and output arrived meanwhile", async () => {
    const read = (c: string) => encode(`${c.repeat(4094)}\r\n`); // a 4 KiB PTY read
    let mirror: ScreenMirror | undefined;
    let reads = 0;
    // `cat big.log`: the PTY keeps delivering reads while the parser works, with a ring of one read.
    const inProcess = inProcessParser(() => mirror!.write(read(String(reads++ % 10))));
    mirror = new ScreenMirror({ parser: inProcess, cols: 80, rows: 24, scrollback: 1000, ringBytes: 4096 });
    await mirror.snapshot();
    mirror.write(read("a"));
    const pending = mirror.snapshot();
    mirror.write(read("b"));
    const snapshot = await pending;
    const tail = mirror.bytesSince(snapshot.offset);
    mirror.dispose();
    expect(tail?.length).toBeGreaterThan(0);
  });
});
