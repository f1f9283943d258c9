import { Terminal, type IBuffer, type IBufferCell } from "@xterm/headless";
import {
  NO_REFLOW_OPTIONS,
  ScreenMirror,
  resizeWithoutReflow,
  type ScreenMirrorOptions,
  type ScreenSnapshot,
} from "../../src/screen/index.ts";
import { parser } from "../helpers/parser-thread.ts";

const encoder = new TextEncoder();

/** UTF-8 bytes of `text`, as a PTY would deliver them. */
export function encode(text: string): Uint8Array {
  return encoder.encode(text);
}

/** Concatenate byte arrays. */
export function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, part) => n + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/** Write to an xterm.js terminal and wait until it is parsed. */
export function feed(terminal: Terminal, data: string | Uint8Array): Promise<void> {
  return new Promise((resolve) => terminal.write(data, resolve));
}

/** A fresh no-reflow terminal of the given size. */
export function freshTerminal(cols: number, rows: number, scrollback = 100_000): Terminal {
  return new Terminal({ cols, rows, scrollback, allowProposedApi: true, logLevel: "off", ...NO_REFLOW_OPTIONS });
}

/** What a client does with a snapshot: a fresh terminal of the snapshot's size, fed its data. */
export async function replay(snapshot: ScreenSnapshot, scrollback: number): Promise<Terminal> {
  const client = freshTerminal(snapshot.cols, snapshot.rows, scrollback);
  await feed(client, snapshot.data);
  return client;
}

/**
 * What the server does for a client without usable missed bytes: a snapshot,
 * then the output since the point it was taken at.
 */
export async function attach(mirror: ScreenMirror, scrollback = 100_000): Promise<{ snapshot: ScreenSnapshot; client: Terminal }> {
  const snapshot = await mirror.snapshot();
  const catchUp = mirror.bytesSince(snapshot.offset);
  if (catchUp === null) throw new Error(`No bytes since snapshot offset ${snapshot.offset}`);
  const client = await replay(snapshot, scrollback);
  await feed(client, catchUp);
  return { snapshot, client };
}

/**
 * A mirror and a reference terminal fed the same output. The reference is a
 * plain xterm.js terminal with the same options: what the mirror's snapshot
 * must reproduce in a client.
 */
export class MirrorUnderTest implements Disposable {
  readonly mirror: ScreenMirror;
  readonly reference: Terminal;
  readonly scrollback: number;
  #written = Promise.resolve();

  constructor(options: Omit<ScreenMirrorOptions, "parser">) {
    this.mirror = new ScreenMirror({ ...options, parser });
    this.reference = freshTerminal(options.cols, options.rows, options.scrollback);
    this.scrollback = options.scrollback;
  }

  /** Feed the same output to mirror and reference. */
  write(data: string | Uint8Array): void {
    const bytes = typeof data === "string" ? encode(data) : data;
    this.mirror.write(bytes);
    this.#written = feed(this.reference, bytes);
  }

  /** Resize both, in order with the output written before. */
  async resize(cols: number, rows: number): Promise<void> {
    this.mirror.resize(cols, rows);
    await this.#written;
    resizeWithoutReflow(this.reference, cols, rows);
  }

  /** Wait until both have parsed everything. */
  async settled(): Promise<void> {
    await this.#written;
    await this.mirror.settled();
  }

  [Symbol.dispose](): void {
    this.mirror.dispose();
    this.reference.dispose();
  }
}

/** Everything a client shows, in a form `toEqual` can compare with the reference. */
export interface ScreenState {
  activeBuffer: "normal" | "alternate";
  cursor: { x: number; y: number };
  normal: string[];
  alternate: string[];
  modes: Terminal["modes"];
  /** The cursor shape a program set with DECSCUSR (vim's bar in insert mode); undefined for the user's own. */
  cursorShape: { style: unknown; blink: unknown };
}

/**
 * The state of `terminal` as comparable text, judged by what a snapshot of
 * `reference` can carry (by default the terminal itself): where the
 * reference has a wrap flag or cell a client cannot be given, neither side's
 * is compared (see `Leniency`).
 */
export function screenState(terminal: Terminal, reference: Terminal = terminal): ScreenState {
  const active = terminal.buffer.active;
  const cols = terminal.cols;
  const { normal, alternate } = terminal.buffer;
  const judged = reference.buffer;
  return {
    activeBuffer: active.type,
    cursor: { x: Math.min(active.cursorX, cols - 1), y: active.cursorY },
    normal: describeRows(normal, 0, normal.length, cols, leniency(judged.normal, 0, cols, judged.normal.baseY), linkOf(terminal)),
    // Only the visible rows: after a shrink xterm keeps alternate rows above the screen.
    alternate:
      active.type === "alternate"
        ? describeRows(alternate, alternate.baseY, terminal.rows, cols, leniency(judged.alternate, judged.alternate.baseY, cols, judged.alternate.baseY), linkOf(terminal))
        : [],
    modes: { ...terminal.modes },
    cursorShape: cursorShapeOf(terminal),
  };
}

/** xterm.js keeps the DECSCUSR shape among its private modes, which its API does not expose. */
function cursorShapeOf(terminal: Terminal): ScreenState["cursorShape"] {
  const modes = (terminal as unknown as { _core: { coreService: { decPrivateModes: { cursorStyle?: unknown; cursorBlink?: unknown } } } })._core.coreService.decPrivateModes;
  return { style: modes.cursorStyle, blink: modes.cursorBlink };
}

/** Rows (counted from the first row described) whose wrap flag, or last cell, a snapshot cannot carry. */
interface Leniency {
  looseWrap: Set<number>;
  looseLastCell: Set<number>;
}

/**
 * Row 0 may continue a line already trimmed off the top; the first screen row
 * follows the scrollback after a line break; a continuation that starts
 * empty or follows a row not full to the edge is sent unwrapped (see
 * row-serializer.ts). A wide character straddling the right edge after a
 * shrink is clipped, and the orphaned right half of one that was overprinted
 * is sent as a blank, so the last cell is not compared either.
 */
function leniency(buffer: IBuffer, from: number, cols: number, boundaryRow: number): Leniency {
  const looseWrap = new Set([0, boundaryRow - from]);
  const looseLastCell = new Set<number>();
  const cell = buffer.getNullCell();
  for (let y = from; y < buffer.length; y++) {
    const line = buffer.getLine(y)!;
    const row = y - from;
    if (line.getCell(cols - 1, cell)?.getWidth() === 2) {
      looseLastCell.add(row);
      looseWrap.add(row + 1);
    }
    // The right half of a wide character whose left half was overprinted (after a shrink, bared by a widen) is sent as a blank.
    if (line.getCell(cols - 1, cell)?.getWidth() === 0 && line.getCell(cols - 2, cell)?.getWidth() !== 2) {
      looseLastCell.add(row);
      looseWrap.add(row + 1);
    }
    if (line.getCell(0, cell)!.getChars() === "") looseWrap.add(row);
    if (line.getCell(cols - 1, cell)!.getChars() === "" && cell.getWidth() === 1) {
      const movedWide = line.getCell(cols - 2, cell)!.getWidth() === 0 && buffer.getLine(y + 1)?.getCell(0)?.getWidth() === 2;
      if (!movedWide) looseWrap.add(row + 1);
    }
  }
  return { looseWrap, looseLastCell };
}

/** `count` rows from `from` on, each as "text  [attribute runs]", prefixed with "↩" when it continues the row before. */
/**
 * The hyperlink (OSC 8) a cell carries, as "id;uri", or "". xterm.js keeps
 * the link's id in the cell's extended attributes and its URI in an internal
 * service; the ids themselves differ between terminals.
 */
function linkOf(terminal: Terminal): (cell: IBufferCell) => string {
  const service = (terminal as unknown as { _core: { _oscLinkService: { getLinkData(id: number): { id?: string; uri: string } | undefined } } })._core._oscLinkService;
  return (cell) => {
    const internals = cell as unknown as { hasExtendedAttrs(): number; extended: { urlId: number } };
    if (!internals.hasExtendedAttrs() || internals.extended.urlId === 0) return "";
    const data = service.getLinkData(internals.extended.urlId);
    return data ? `${data.id ?? ""};${data.uri}` : "";
  };
}

function describeRows(buffer: IBuffer, from: number, count: number, cols: number, leniency: Leniency, link: (cell: IBufferCell) => string): string[] {
  const rows: string[] = [];
  const cell = buffer.getNullCell();
  // After some resizes xterm.js holds fewer alternate rows than the screen
  // shows; those read as blank rows.
  const blank = `${"·".repeat(cols)}  []`;
  for (let y = from; y < from + count; y++) {
    const row = y - from;
    // Past its length xterm.js's circular line list hands back other rows.
    const line = y < buffer.length ? buffer.getLine(y) : undefined;
    if (!line) {
      rows.push(blank);
      continue;
    }
    let text = "";
    const runs: string[] = [];
    let runStart = 0;
    let runAttrs = "";
    const links: string[] = [];
    const width = leniency.looseLastCell.has(row) ? cols - 1 : cols;
    for (let x = 0; x < width; x++) {
      line.getCell(x, cell);
      text += cell.getWidth() === 0 ? "" : cell.getChars() || "·";
      // Only printed characters can be links.
      if (cell.getChars() !== "" && link(cell) !== "") links.push(`${x}:${link(cell)}`);
      // addon-serialize carries only the background of an empty cell (a
      // wide character's filler keeps the flags it was written with).
      const attrs = cell.getChars() === "" ? background(cell) : attributes(cell);
      if (attrs !== runAttrs) {
        if (runAttrs) runs.push(`${runStart}-${x - 1}:${runAttrs}`);
        runStart = x;
        runAttrs = attrs;
      }
    }
    if (runAttrs) runs.push(`${runStart}-${width - 1}:${runAttrs}`);
    const wrap = !leniency.looseWrap.has(row) && line.isWrapped ? "↩" : "";
    rows.push(`${wrap}${text}  [${runs.filter((run) => !run.endsWith(":plain")).join(" ")}]${links.length > 0 ? `  links ${links.join(" ")}` : ""}`);
  }
  return rows;
}

function background(cell: IBufferCell): string {
  return cell.isBgDefault() ? "plain" : `bg${cell.isBgRGB() ? "#" : ""}${cell.getBgColor().toString(16)}`;
}

function attributes(cell: IBufferCell): string {
  const flags = [
    cell.isBold() && "bold",
    cell.isDim() && "dim",
    cell.isItalic() && "italic",
    cell.isUnderline() && "underline",
    cell.isBlink() && "blink",
    cell.isInverse() && "inverse",
    cell.isInvisible() && "invisible",
    cell.isStrikethrough() && "strike",
    cell.isOverline() && "overline",
  ].filter(Boolean);
  const fg = cell.isFgDefault() ? "" : `fg${cell.isFgRGB() ? "#" : ""}${cell.getFgColor().toString(16)}`;
  const bg = cell.isBgDefault() ? "" : `bg${cell.isBgRGB() ? "#" : ""}${cell.getBgColor().toString(16)}`;
  const width = cell.getWidth() === 2 ? "wide" : "";
  const all = [fg, bg, ...flags, width].filter(Boolean).join(",");
  return all || "plain";
}

/**
 * Replay a snapshot into a fresh client and expect it to show exactly what
 * the reference shows; then type one more character into both, which also
 * checks the cursor position and the SGR state left active.
 */
export async function expectSnapshotReproduces(
  subject: MirrorUnderTest,
  expectFn: (actual: unknown) => { toEqual(expected: unknown): void },
): Promise<{ snapshot: ScreenSnapshot; client: Terminal }> {
  const { snapshot, client } = await attach(subject.mirror, subject.scrollback);
  await subject.settled();
  const reference = subject.reference;
  expectFn(screenState(client, reference)).toEqual(screenState(reference));
  subject.write("Z");
  await Promise.all([feed(client, "Z"), subject.settled()]);
  expectFn(screenState(client, reference)).toEqual(screenState(reference));
  return { snapshot, client };
}

/**
 * Write `after` to the mirror (and its reference) and to a client alike, and
 * expect the client to show what the reference shows: state a snapshot must
 * carry often shows only in what later output does. `name` labels a case.
 */
export async function expectSameAfter(
  subject: MirrorUnderTest,
  client: Terminal,
  after: string,
  expectFn: (actual: unknown) => { toEqual(expected: unknown): void },
  name = "",
): Promise<void> {
  subject.write(after);
  await Promise.all([feed(client, after), subject.settled()]);
  expectFn({ name, ...screenState(client, subject.reference) }).toEqual({ name, ...screenState(subject.reference) });
}

/**
 * The usual snapshot case: a fresh mirror of `options` is given `before`, a
 * client attaches by snapshot, then both are given `after` and must show the
 * same (see `expectSameAfter`).
 */
export async function expectSameAcrossSnapshot(
  options: ConstructorParameters<typeof MirrorUnderTest>[0],
  before: string,
  after: string,
  expectFn: (actual: unknown) => { toEqual(expected: unknown): void },
  name = "",
): Promise<void> {
  using subject = new MirrorUnderTest(options);
  subject.write(before);
  await subject.settled();
  const { client } = await attach(subject.mirror, subject.scrollback);
  await expectSameAfter(subject, client, after, expectFn, name);
}

/** Deterministic pseudo-random numbers in [0, 1) (tests must not use Math.random). */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}
