import type { IBufferCell } from "@xterm/headless";
import { underlineColourParam, underlineStyleParam } from "./underline.ts";
import { isUnderlinedBySgr } from "./xterm-internals.ts";

/**
 * The attribute reads SGR needs. A buffer cell has them, and so do the
 * attribute records xterm.js keeps internally (the current and the saved
 * attributes).
 */
export type CellAttributes = Pick<
  IBufferCell,
  | "isFgRGB"
  | "isFgPalette"
  | "getFgColor"
  | "isBgRGB"
  | "isBgPalette"
  | "getBgColor"
  | "isInverse"
  | "isBold"
  | "isUnderline"
  | "isOverline"
  | "isBlink"
  | "isInvisible"
  | "isItalic"
  | "isDim"
  | "isStrikethrough"
>;

/**
 * An SGR sequence that sets exactly `attributes`, whatever was in force
 * before: a reset, then colours and flags, and the underline's style and
 * colour (SGR 4:x, 58), which xterm.js keeps beside them. Colours are
 * encoded as addon-serialize encodes them, so a snapshot's parts agree.
 * `plainUnderline` leaves the underline's style and colour out, as the
 * addon writes it.
 *
 * @example
 * ```ts
 * sgr(terminal.buffer.active.getLine(0)!.getCell(0)!); // "\x1b[0;31;1m" for bold red
 * ```
 */
export function sgr(attributes: CellAttributes, { plainUnderline = false }: { plainUnderline?: boolean } = {}): string {
  const params: (number | string)[] = [0, ...colour(attributes, "fg"), ...colour(attributes, "bg")];
  const flags: [boolean | number, number | string][] = [
    [attributes.isInverse(), 7],
    [attributes.isBold(), 1],
    [isUnderlinedBySgr(attributes), plainUnderline ? 4 : underlineStyleParam(attributes)],
    [attributes.isOverline(), 53],
    [attributes.isBlink(), 5],
    [attributes.isInvisible(), 8],
    [attributes.isItalic(), 3],
    [attributes.isDim(), 2],
    [attributes.isStrikethrough(), 9],
  ];
  for (const [on, param] of flags) if (on) params.push(param);
  // Set even without an underline: a later SGR 4 draws in it.
  const underlineColour = plainUnderline ? "" : underlineColourParam(attributes);
  if (underlineColour !== "") params.push(underlineColour);
  return `\x1b[${params.join(";")}m`;
}

function colour(attributes: CellAttributes, layer: "fg" | "bg"): number[] {
  const [rgb, palette, value, base, bright, extended] =
    layer === "fg"
      ? [attributes.isFgRGB(), attributes.isFgPalette(), attributes.getFgColor(), 30, 90, 38]
      : [attributes.isBgRGB(), attributes.isBgPalette(), attributes.getBgColor(), 40, 100, 48];
  if (rgb) return [extended, 2, (value >>> 16) & 0xff, (value >>> 8) & 0xff, value & 0xff];
  if (!palette) return [];
  if (value >= 16) return [extended, 5, value];
  return [(value & 8 ? bright : base) + (value & 7)];
}
