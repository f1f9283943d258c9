import { describe, expect, test } from "bun:test";
import { ParserThread, ScreenMirror, type ParsedTerminal } from "../../src/screen/index.ts";
import { attach, encode, replay, screenState } from "./mirror-fixture.ts";

/** A parser thread that counts the snapshots its terminals are asked for: the work every session shares. */
class CountingParserThread extends ParserThread {
  snapshotsTaken = 0;

  override open(...args: Parameters<ParserThread["open"]>): ParsedTerminal {
    const terminal = super.open(...args);
    const ask: ParsedTerminal["ask"] = (question) => {
      if (question.kind === "snapshot") this.snapshotsTaken++;
      return terminal.ask(question);
    };
    return { ...terminal, ask };
  }
}

function mirrorOn(parser: ParserThread): ScreenMirror {
  const mirror = new ScreenMirror({ cols: 40, rows: 6, scrollback: 500, parser });
  for (let i = 0; i < 50; i++) mirror.write(encode(`line ${i} \x1b[3${i % 8}mcoloured\x1b[0m\r\n`));
  return mirror;
}

describe("snapshots are shared between the views that ask at once", () => {
  test("sixteen views attaching together cost the parser thread one snapshot, and each shows the screen", async () => {
    using parser = new CountingParserThread();
    using mirror = mirrorOn(parser);
    const attached = await Promise.all(Array.from({ length: 16 }, () => attach(mirror, 500)));
    expect(parser.snapshotsTaken).toBe(1);
    const [first] = attached;
    for (const { client } of attached) expect(screenState(client)).toEqual(screenState(first!.client));
    expect(screenState(first!.client).normal.join("\n")).toContain("line 49 coloured");
  });

  test("a view attaching while a snapshot is taken, after more output, gets that snapshot and the output after it", async () => {
    using parser = new CountingParserThread();
    using mirror = mirrorOn(parser);
    const early = mirror.snapshot();
    mirror.write(encode("later output\r\n"));
    const { snapshot, client } = await attach(mirror, 500);
    expect(snapshot).toBe(await early);
    expect(parser.snapshotsTaken).toBe(1);
    expect(screenState(client).normal.join("\n")).toContain("later output");
  });

  test("attaching again while nothing changed reuses the snapshot; output or a resize since takes a new one", async () => {
    using parser = new CountingParserThread();
    using mirror = mirrorOn(parser);
    const first = await mirror.snapshot();
    expect(await mirror.snapshot()).toBe(first);
    expect(parser.snapshotsTaken).toBe(1);

    mirror.write(encode("more\r\n"));
    const afterOutput = await mirror.snapshot();
    expect(parser.snapshotsTaken).toBe(2);
    expect(screenState(await replay(afterOutput, 500)).normal.join("\n")).toContain("more");

    mirror.resize(30, 6);
    const afterResize = await mirror.snapshot();
    expect(parser.snapshotsTaken).toBe(3);
    expect({ cols: afterResize.cols, rows: afterResize.rows }).toEqual({ cols: 30, rows: 6 });
  });

  test("a snapshot being taken when the mirror is resized is taken again at the new size, for everyone waiting on it", async () => {
    using parser = new CountingParserThread();
    using mirror = mirrorOn(parser);
    const waiting = [mirror.snapshot(), mirror.snapshot()];
    mirror.resize(20, 4);
    const late = mirror.snapshot();
    for (const snapshot of await Promise.all([...waiting, late])) expect({ cols: snapshot.cols, rows: snapshot.rows }).toEqual({ cols: 20, rows: 4 });
  });
});
