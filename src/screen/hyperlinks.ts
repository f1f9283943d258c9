import type { IBufferCell, IBufferLine, Terminal } from "@xterm/headless";
import { withCellAffixes } from "./cell-affixes.ts";
import { cellLinkId, coreOf } from "./xterm-internals.ts";

/** OSC 8 with an empty URI: the text printed after it is not a link. */
export const CLOSE_LINK = "\x1b]8;;\x1b\\";

/** The OSC 8 sequence that opens the link a cell (or xterm.js's current attributes) carries, or null. */
export type LinkOpener = (cell: object) => string | null;

/**
 * Reads the hyperlinks (OSC 8) of `terminal`'s cells. xterm.js keeps a link
 * as an id in the cell's extended attributes and its URI in an internal
 * service; addon-serialize carries neither, so a reconnected client would
 * show `ls --hyperlink`, gcc's and systemd's links as plain text.
 */
export function linkOpener(terminal: Terminal): LinkOpener {
  const service = coreOf(terminal)?._oscLinkService;
  const getLinkData = typeof service?.getLinkData === "function" ? service.getLinkData.bind(service) : undefined;
  return (cell) => {
    const id = cellLinkId(cell);
    if (id === 0 || !getLinkData) return null;
    const data = getLinkData(id) as { uri?: unknown; id?: unknown } | undefined;
    return typeof data?.uri === "string" ? openLink(data.uri, typeof data.id === "string" ? data.id : undefined) : null;
  };
}

/**
 * OSC 8 opening a link to `uri` (with the program's `id`, which joins the
 * pieces of one link). Null for what the parser could not have stored from a
 * well-formed sequence (control characters, a `;` or `:` in the id), so a
 * snapshot never writes a sequence that ends early.
 */
function openLink(uri: string, id: string | undefined): string | null {
  if (uri === "" || hasControl(uri) || (id !== undefined && (hasControl(id) || /[;:]/.test(id)))) return null;
  return `\x1b]8;${id === undefined ? "" : `id=${id}`};${uri}\x1b\\`;
}

function hasControl(text: string): boolean {
  return /[\x00-\x1f\x7f-\x9f]/.test(text);
}

/**
 * The row with its links written around the linked text: the first
 * character of each linked run is preceded by its OSC 8, and the last one is
 * followed by the close, so every row (and every cached piece of history)
 * ends outside any link. Empty cells print nothing and stay out of the runs.
 * The row itself when it has no link.
 */
export function withLinks(line: IBufferLine, opener: LinkOpener, scratch: IBufferCell): IBufferLine {
  const before = new Map<number, string>();
  const after = new Map<number, string>();
  let open: string | null = null;
  let last = -1;
  for (let x = 0; x < line.length; x++) {
    const cell = line.getCell(x, scratch);
    if (!cell || cell.getWidth() === 0 || cell.getChars() === "") continue;
    const link = opener(cell);
    if (link !== open) {
      if (open !== null) after.set(last, CLOSE_LINK);
      if (link !== null) before.set(x, link);
      open = link;
    }
    last = x;
  }
  if (open !== null) after.set(last, CLOSE_LINK);
  return withCellAffixes(line, before, after);
}
