import { describe, expect, spyOn, test } from "bun:test";
import { MAX_WORKER_STARTS_PER_MINUTE, ParserThread, ScreenMirror } from "../../src/screen/index.ts";
import { BREAKING_LINE_COUNT } from "../helpers/breakable-parser-worker.ts";
import { parser } from "../helpers/parser-thread.ts";
import { attach, encode } from "./mirror-fixture.ts";
import { ParserHost } from "../../src/screen/parser-host.ts";
import type { FromParser } from "../../src/screen/parser-protocol.ts";

const BREAKABLE_WORKER = new URL("../helpers/breakable-parser-worker.ts", import.meta.url);
const MIB = 1024 * 1024;

/** `count` bytes of 80-column lines. */
function lines(count: number): Uint8Array {
  return encode(`${"y".repeat(78)}\r\n`.repeat(Math.ceil(count / 80)).slice(0, count));
}

/** What `run` logged with console.error, which is silenced meanwhile. */
async function capturedErrors(run: () => Promise<unknown>): Promise<string[]> {
  const errors: string[] = [];
  const spy = spyOn(console, "error").mockImplementation((...args: unknown[]) => void errors.push(args.join(" ")));
  try {
    await run();
  } finally {
    spy.mockRestore();
  }
  return errors;
}

describe("the parser thread", () => {
  test("parsing runs beside the writer: the backlog is reported as it shrinks, and drained waits for it", async () => {
    using mirror = new ScreenMirror({ parser, cols: 80, rows: 24, scrollback: 1000 });
    for (let i = 0; i < 40; i++) mirror.write(lines(64 * 1024));
    expect(mirror.backlog).toBe(40 * 64 * 1024);
    await mirror.drained(MIB);
    expect(mirror.backlog).toBeLessThanOrEqual(MIB);
    await mirror.settled();
    expect(mirror.backlog).toBe(0);
  });

  test("many mirrors share one thread and each keeps its own screen", async () => {
    const mirrors = Array.from({ length: 5 }, () => new ScreenMirror({ parser, cols: 40, rows: 5, scrollback: 100 }));
    mirrors.forEach((mirror, i) => mirror.write(encode(`mirror ${i}\r\n$ `)));
    expect(await Promise.all(mirrors.map((mirror) => mirror.readLines(2)))).toEqual(mirrors.map((_, i) => [`mirror ${i}`, "$"]));
    for (const mirror of mirrors) mirror.dispose();
  });

  test("a thread that dies fails the questions pending on it; its mirrors then start over on a new thread, keeping the bytes for replay", async () => {
    using thread = new ParserThread({ workerUrl: BREAKABLE_WORKER });
    using broken = new ScreenMirror({ parser: thread, cols: 80, rows: 24, scrollback: 100 });
    using bystander = new ScreenMirror({ parser: thread, cols: 80, rows: 24, scrollback: 100 });
    broken.write(encode("$ ls\r\n"));
    bystander.write(encode("$ top\r\n"));
    expect(await broken.readLines(1)).toEqual(["$ ls"]);

    const errors = await capturedErrors(async () => {
      await expect(broken.readLines(BREAKING_LINE_COUNT)).rejects.toThrow(/^Cannot read lines: the screen parser thread failed/);
    });
    expect(errors).toEqual([expect.stringContaining("hatch: the screen parser thread failed")]);
    // Nothing waits on a parse that will never come: the PTY is not held paused.
    expect(broken.backlog).toBe(0);
    await broken.drained(0);

    // Output after the failure is parsed on a new thread; the screen before it is gone, the bytes are not.
    const since = broken.offset;
    broken.write(encode("$ pwd\r\n/root\r\n"));
    expect(await broken.readLines(3)).toEqual(["$ pwd", "/root"]);
    expect(new TextDecoder().decode(broken.missedSince(since)!)).toBe("$ pwd\r\n/root\r\n");
    // A mirror that was only asked after the failure starts over too, and its snapshot renders.
    const snapshot = await bystander.snapshot();
    expect(snapshot).toMatchObject({ cols: 80, rows: 24, offset: bystander.offset, fullScreen: false });
    expect(await bystander.readLines(1)).toEqual([]);
  });

  test("a thread that keeps dying is started at most five times a minute; its mirrors then stay failed, without waits that hang", async () => {
    using thread = new ParserThread({ workerUrl: BREAKABLE_WORKER });
    using mirror = new ScreenMirror({ parser: thread, cols: 80, rows: 24, scrollback: 100 });
    const errors = await capturedErrors(async () => {
      for (let start = 1; start <= MAX_WORKER_STARTS_PER_MINUTE; start++) {
        await expect(mirror.readLines(BREAKING_LINE_COUNT)).rejects.toThrow("the screen parser thread failed");
      }
    });
    expect(errors).toHaveLength(MAX_WORKER_STARTS_PER_MINUTE);
    expect(thread.available).toBe(false);
    mirror.write(lines(64 * 1024));
    expect(mirror.backlog).toBe(0);
    await expect(mirror.snapshot()).rejects.toThrow(/^Cannot snapshot screen: the screen parser thread failed/);
    expect(() => new ScreenMirror({ parser: thread, cols: 80, rows: 24, scrollback: 100 })).toThrow(
      `Cannot open a terminal: the screen parser thread failed ${MAX_WORKER_STARTS_PER_MINUTE} times in a minute`,
    );
  });

  test("output that throws in xterm.js leaves the thread, and every other session's history, as they were", async () => {
    using thread = new ParserThread();
    using bystander = new ScreenMirror({ parser: thread, cols: 80, rows: 24, scrollback: 1000 });
    bystander.write(encode(Array.from({ length: 100 }, (_, i) => `build log line ${i}`).join("\r\n")));
    // REP (repeat the last character) with xterm's largest count runs it out of memory, more than five times.
    for (let i = 0; i < MAX_WORKER_STARTS_PER_MINUTE + 1; i++) {
      using attacker = new ScreenMirror({ parser: thread, cols: 80, rows: 24, scrollback: 1000 });
      attacker.write(encode("$ printf 'a\\e[2147483647b'\r\na\x1b[2147483647bskipped with the rest of its chunk"));
      attacker.write(encode("\r\nlater output"));
      // The mirror goes on: the chunk after the throw is parsed as usual.
      expect((await attacker.readLines(10)).at(-1)).toBe("later output");
    }
    expect((await bystander.readLines(200))[0]).toBe("build log line 0");
    expect(thread.available).toBe(true);
  });

  test("ED 1 in the last cell of a screen that never scrolled erases the screen, as xterm.js means it, instead of throwing", async () => {
    using thread = new ParserThread();
    using mirror = new ScreenMirror({ parser: thread, cols: 10, rows: 5, scrollback: 100 });
    // clear; printf '\e[999;999H\e[1J' and, in the same chunk, output after it.
    mirror.write(encode("top\r\nmiddle\x1b[5;10H\x1b[1J\x1b[1;1Hkept"));
    expect(await mirror.readLines(10)).toEqual(["kept"]);
    const { client } = await attach(mirror);
    expect(client.buffer.active.getLine(0)!.translateToString(true)).toBe("kept");
    // DECSED (CSI ? 1 J) takes the same path; erasing above elsewhere is xterm.js's own.
    mirror.write(encode("\x1b[2;1Hsecond\x1b[5;10H\x1b[?1J\x1b[3;1Hthird\x1b[4;3H\x1b[1Jfourth"));
    expect(await mirror.readLines(10)).toEqual(["", "", "", "  fourth"]);
    expect(thread.available).toBe(true);
  });

  test("a disposed mirror resolves settled and drained, reads no lines, and its snapshot says why", async () => {
    const mirror = new ScreenMirror({ parser, cols: 80, rows: 24, scrollback: 100 });
    mirror.write(lines(8 * MIB));
    const pending = [mirror.settled(), mirror.drained(0), mirror.currentLine()];
    mirror.dispose();
    expect(await Promise.all(pending)).toEqual([undefined, undefined, { line: "", before: [] }]);
    await expect(mirror.readLines(1)).rejects.toThrow("Cannot read lines: screen mirror is disposed");
    await expect(mirror.snapshot()).rejects.toThrow("Cannot snapshot screen: screen mirror is disposed");
  });

  test("a stopped thread fails what its mirrors wait for and refuses new mirrors", async () => {
    const thread = new ParserThread();
    using mirror = new ScreenMirror({ parser: thread, cols: 80, rows: 24, scrollback: 100 });
    mirror.write(lines(8 * MIB));
    const snapshot = mirror.snapshot();
    thread.dispose();
    await expect(snapshot).rejects.toThrow("Cannot snapshot screen: the parser thread is stopped");
    expect(() => new ScreenMirror({ parser: thread, cols: 80, rows: 24, scrollback: 100 })).toThrow(
      "Cannot open a terminal: the parser thread is stopped",
    );
  });
});

describe("a mirror whose PTY cannot be paused", () => {
  /**
   * 80-column lines in 64 KiB chunks up to `leave` bytes short of a 16 MiB backlog, written in one
   * go, so the parser thread cannot report progress meanwhile; the highest
   * backlog seen.
   */
  function flood(mirror: ScreenMirror, leave = 0): number {
    let highest = 0;
    const chunk = lines(64 * 1024);
    for (let left = 16 * MIB - leave - mirror.backlog; left > 0; left -= chunk.length) {
      mirror.write(chunk.slice(0, left));
      highest = Math.max(highest, mirror.backlog);
    }
    return highest;
  }

  test("starts its terminal over past a 16 MiB backlog, inside the sequence the stream stopped in, and keeps the bytes for replay", async () => {
    using mirror = new ScreenMirror({ parser, cols: 80, rows: 24, scrollback: 1000 });
    mirror.write(encode("before the flood\r\n"));
    expect(flood(mirror, 3)).toBe(16 * MIB - 3);
    mirror.write(encode("\x1b[3"));
    expect(mirror.backlog).toBe(16 * MIB);
    // Past the limit: the terminal starts over inside the unfinished SGR and parses this chunk.
    mirror.write(encode("1mred\x1b[0m"));
    expect(mirror.backlog).toBe(3 + 9);

    const { snapshot, client } = await attach(mirror, 1000);
    expect(snapshot.offset).toBe(mirror.offset);
    expect(snapshot.fullScreen).toBe(false);
    const row = client.buffer.active.getLine(client.buffer.active.cursorY)!;
    expect(row.translateToString(true)).toBe("red");
    expect(row.getCell(0)!.getFgColor()).toBe(1);
    expect(client.buffer.active.getLine(0)!.translateToString(true)).not.toContain("before the flood");
    expect(mirror.missedSince(mirror.offset - 12)).toEqual(encode("\x1b[31mred\x1b[0m"));
  });

  test("starting over inside a long OSC (an OSC 52 copy or an inline image under a flood) does not print the rest of it as text", async () => {
    using mirror = new ScreenMirror({ parser, cols: 80, rows: 24, scrollback: 1000 });
    mirror.write(encode("$ "));
    // A 16 MiB OSC 52 copy from a program in raw mode (flow control off): its start is long gone from the scanner's tail.
    mirror.write(encode("\x1b]52;c;"));
    const base64 = encode("QUJD".repeat(16 * 1024));
    for (let left = 16 * MIB - mirror.backlog; left > 0; left -= base64.length) mirror.write(base64.slice(0, left));
    expect(mirror.backlog).toBe(16 * MIB);
    // Past the limit: the terminal starts over with the OSC still open; its end and the prompt follow.
    mirror.write(encode("QUJDQUJD\x07done\r\n$ "));

    const { client } = await attach(mirror, 1000);
    const screen = Array.from({ length: 24 }, (_, y) => client.buffer.active.getLine(client.buffer.active.baseY + y)!.translateToString(true)).filter(Boolean);
    // A terminal fed the same stream shows no base64: the OSC is taken in whole.
    expect(screen).toEqual(["done", "$ "]);
  }, 30_000);

  test("starts over on the alternate screen when a full-screen app runs", async () => {
    using mirror = new ScreenMirror({ parser, cols: 80, rows: 24, scrollback: 1000 });
    mirror.write(encode("$ top\r\n\x1b[?1049h"));
    flood(mirror);
    const redraw = encode("\x1b[H\x1b[2Jtop - 12:00:00 up 3 days");
    mirror.write(redraw);
    expect(mirror.backlog).toBe("\x1b[?1049h".length + redraw.length);

    const { snapshot, client } = await attach(mirror, 1000);
    expect(snapshot.fullScreen).toBe(true);
    expect(client.buffer.active.type).toBe("alternate");
    expect(client.buffer.active.getLine(0)!.translateToString(true)).toBe("top - 12:00:00 up 3 days");
    mirror.write(encode("\x1b[Htop - 12:00:01"));
    expect((await mirror.currentLine()).line).toBe("top - 12:00:01 up 3 days");
  });
});

describe("output that would keep the shared parser thread busy", () => {
  /** `promise`'s value, or "no answer" after `ms`. */
  function within<T>(promise: Promise<T>, ms: number): Promise<T | "no answer"> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    return Promise.race([promise, new Promise<"no answer">((resolve) => (timer = setTimeout(resolve, ms, "no answer")))]).finally(() => clearTimeout(timer));
  }

  for (const [name, sequence] of [
    ["scroll up (SU, CSI Ps S)", "\x1b[2147483647S"],
    ["insert lines (IL, CSI Ps L)", "\x1b[2147483647L"],
  ] as const) {
    test(`one session printing ${name} with xterm's largest count does not stall every other session's screen`, async () => {
      const thread = new ParserThread();
      try {
        using bystander = new ScreenMirror({ parser: thread, cols: 80, rows: 24, scrollback: 1000 });
        using attacker = new ScreenMirror({ parser: thread, cols: 80, rows: 24, scrollback: 1000 });
        bystander.write(encode("$ make\r\nbuild ok\r\n"));
        expect(await bystander.readLines(2)).toEqual(["$ make", "build ok"]);
        // 15 bytes any program can print (`printf '\e[2147483647S'`, a crafted file that is cat'ed).
        attacker.write(encode(sequence));
        bystander.write(encode("$ ls\r\n"));
        // Another user's session: its cursor line (input screening), its lines and a reconnect's snapshot.
        expect(await within(bystander.readLines(3), 3000)).toEqual(["$ make", "build ok", "$ ls"]);
        expect(await within(bystander.snapshot().then((s) => s.offset), 3000)).toBe(bystander.offset);
      } finally {
        // The worker is busy for minutes: stop it, not the test process.
        thread.dispose();
      }
    });
  }
});

describe("a closed terminal on the parser thread", () => {
  test("a terminal closed with output still queued (a session destroyed, a mirror started over) is not parsed any more", async () => {
    const parsedAfterClose: number[] = [];
    let closed = false;
    const host = new ParserHost((message: FromParser) => {
      if (closed && message.op === "parsed") for (const [id, bytes] of message.counts) if (id === 1) parsedAfterClose.push(bytes);
    });
    host.handle({ op: "open", id: 1, cols: 80, rows: 24, scrollback: 1000 });
    // 8 MiB queued, as a flooding session's mirror has when it is destroyed (or started over at 16 MiB).
    for (let i = 0; i < 128; i++) host.handle({ op: "write", id: 1, chunk: lines(64 * 1024), state: { clean: true, resets: 0 } });
    host.handle({ op: "close", id: 1 });
    closed = true;
    await Bun.sleep(1500);
    // Nothing of it should be parsed after the close: the thread every session shares has better things to do.
    expect({ bytesParsedAfterClose: parsedAfterClose.at(-1) ?? 0 }).toEqual({ bytesParsedAfterClose: 0 });
  });
});
