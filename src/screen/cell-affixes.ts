import type { IBufferCell, IBufferLine } from "@xterm/headless";

/**
 * The row with text written before and after some of its cells' characters
 * (`before` and `after` keyed by column): how the serializer's row wrappers
 * carry what addon-serialize does not (OSC 8 links, DECSCA), as part of the
 * characters the addon prints. The row itself when there is nothing to add.
 */
export function withCellAffixes(line: IBufferLine, before: ReadonlyMap<number, string>, after: ReadonlyMap<number, string>): IBufferLine {
  if (before.size === 0 && after.size === 0) return line;
  return {
    isWrapped: line.isWrapped,
    length: line.length,
    getCell: (x, cell) => {
      const found = line.getCell(x, cell);
      const [prefix, suffix] = [before.get(x) ?? "", after.get(x) ?? ""];
      if (!found || (prefix === "" && suffix === "")) return found;
      // The addon reads everything else (width, colours) from the cell as it is.
      const chars = `${prefix}${found.getChars()}${suffix}`;
      return Object.assign(Object.create(found) as IBufferCell, { getChars: () => chars });
    },
    translateToString: (trimRight, start, end) => line.translateToString(trimRight, start, end),
  };
}
