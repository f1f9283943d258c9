import type { IBufferCell, IBufferLine } from "@xterm/headless";
import { withCellAffixes } from "./cell-affixes.ts";

/** DECSCA on and off: protected text survives the selective erases (DECSED, DECSEL). */
const PROTECT = '\x1b[1"q';
const UNPROTECT = '\x1b[0"q';
/** xterm.js's flag for DECSCA in a cell's or attribute record's background word. */
const BG_PROTECTED = 0x20000000;

/** Whether a cell or attribute record is protected (DECSCA 1). */
export function isProtected(attributes: object): boolean {
  const { bg } = attributes as { bg?: unknown };
  return typeof bg === "number" && (bg & BG_PROTECTED) !== 0;
}

/** DECSCA for the attributes a snapshot ends in, so text the program prints next is protected as it would have been. */
export function protectionSequence(attributes: object | undefined): string {
  return attributes && isProtected(attributes) ? PROTECT : "";
}

/**
 * The row with DECSCA written around its protected text, which
 * addon-serialize does not carry: each protected run opens with DECSCA 1 and
 * the next unprotected character, or the row's end, turns it off, so every
 * row (and every cached piece of history) ends unprotected. xterm.js also
 * ends protection at SGR 0, but the addon writes SGR 0 only before a cell of
 * default attributes, which a protected cell never is (the flag is one of
 * them), so inside a run it writes the specific resets instead. The row
 * itself when nothing in it is protected.
 */
export function withProtection(line: IBufferLine, scratch: IBufferCell): IBufferLine {
  const before = new Map<number, string>();
  const after = new Map<number, string>();
  let on = false;
  let last = -1;
  for (let x = 0; x < line.length; x++) {
    const cell = line.getCell(x, scratch);
    if (!cell || cell.getWidth() === 0 || cell.getChars() === "") continue;
    const protect = isProtected(cell);
    if (protect && !on) before.set(x, PROTECT);
    else if (!protect && on) before.set(x, UNPROTECT);
    on = protect;
    last = x;
  }
  if (on) after.set(last, UNPROTECT);
  return withCellAffixes(line, before, after);
}
