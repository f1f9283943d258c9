import type { IBufferCell } from "@xterm/headless";
import { isUnderlinedBySgr } from "./xterm-internals.ts";

/** xterm.js's flag, in the background word, for attributes kept in the extended record. */
export const BG_HAS_EXTENDED = 0x10000000;

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

function readStyle(attributes: object): number {
  const { bg, extended } = attributes as UnderlineInternals;
  if (typeof bg !== "number" || (bg & BG_HAS_EXTENDED) === 0) return 1;
  const style = extended?.underlineStyle;
  return typeof style === "number" && style > 0 ? style : 1;
}

function readColour(attributes: object): number | undefined {
  const { bg, extended } = attributes as UnderlineInternals;
  // A cell's record is current only while its flag says it has one (a reused cell keeps the last it read). An
  // attribute record's (the current attributes') is its own, and holds an SGR 58 set while no underline is on,
  // with the flag off, for the SGR 4 to come.
  const isCell = typeof (attributes as { getChars?: unknown }).getChars === "function";
  if (typeof bg !== "number" || (isCell && (bg & BG_HAS_EXTENDED) === 0)) return undefined;
  const colour = extended?.underlineColor;
  // SGR 0 clears the mode bits but keeps others: the mode alone says whether a colour is set.
  return typeof colour === "number" && (colour & COLOUR_MODE) !== 0 ? colour : undefined;
}
