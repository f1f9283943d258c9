/**
 * Matches ANSI escape sequences: CSI (colours, cursor), OSC (titles, links,
 * terminated by BEL or ST), other two-byte ESC sequences, and stray C1 CSI.
 */
const ANSI = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[PX^_][^\x1b]*\x1b\\|\x1b[@-Z\\-_]|\x9b[0-?]*[ -/]*[@-~]/g;

/** Remove ANSI escape sequences (and carriage returns before newlines) from program output. */
export function stripAnsi(text: string): string {
  return text.replace(ANSI, "").replace(/\r\n/g, "\n");
}
