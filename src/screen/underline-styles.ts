import type { IBufferCell, IBufferLine } from "@xterm/headless";
import { withCellAffixes } from "./cell-affixes.ts";
import { protectionSequence } from "./protection.ts";
import { sgr } from "./sgr.ts";
import { isUnderlinedBySgr } from "./xterm-internals.ts";

/** A plain underline in the default colour: what addon-serialize's SGR 4 leaves, and what every row ends in. */
const PLAIN_UNDERLINE = "4";

/** xterm.js's flag, in the background word, for attributes kept in the extended record. */
const BG_HAS_EXTENDED = 0x10000000;

/** The colour mode bits of xterm.js's underline colour: 0 default (the text's colour), then 16 colours, 256 colours, RGB. */
const COLOUR_MODE = 0x3000000;
const MODE_P16 = 0x1000000;
const MODE_P256 = 0x2000000;
const MODE_RGB = 0x3000000;

/** How xterm.js keeps an underline's style and colour in a cell or attribute record. */
interface UnderlineInternals {
  fg?: unknown;
  bg?: unknown;
  extended?: { underlineStyle?: unknown; underlineColor?: unknown };
}

/**
 * The SGR parameter for the underline style in force (SGR 4, or 4:2 double,
 * 4:3 curly, 4:4 dotted, 4:5 dashed), for attributes underlined by SGR.
 * xterm.js keeps the style in the extended record, which its saved cursor
 * does not copy: a style it cannot read, or reads as none while the flag is
 * on, is the plain one.
 */
export function underlineStyleParam(attributes: object): string {
  const style = readStyle(attributes);
  return style > 1 && style <= 5 ? `4:${style}` : "4";
}

/**
 * The SGR parameter for the underline colour (SGR 58 with a palette index or
 * RGB, as nvim and kitty-aware programs set it), or "" for the default (the
 * text's own colour).
 */
export function underlineColourParam(attributes: object): string {
  const colour = readColour(attributes);
  if (colour === undefined) return "";
  const mode = colour & COLOUR_MODE;
  if (mode === MODE_P16 || mode === MODE_P256) return `58:5:${colour & 0xff}`;
  if (mode === MODE_RGB) return `58:2::${(colour >>> 16) & 0xff}:${(colour >>> 8) & 0xff}:${colour & 0xff}`;
  return "";
}

/** Whether the attributes carry an underline style or colour that a plain SGR 4 would lose. */
export function hasUnderlineExtras(attributes: object): boolean {
  return underlineColourParam(attributes) !== "" || (isUnderlinedBySgr(attributes as IBufferCell) && underlineStyleParam(attributes) !== "4");
}

/**
 * The row with its underline styles and colours written before the cells
 * that need them, which addon-serialize does not carry (it writes SGR 4 for
 * every style, and no SGR 58): nvim's curly diagnostics and dotted spelling
 * marks would arrive as plain underlines. Where a run starts, and again
 * after any cell where the addon may have written an SGR of its own (an SGR
 * 0 ends the style), the cell's whole SGR is written; the row ends back in
 * the plain style, so every row (and every cached piece of history) can be
 * joined. Whole SGRs, because only an SGR 0 takes xterm.js's underline
 * colour back to the text's: its SGR 59 stores white. DECSCA follows each,
 * since xterm.js ends protection at SGR 0. The row itself when nothing in it
 * has a style or colour.
 */
export function withUnderlineStyles(line: IBufferLine, scratch: IBufferCell): IBufferLine {
  if (!hasStyledCell(line, scratch)) return line;
  const before = new Map<number, string>();
  const after = new Map<number, string>();
  // What the client has in force: known exactly, or (after an SGR of the addon's) either that or plain.
  let known: string | undefined = PLAIN_UNDERLINE;
  let lastWritten = PLAIN_UNDERLINE;
  let previousWords: string | undefined;
  let last = -1;
  for (let x = 0; x < line.length; x++) {
    const cell = line.getCell(x, scratch);
    if (!cell) continue;
    // Every cell the addon visits, empty ones too, may make it write an SGR.
    const words = attributeWords(cell);
    if (previousWords !== undefined && words !== previousWords) known = undefined;
    previousWords = words;
    if (cell.getWidth() === 0 || cell.getChars() === "") continue;
    last = x;
    if (!isUnderlinedBySgr(cell)) continue;
    const wanted = styleParams(cell);
    if (wanted === known || (known === undefined && wanted === PLAIN_UNDERLINE && lastWritten === PLAIN_UNDERLINE)) continue;
    before.set(x, sgr(cell) + protectionSequence(cell));
    known = lastWritten = wanted;
  }
  // The attributes the addon thinks the last cell left, with a plain underline.
  if (lastWritten !== PLAIN_UNDERLINE && last >= 0) {
    const cell = line.getCell(last, scratch);
    if (cell) after.set(last, sgr(cell, { plainUnderline: true }) + protectionSequence(cell));
  }
  return withCellAffixes(line, before, after);
}

/** The style and colour of an underlined cell. */
function styleParams(cell: object): string {
  const colour = underlineColourParam(cell);
  return colour === "" ? underlineStyleParam(cell) : `${underlineStyleParam(cell)};${colour}`;
}

function hasStyledCell(line: IBufferLine, scratch: IBufferCell): boolean {
  for (let x = 0; x < line.length; x++) {
    const cell = line.getCell(x, scratch);
    if (!cell || cell.getWidth() === 0 || cell.getChars() === "") continue;
    // Most cells have no extended record; only those can have a style or colour.
    const { bg } = cell as UnderlineInternals;
    if (typeof bg === "number" && (bg & BG_HAS_EXTENDED) === 0) continue;
    if (isUnderlinedBySgr(cell) && styleParams(cell) !== PLAIN_UNDERLINE) return true;
  }
  return false;
}

/** The words xterm.js keeps a cell's colours and flags in: when they change, addon-serialize writes an SGR. */
function attributeWords(cell: IBufferCell): string {
  const { fg, bg } = cell as UnderlineInternals;
  return `${String(fg)}/${String(bg)}`;
}

function readStyle(attributes: object): number {
  const { bg, extended } = attributes as UnderlineInternals;
  if (typeof bg !== "number" || (bg & BG_HAS_EXTENDED) === 0) return 1;
  const style = extended?.underlineStyle;
  return typeof style === "number" && style > 0 ? style : 1;
}

function readColour(attributes: object): number | undefined {
  const { bg, extended } = attributes as UnderlineInternals;
  if (typeof bg !== "number" || (bg & BG_HAS_EXTENDED) === 0) return undefined;
  const colour = extended?.underlineColor;
  // SGR 0 clears the mode bits but keeps others: the mode alone says whether a colour is set.
  return typeof colour === "number" && (colour & COLOUR_MODE) !== 0 ? colour : undefined;
}
