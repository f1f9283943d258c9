/**
 * Matches ANSI escape sequences (ECMA-48): CSI (colours, cursor), OSC
 * (titles, links, terminated by BEL or ST), DCS/SOS/PM/APC strings, ESC with
 * intermediates (charset designation `ESC ( B`, which `tput sgr0` prints),
 * every other two-byte ESC sequence (`ESC 7`/`ESC 8`, keypad `ESC =`/`ESC >`,
 * `ESC c`), and stray C1 CSI.
 */
const ANSI = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[PX^_][^\x1b]*\x1b\\|\x1b[ -/]+[0-~]|\x1b[0-~]|\x9b[0-?]*[ -/]*[@-~]/g;

/** Remove ANSI escape sequences (and carriage returns before newlines) from program output. */
export function stripAnsi(text: string): string {
  return text.replace(ANSI, "").replace(/\r\n/g, "\n");
}
