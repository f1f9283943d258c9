import type { Terminal } from "@xterm/headless";
import { coreOf } from "./xterm-internals.ts";

/** xterm.js's colour slots past the 256 of the palette: OSC 10, 11 and 12 set them. */
const SPECIAL_OSC: Record<number, number> = { 256: 10, 257: 11, 258: 12 };

/** The slots OSC 4 reaches; an OSC 104 with no index restores exactly these, as xterm.js's theme does. */
const PALETTE_SIZE = 256;

/** xterm.js's colour request (ColorRequestType): 0 a report, 1 a set, 2 a restore. */
interface ColorRequest {
  type?: unknown;
  index?: unknown;
  color?: unknown;
}

type ColorListener = (requests: ColorRequest[]) => void;

/**
 * The colours a program changed with OSC 4 (palette entries, as base16-shell
 * and pywal do at login), OSC 10, 11 and 12 (foreground, background, cursor)
 * and undid with OSC 104 and 110-112. A headless xterm.js keeps no theme: it
 * only announces each change, which a browser's xterm.js applies to its
 * own. This keeps the changes so a reconnected client applies them too,
 * instead of drawing "red" in the theme's red until the program happens to
 * set its palette again.
 *
 * @example
 * ```ts
 * const palette = new PaletteChanges(terminal);
 * snapshot = palette.sequence() + serializeScreen(terminal, history, resets);
 * ```
 */
export class PaletteChanges implements Disposable {
  readonly #colours = new Map<number, string>();
  readonly #subscription: { dispose(): void } | undefined;

  constructor(terminal: Terminal) {
    const handler = coreOf(terminal)?._inputHandler as { onColor?: (listener: ColorListener) => { dispose(): void } } | undefined;
    this.#subscription = typeof handler?.onColor === "function" ? handler.onColor((requests) => this.#apply(requests)) : undefined;
  }

  /** OSC sequences that make a fresh terminal's colours what the program left; "" when it changed none. */
  sequence(): string {
    let data = "";
    for (const [index, rgb] of [...this.#colours].sort(([a], [b]) => a - b)) {
      const special = SPECIAL_OSC[index];
      data += special === undefined ? `\x1b]4;${index};${rgb}\x1b\\` : `\x1b]${special};${rgb}\x1b\\`;
    }
    return data;
  }

  [Symbol.dispose](): void {
    this.#subscription?.dispose();
    this.#colours.clear();
  }

  #apply(requests: ColorRequest[]): void {
    for (const { type, index, color } of requests) {
      if (type === 2 && index === undefined) {
        for (const slot of this.#colours.keys()) if (slot < PALETTE_SIZE) this.#colours.delete(slot);
        continue;
      }
      if (typeof index !== "number" || !Number.isInteger(index) || index < 0 || index > 258) continue;
      if (type === 2) this.#colours.delete(index);
      else if (type === 1 && isRgb(color)) this.#colours.set(index, `rgb:${color.map(hex).join("/")}`);
    }
  }
}

function isRgb(color: unknown): color is [number, number, number] {
  return Array.isArray(color) && color.length === 3 && color.every((part) => Number.isInteger(part) && part >= 0 && part <= 255);
}

function hex(part: number): string {
  return part.toString(16).padStart(2, "0");
}
