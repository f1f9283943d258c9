import type { IBuffer, Terminal } from "@xterm/headless";
import { charsetInUseIsSaved, charsetSequence, printsAsItself, savedCharsetDesignation } from "./charsets.ts";
import { CLOSE_LINK, type LinkOpener, linkOpener } from "./hyperlinks.ts";
import { protectionSequence } from "./protection.ts";
import { serializeRows } from "./row-serializer.ts";
import type { ScrollbackCache } from "./scrollback-cache.ts";
import { type CellAttributes, sgr } from "./sgr.ts";
import { tabStopSequence } from "./tab-stops.ts";
import { hasUnderlineExtras } from "./underline.ts";
import { bufferInternals, cellLinkId, coreOf } from "./xterm-internals.ts";

/**
 * DECSTBM to rows 1-2 (cursor goes home). While the history is written, every
 * line break after the first then scrolls a row into the receiver's
 * scrollback, which is what the cached history pieces assume, and the rest of
 * the receiver's screen stays blank for the visible screen that follows.
 */
const HISTORY_REGION = "\x1b[1;2r";

/** DECSTBM reset to the whole screen; also moves the cursor home. */
const FULL_REGION = "\x1b[r";

/** DECSET 1049: save the cursor and switch to a cleared alternate screen. */
const ENTER_ALT_SCREEN = "\x1b[?1049h";

/** DECSET 1047: switch to a cleared alternate screen, keeping the saved cursor as it is. */
const SWITCH_TO_ALT_SCREEN = "\x1b[?1047h";

/** SGR 0: default attributes, which each serialized screen starts from. */
const RESET_ATTRIBUTES = "\x1b[0m";

/** DECSC: save the cursor position and attributes (and the character set) in the active buffer. */
const SAVE_CURSOR = "\x1b7";

/** DECRC: restore them. */
const RESTORE_CURSOR = "\x1b8";

/** SCS: G0 back to US ASCII, as in a fresh terminal. */
const DESIGNATE_ASCII = "\x1b(B";

/** CUP with no parameters: the top-left cell, where the screen serialization starts. */
const CURSOR_HOME = "\x1b[H";

/** DECTCEM reset: full-screen apps hide the cursor, and the addon does not carry that. */
const HIDE_CURSOR = "\x1b[?25l";

/**
 * Serializes everything a client needs to show what the mirror shows, written
 * into a fresh terminal of the same size: scrollback (from the cache), the
 * normal screen, the alternate screen when a full-screen app runs, colours
 * and attributes, modes, scroll regions, tab stops, character sets, the
 * current SGR state, the saved cursors, the cursor position (a wrap
 * pending at the right edge included) and its shape, and the mouse encoding.
 *
 * The parts are joined so that each is written in the state its serializer
 * assumes: the history with a two-row scroll region, then a blank screen with
 * the cursor home for each screen. A line wrapped across the boundary between
 * scrollback and screen arrives as two lines; it looks the same.
 *
 * @example
 * ```ts
 * const data = serializeScreen(terminal, cache, scanner.resets);
 * fresh.resize(terminal.cols, terminal.rows);
 * fresh.write(data);
 * ```
 */
export function serializeScreen(terminal: Terminal, history: ScrollbackCache, resets: number): string {
  const { cols, rows } = terminal;
  const normal = terminal.buffer.normal;
  const fullScreen = terminal.buffer.active.type === "alternate";
  const links = linkOpener(terminal);
  let data = "";

  // With one row there is no two-row region; every break already scrolls.
  const firstBreakScrolls = rows < 2;
  const scrollback = history.serialize(resets, { firstBreakScrolls });
  // One blank history row serializes to "": the rows scrolled off decide, not the text.
  if (normal.baseY > 0) {
    data += firstBreakScrolls
      ? `${scrollback}\r\n`
      : `${HISTORY_REGION}${scrollback}\r\n\r\n${FULL_REGION}`;
  }

  data += serializeRows({
    buffer: normal,
    first: normal.baseY,
    count: rows,
    cols,
    screenRows: rows,
    links,
    source: fullScreen ? undefined : terminal,
  });
  if (fullScreen) {
    // The normal screen's saved cursor is what the app's exit (DECRST 1049)
    // restores; when it cannot be read, DECSET 1049 saves at least the
    // position. The modes (origin mode) come with the alternate screen's rows.
    const alternate = terminal.buffer.alternate;
    const saveNormal = saveCursor(terminal, "normal", { restore: RESET_ATTRIBUTES, originMode: false });
    const enter = saveNormal === undefined ? ENTER_ALT_SCREEN : SWITCH_TO_ALT_SCREEN;
    data += setRegion(terminal, "normal") + (saveNormal ?? "") + tabStopSequence(terminal, "normal") + moveCursor(normal, cols) + enter + CURSOR_HOME;
    data += serializeRows({
      buffer: alternate,
      // Not always 0: after a shrink the alternate buffer keeps rows above the screen.
      first: alternate.baseY,
      count: rows,
      cols,
      screenRows: rows,
      links,
      source: terminal,
    });
  }
  // The region last: DECSTBM moves the cursor home, and the modes (origin mode) are set by now.
  const active = fullScreen ? "alt" : "normal";
  const originTop = terminal.modes.originMode ? scrollRegion(terminal, active).top : 0;
  const current = currentAttributes(terminal);
  const saveActive = current ? saveCursor(terminal, active, { restore: sgr(current), originMode: terminal.modes.originMode }) : undefined;
  data += (saveActive ?? "") + tabStopSequence(terminal, active);
  data += setRegion(terminal, active);
  if (current && saveActive !== undefined && charsetInUseIsSaved(terminal, active)) {
    // A DECRC left the saved set in use: the client's DECRC does the same, and the cursor and SGR are set again after
    // it. A cursor waiting to wrap is then placed by printing its row's last character in that set: where the set
    // would change it, the cursor is placed on that character instead, the wrap lost.
    const stable = (char: string) => printsAsItself(terminal, char);
    data += charsetSequence(terminal) + RESTORE_CURSOR + sgr(current) + placeCursor(terminal, terminal.buffer.active, originTop, stable);
  } else {
    // After everything printed: the character sets change how the client prints ASCII.
    data += placeCursor(terminal, terminal.buffer.active, originTop) + charsetSequence(terminal);
  }
  data += mouseEncodingSequence(terminal) + cursorShapeSequence(terminal);
  // Automatic newline (LNM): xterm.js keeps it as convertEol, which addon-serialize does not carry.
  if (terminal.options.convertEol) data += "\x1b[20h";
  if (isCursorHidden(terminal)) data += HIDE_CURSOR;
  data += titleSequence(terminal);
  // Last, once nothing more is printed: text the program prints next belongs to the link it left open. The SGR
  // again first: addon-serialize ended the screen with an SGR 4 that xterm.js reports for the link, not for the
  // text; so also for a link whose data xterm.js dropped with the line it was opened on, which no opener restores.
  // And after every SGR (xterm.js ends DECSCA at SGR 0): what it prints next is protected if it would have been.
  // The same for an underline's style and colour, which the addon's SGR 4 leaves plain.
  const protection = protectionSequence(current);
  const lastCharacter = current ? printedLastAgain(terminal, current, originTop, links) : "";
  if (!current || (cellLinkId(current) === 0 && !hasUnderlineExtras(current))) return data + protection + lastCharacter;
  return `${data}${sgr(current)}${links(current) ?? ""}${protection}${lastCharacter}`;
}

/**
 * The character the program printed last, printed again in its place, when
 * nothing but printing came after it: the parser remembers it until any
 * control or sequence, and REP (CSI b) repeats it and a combining mark joins
 * it. ncurses draws lines as one character and a REP, and decomposed text
 * (macOS file names) sends accents after their letters, so a read can end
 * between the two; everything else a snapshot writes is a sequence, which
 * would make the client forget it. Last of all, for that reason. Printing
 * uses the current attributes, which are the character's own (an SGR would
 * have cleared the memory). In insert mode printing shifts the row right, so
 * the character is first deleted (DCH), which shifts it left by as much: the
 * row ends as it was.
 */
function printedLastAgain(terminal: Terminal, current: CellAttributes, top: number, links: LinkOpener): string {
  const state = coreOf(terminal)?._inputHandler?._parser?.precedingJoinState;
  if (typeof state !== "number" || state === 0) return "";
  // xterm.js keeps the width in bits 1-2 (UnicodeService.extractWidth).
  const width = (state >> 1) & 3;
  const buffer = terminal.buffer.active;
  const x = buffer.cursorX - width;
  const cell = x >= 0 ? buffer.getLine(buffer.baseY + buffer.cursorY)?.getCell(x) : undefined;
  if (!cell || width === 0 || cell.getWidth() !== width || cell.getChars() === "" || !printsAsItself(terminal, cell.getChars())) return "";
  // Only the same character as it stands: nothing else may change on the client. A link whose data xterm.js
  // dropped is not open on the client, so its character would lose it.
  if (sgr(cell) !== sgr(current) || protectionSequence(cell) !== protectionSequence(current)) return "";
  if (cellLinkId(cell) !== cellLinkId(current) || (cellLinkId(current) !== 0 && links(current) === null)) return "";
  const deleteFirst = terminal.modes.insertMode ? `\x1b[${width}P` : "";
  return `\x1b[${buffer.cursorY - top + 1};${x + 1}H${deleteFirst}${cell.getChars()}`;
}

/**
 * CUP to the buffer's cursor, counted from `top` (the region's top row in
 * origin mode); a cursor parked past the last column is shown on it.
 */
function moveCursor(buffer: IBuffer, cols: number, top = 0): string {
  return `\x1b[${buffer.cursorY - top + 1};${Math.min(buffer.cursorX, cols - 1) + 1}H`;
}

/**
 * Puts the client's cursor where the buffer's is. A cursor past the last
 * column (a row just filled, the next character due on the next row) is
 * reproduced by printing the last character again with its own attributes,
 * which leaves xterm.js in that same state; a CUP to the last column would let
 * the next character overwrite it instead. A character `printable` refuses
 * (the set in use would change it) is not printed: the cursor goes on it.
 */
function placeCursor(terminal: Terminal, buffer: IBuffer, top: number, printable: (char: string) => boolean = () => true): string {
  const { cols } = terminal;
  const current = currentAttributes(terminal);
  const line = buffer.getLine(buffer.baseY + buffer.cursorY);
  if (buffer.cursorX < cols || !current || !line) return moveCursor(buffer, cols, top);
  // A wide character ending the row is printed from its first cell.
  const x = line.getCell(cols - 1)?.getWidth() === 0 ? cols - 2 : cols - 1;
  const cell = line.getCell(x);
  if (!cell) return moveCursor(buffer, cols, top);
  const link = linkOpener(terminal)(cell);
  // An empty cell cannot be printed; a space looks the same.
  const char = cell.getChars() || " ";
  if (!printable(char)) return moveCursor(buffer, cols, top);
  // Protected text stays so (DECSCA is not an SGR); the SGR after it ends protection again.
  return `\x1b[${buffer.cursorY - top + 1};${x + 1}H${sgr(cell)}${protectionSequence(cell)}${link ? `${link}${char}${CLOSE_LINK}` : char}${sgr(current)}`;
}

/** The attributes the next character is printed with; xterm.js keeps them only internally. */
function currentAttributes(terminal: Terminal): CellAttributes | undefined {
  const attributes = coreOf(terminal)?._inputHandler?._curAttrData;
  return typeof attributes?.isBold === "function" ? (attributes as CellAttributes) : undefined;
}

/**
 * Sets the client's saved cursor (DECSC, and DECSET 1049 when a full-screen
 * app started) to the buffer's: a later DECRC or DECRST 1049 restores
 * position, attributes and character set from it. Ends with `restore`, the SGR in force
 * before; `originMode` says whether the client is in origin mode. "" when
 * the buffer's is a fresh terminal's, undefined when it cannot be read.
 */
function saveCursor(
  terminal: Terminal,
  buffer: "normal" | "alt",
  { restore, originMode }: { restore: string; originMode: boolean },
): string | undefined {
  const saved = savedCursor(terminal, buffer);
  if (!saved) return undefined;
  // DECSC saves protection (DECSCA) with the attributes: text printed after a DECRC is protected if it was then.
  const attributes = sgr(saved.attributes) + protectionSequence(saved.attributes);
  // DECSC saves the character set in use: the client's G0, invoked, is set to it for a moment.
  const charset = savedCharsetDesignation(terminal, buffer);
  if (saved.x === 0 && saved.y === 0 && attributes === RESET_ATTRIBUTES && charset === "") return "";
  // DECSC saves the absolute position; origin mode would make the CUP relative to the region.
  const [absolute, relative] = originMode ? ["\x1b[?6l", "\x1b[?6h"] : ["", ""];
  const resetCharset = charset === "" ? "" : DESIGNATE_ASCII;
  return `${absolute}\x1b[${saved.y + 1};${saved.x + 1}H${attributes}${charset}${SAVE_CURSOR}${resetCharset}${restore}${relative}`;
}

/**
 * A buffer's saved cursor, on the screen as DECRC would put it; xterm.js
 * keeps it only internally, as a row counted from the top of the scrollback.
 */
function savedCursor(terminal: Terminal, buffer: "normal" | "alt"): { x: number; y: number; attributes: CellAttributes } | undefined {
  const { savedX, savedY, ybase, savedCurAttrData } = bufferInternals(terminal, buffer) ?? {};
  if (typeof savedX !== "number" || typeof savedY !== "number" || typeof ybase !== "number") return undefined;
  if (typeof savedCurAttrData?.isBold !== "function") return undefined;
  return {
    // DECRC clamps to the screen as well.
    x: Math.min(Math.max(savedX, 0), terminal.cols - 1),
    y: Math.min(Math.max(savedY - ybase, 0), terminal.rows - 1),
    attributes: savedCurAttrData as CellAttributes,
  };
}

/**
 * DECSTBM to a buffer's scroll region, or "" for the whole screen. Programs
 * set a region once and scroll inside it for as long as they run (apt's
 * progress line, tmux's panes), so a client without it scrolls what they draw
 * across the whole screen.
 */
function setRegion(terminal: Terminal, buffer: "normal" | "alt"): string {
  const { top, bottom } = scrollRegion(terminal, buffer);
  return top === 0 && bottom === terminal.rows - 1 ? "" : `\x1b[${top + 1};${bottom + 1}r`;
}

/** A buffer's scroll region (0-based rows); xterm.js keeps one per buffer and exposes it only internally. */
function scrollRegion(terminal: Terminal, buffer: "normal" | "alt"): { top: number; bottom: number } {
  const { scrollTop, scrollBottom } = bufferInternals(terminal, buffer) ?? {};
  const top = typeof scrollTop === "number" ? scrollTop : 0;
  const bottom = typeof scrollBottom === "number" ? scrollBottom : terminal.rows - 1;
  return { top, bottom };
}

/**
 * The mouse report encoding a program asked for (DECSET 1006 SGR, 1016 SGR
 * pixels). addon-serialize carries the tracking mode but not the encoding, and
 * ncurses (htop, mc, vim with mouse=a) reads only the one it asked for: after a
 * snapshot without it, every click would reach the program in the old X10 form.
 */
function mouseEncodingSequence(terminal: Terminal): string {
  const encoding = coreOf(terminal)?.coreMouseService?.activeEncoding;
  return encoding === "SGR" ? "\x1b[?1006h" : encoding === "SGR_PIXELS" ? "\x1b[?1016h" : "";
}

/** DECSCUSR parameters by shape, blinking first: 1 blinking block, 2 steady block, 3-4 underline, 5-6 bar. */
const CURSOR_SHAPES: Record<string, [blinking: number, steady: number]> = { block: [1, 2], underline: [3, 4], bar: [5, 6] };

/**
 * The cursor shape a program set with DECSCUSR (vim's bar in insert mode, a
 * shell's underline): without it a reconnected client shows the user's own
 * shape until the program happens to set it again. Nothing when the program
 * never set one, or reset it (DECSCUSR 0), so the client's preference stands.
 */
function cursorShapeSequence(terminal: Terminal): string {
  const modes = coreOf(terminal)?.coreService?.decPrivateModes;
  const shape = typeof modes?.cursorStyle === "string" ? CURSOR_SHAPES[modes.cursorStyle] : undefined;
  if (!shape) return "";
  return `\x1b[${modes?.cursorBlink === false ? shape[1] : shape[0]} q`;
}

/**
 * OSC 2 setting the window title a program set (shells set it at each
 * prompt, vim and ssh when they start): the widget shows it as the tab's
 * name, which a reconnect would otherwise lose until the program sets it
 * again. Nothing when none was set.
 */
function titleSequence(terminal: Terminal): string {
  const title = coreOf(terminal)?._inputHandler?._windowTitle;
  // The parser never stores a control character in a title; a title that has one is not sent at all.
  if (typeof title !== "string" || title === "" || /[\x00-\x1f\x7f-\x9f]/.test(title)) return "";
  return `\x1b]2;${title}\x1b\\`;
}

function isCursorHidden(terminal: Terminal): boolean {
  // xterm.js exposes cursor visibility only internally.
  return coreOf(terminal)?.coreService?.isCursorHidden === true;
}
