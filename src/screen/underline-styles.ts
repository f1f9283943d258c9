import type { IBufferCell, IBufferLine } from "@xterm/headless";
import { withCellAffixes } from "./cell-affixes.ts";
import { protectionSequence } from "./protection.ts";
import { sgr } from "./sgr.ts";
import { BG_HAS_EXTENDED, underlineColourParam, underlineStyleParam } from "./underline.ts";
import { isUnderlinedBySgr } from "./xterm-internals.ts";

/** A plain underline in the default colour: what addon-serialize's SGR 4 leaves, and what every row ends in. */
const PLAIN_UNDERLINE = "4";

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
    if (!isUnderlinedBySgr(cell)) {
      // The addon's SGR ended the underline but not a colour written for it, which a link's underline would be
      // drawn in: the first such cell after a styled run sets its own attributes whole.
      if (lastWritten !== PLAIN_UNDERLINE) {
        before.set(x, sgr(cell) + protectionSequence(cell));
        known = lastWritten = PLAIN_UNDERLINE;
      }
      continue;
    }
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
    const { bg } = cell as { bg?: unknown };
    if (typeof bg === "number" && (bg & BG_HAS_EXTENDED) === 0) continue;
    if (isUnderlinedBySgr(cell) && styleParams(cell) !== PLAIN_UNDERLINE) return true;
  }
  return false;
}

/** The words xterm.js keeps a cell's colours and flags in: when they change, addon-serialize writes an SGR. */
function attributeWords(cell: IBufferCell): string {
  const { fg, bg } = cell as { fg?: unknown; bg?: unknown };
  return `${String(fg)}/${String(bg)}`;
}

